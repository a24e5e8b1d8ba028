package validation

import (
	"encoding/json"
	"hash/maphash"
	"testing"
	"unsafe"
)

// TestCacheTextKeyCollision: two texts whose 64-bit keys are the same (made
// here by filing one text under the other's key) are told apart by their
// bytes: the second gets its own schema, not the first's.
func TestCacheTextKeyCollision(t *testing.T) {
	c := NewCache()
	a := []byte(`{"type":"object","required":["a"]}`)
	b := []byte(`{"type":"object","required":["b"]}`)
	sa, err := c.Get(a)
	if err != nil {
		t.Fatal(err)
	}
	ea, _ := c.byText.Load(maphash.Bytes(c.seed, a))
	c.byText.m.Store(maphash.Bytes(c.seed, b), ea) // b's key now holds a's text
	sb, err := c.Get(b)
	if err != nil {
		t.Fatal(err)
	}
	if sb == sa || sb.String() != string(b) {
		t.Errorf("Get(%s) = %s, the schema of %s filed under its key", b, sb, a)
	}
}

// TestCacheKeepsNoCallersBuffer: the schema text of a request's tool is a
// slice of the request's body; the cache keeps its own copy (or its
// compacted bytes), never a slice of the caller's buffer, which would keep
// a whole body (up to megabytes) alive per schema, and change under it if
// the caller reuses the buffer.
func TestCacheKeepsNoCallersBuffer(t *testing.T) {
	for _, text := range []string{`{"type":"object","required":["a"]}`, `{ "type": "object", "required": [ "a" ] }`} {
		c := NewCache()
		body := make([]byte, 1<<16)
		at := copy(body, `{"tools":[{"parameters":`)
		n := copy(body[at:], text)
		s, err := c.Get(json.RawMessage(body[at : at+n]))
		if err != nil {
			t.Fatal(err)
		}
		e, ok := c.byText.Load(maphash.Bytes(c.seed, []byte(text)))
		if !ok {
			t.Fatalf("Get(%s): text not remembered", text)
		}
		inside := func(b []byte) bool {
			start := uintptr(unsafe.Pointer(unsafe.SliceData(body)))
			p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
			return p >= start && p < start+uintptr(len(body))
		}
		if te := e.(*textEntry); inside(te.text) || inside(te.entry.raw) || inside(s.raw) {
			t.Errorf("Get(%s) keeps a slice of the caller's body", text)
		}
	}
}
