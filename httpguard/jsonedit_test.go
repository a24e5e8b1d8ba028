package httpguard

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestObjectMembers(t *testing.T) {
	b := []byte(` { "a" : 1 , "b\u0063":{"x":[1,"]}"]} ,"d":"\"}" } `)
	r, err := root(b)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := objectMembers(b, r)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"a": `1`, "bc": `{"x":[1,"]}"]}`, "d": `"\"}"`}
	if len(ms) != 3 {
		t.Fatalf("members = %+v", ms)
	}
	for _, m := range ms {
		if string(raw(b, m.v)) != want[m.key] {
			t.Errorf("%s = %s, want %s", m.key, raw(b, m.v), want[m.key])
		}
	}
	if _, err := objectMembers([]byte(`{"a":1,"a":2}`), span{0, 13}); !errors.Is(err, errJSON) {
		t.Errorf("duplicate key: %v, want errJSON", err)
	}
	// A key spelled with an escape is the same key.
	if _, err := parseBodyMembers(`{"a":1,"\u0061":2}`); !errors.Is(err, errJSON) {
		t.Errorf("escaped duplicate key: %v, want errJSON", err)
	}
}

func parseBodyMembers(s string) ([]member, error) {
	b := []byte(s)
	r, err := parseBody(b)
	if err != nil {
		return nil, err
	}
	return objectMembers(b, r)
}

func TestEdits(t *testing.T) {
	b := []byte(`{"list": [1, 2] ,"obj":{ },"empty":[ ],"s":"x"}`)
	r, _ := root(b)
	list, _, _ := field(b, r, "list")
	obj, _, _ := field(b, r, "obj")
	empty, _, _ := field(b, r, "empty")
	e1, err := appendElems(b, list, []byte(`3`), []byte(`{"k":4}`))
	if err != nil {
		t.Fatal(err)
	}
	e2, _ := setMember(b, obj, "n", []byte(`null`))
	e3, _ := appendElems(b, empty, []byte(`"z"`))
	e4, _ := setMember(b, r, "s", []byte(`"y"`))
	got := apply(b, e4, e1, e2, e3)
	want := `{"list": [1, 2,3,{"k":4}] ,"obj":{"n":null },"empty":["z" ],"s":"y"}`
	if string(got) != want {
		t.Errorf("apply = %s, want %s", got, want)
	}
	d, err := dropMembers(b, r, func(m member) bool { return m.key == "obj" || m.key == "s" })
	if err != nil || string(d) != `{"list": [1, 2],"empty":[ ]}` {
		t.Errorf("dropMembers = %s, %v", d, err)
	}
}

// The scanner never panics and agrees with encoding/json on what it
// accepts as an object; field reads each member, or refuses those whose
// key another's folds to.
func FuzzObjectMembers(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":[1,{"b":"}"}]}`, `{"a":1,"a":2}`, `{"\u0061":"\\"}`, `[1]`, `{"a":}`, `{"a"`, `"x`, "{\"a\xf3\":0,\"a\xba\":0}",
		`{"a":01}`, `{"a":1.}`, `{"a":-}`, "{\"a\":\"\x01\"}", `{"a":"\x"}`, `{"a":[1,]}`, `{"a":tru}`, `{"a":1} x`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b := []byte(s)
		r, err := parseBody(b)
		if err != nil {
			return
		}
		ms, err := objectMembers(b, r)
		var m map[string]json.RawMessage
		if json.Unmarshal(b, &m) != nil {
			t.Fatalf("parseBody accepted %q, encoding/json did not", s)
		}
		if err == nil && len(ms) != len(m) {
			t.Fatalf("%q: %d members, encoding/json %d", s, len(ms), len(m))
		}
		for _, mm := range ms {
			if !json.Valid(raw(b, mm.v)) {
				t.Fatalf("%q: member %q value %q is not JSON", s, mm.key, raw(b, mm.v))
			}
			// field reads in place what objectMembers lists, unless
			// another member's key folds to the same (a client may read
			// either): then it refuses the object.
			collides := false
			for _, other := range ms {
				collides = collides || (other.k != mm.k && jsonFolds(other.key, mm.key))
			}
			v, ok, err := field(b, r, mm.key)
			switch {
			case collides:
				if !isUnguardable(err) {
					t.Fatalf("%q: field(%q) = %v, %v, %v; want unguardable, another key folds to it", s, mm.key, v, ok, err)
				}
			case err != nil || !ok || v != mm.v:
				t.Fatalf("%q: field(%q) = %v, %v, %v; objectMembers has %v", s, mm.key, v, ok, err, mm.v)
			}
		}
		if err == nil {
			if _, ok, ferr := field(b, r, "\x00absent"); ok || ferr != nil {
				t.Fatalf("%q: field of an absent key = %v, %v", s, ok, ferr)
			}
		}
	})
}

// field finds a key however its JSON spells it (escapes) and refuses the
// key it reads twice, spelled alike or not.
func TestField(t *testing.T) {
	b := []byte(` { "a" : 1 , "b\u0063":{"x":[1,"]}"]} ,"d":"\"}" } `)
	r, _ := root(b)
	for key, want := range map[string]string{"a": `1`, "bc": `{"x":[1,"]}"]}`, "d": `"\"}"`} {
		if v, ok, err := field(b, r, key); err != nil || !ok || string(raw(b, v)) != want {
			t.Errorf("field(%q) = %s, %v, %v; want %s", key, raw(b, v), ok, err, want)
		}
	}
	if _, ok, err := field(b, r, "x"); ok || err != nil {
		t.Errorf("field of an absent key = %v, %v", ok, err)
	}
	for _, s := range []string{`{"a":1,"a":2}`, `{"a":1,"\u0061":2}`, `{"\u0061":1,"b":0,"a":2}`} {
		b := []byte(s)
		r, _ := root(b)
		if _, _, err := field(b, r, "a"); !errors.Is(err, errDuplicate) || !isUnguardable(err) {
			t.Errorf("field(%s, a) = %v, want an unguardable duplicate key", s, err)
		}
	}
	if _, _, err := field([]byte(`[1]`), span{0, 3}, "a"); !errors.Is(err, errJSON) {
		t.Errorf("field of an array = %v, want errJSON", err)
	}
}

// field reads a response's key as every client reads it or not at all: the
// key spelled exactly, once, is read; the key spelled only in another case
// (which encoding/json reads and openai-go does not), or twice in any
// spelling (where each client reads the last it matches), is unguardable,
// with encoding/json's case folding, of every release: the Kelvin sign is
// a K, the long s an S, and in earlier releases İ and ı were an I. Keys that
// only look alike, and other keys, are not the key. requestField reads a
// request's keys exactly, as providers do.
func TestFieldKeys(t *testing.T) {
	for _, c := range []struct {
		doc  string
		want string // the value read; "" when absent
		why  error  // the unguardable error's details, nil when read
	}{
		{`{"tool_calls":1}`, `1`, nil},
		{`{"tool_calls":1,"toolcalls":2,"tool_call":3,"Tool_Calls_":4,"x":5}`, `1`, nil},
		{`{"\u0074ool_calls":1}`, `1`, nil},
		{`{"other":1}`, ``, nil},
		{`{"Tool_Calls":1}`, ``, errKeyCase},
		{`{"TOOL_CALLS":1}`, ``, errKeyCase},
		{`{"\u0054ool_calls":1}`, ``, errKeyCase},
		{`{"tool_calls":1,"tool_calls":2}`, ``, errDuplicate},
		{`{"tool_calls":1,"Tool_Calls":2}`, ``, errDuplicate},
		{`{"Tool_Calls":1,"tool_calls":2}`, ``, errDuplicate},
		{`{"TOOL_calls":1,"tool_CALLS":2}`, ``, errDuplicate},
		{`{"\u212aind":1}`, ``, errKeyCase},   // Kelvin sign
		{"{\"\u212aind\":1}", ``, errKeyCase}, // Kelvin sign, unescaped
		{`{"kind":1,"\u212aind":2}`, ``, errDuplicate},
		{`{"\u017ftatus":1}`, ``, errKeyCase}, // long s
		{`{"\u0130d":1}`, ``, errKeyCase},     // İ, as earlier releases of Go fold it
		{`{"\u0131d":1}`, ``, errKeyCase},     // ı, likewise
		{`{"\u00e9d":1}`, ``, nil},            // é folds to no letter of "id"
	} {
		key := "tool_calls"
		switch {
		case strings.Contains(c.doc, "ind"):
			key = "kind"
		case strings.Contains(c.doc, "tatus"):
			key = "status"
		case strings.Contains(c.doc, `d"`):
			key = "id"
		}
		b := []byte(c.doc)
		r, err := parseBody(b)
		if err != nil {
			t.Fatalf("%s: %v", c.doc, err)
		}
		v, ok, err := field(b, r, key)
		switch {
		case c.why != nil:
			if !errors.Is(err, c.why) || !isUnguardable(err) {
				t.Errorf("field(%s, %q) = %v, want unguardable %v", c.doc, key, err, c.why)
			}
		case err != nil || ok != (c.want != "") || (ok && string(raw(b, v)) != c.want):
			t.Errorf("field(%s, %q) = %s, %v, %v; want %s", c.doc, key, raw(b, v), ok, err, c.want)
		}
	}
	b := []byte(`{"Messages":1,"messages":2}`)
	r, _ := root(b)
	if v, ok, err := requestField(b, r, "messages"); err != nil || !ok || string(raw(b, v)) != "2" {
		t.Errorf("requestField(%s, messages) = %s, %v, %v; want 2, as a provider reads it", b, raw(b, v), ok, err)
	}
	if _, ok, err := requestField(b, r, "MESSAGES"); ok || err != nil {
		t.Errorf("requestField(%s, MESSAGES) = %v, %v; want absent", b, ok, err)
	}
}

// setMember edits the member every client reads, and refuses an object
// whose key is twice or in another case rather than edit one member while
// a client reads another; setRequestMember matches exactly.
func TestSetMemberKeys(t *testing.T) {
	for _, c := range []struct{ doc, want string }{
		{`{"input":{},"x":1}`, `{"input":{"a":1},"x":1}`},
		{`{"x":1}`, `{"x":1,"input":{"a":1}}`},
		{`{"Input":{}}`, ``},
		{`{"input":{},"INPUT":{"b":2}}`, ``},
	} {
		b := []byte(c.doc)
		r, _ := root(b)
		e, err := setMember(b, r, "input", []byte(`{"a":1}`))
		if c.want == "" {
			if !isUnguardable(err) {
				t.Errorf("setMember(%s) = %v, want unguardable", c.doc, err)
			}
			continue
		}
		if got := apply(b, e); err != nil || string(got) != c.want {
			t.Errorf("setMember(%s) = %s, %v; want %s", c.doc, got, err, c.want)
		}
	}
	b := []byte(`{"Input":"x"}`)
	r, _ := root(b)
	if e, err := setRequestMember(b, r, "input", []byte(`[]`)); err != nil || string(apply(b, e)) != `{"Input":"x","input":[]}` {
		t.Errorf("setRequestMember(%s) = %s, %v", b, apply(b, e), err)
	}
}

// str reads a string as encoding/json does, whether it takes the plain
// path (no escape, no control character, valid UTF-8) or encoding/json's:
// the same text, and an error exactly where encoding/json refuses it.
func FuzzStr(f *testing.F) {
	for _, s := range []string{`""`, `"plain"`, `"é ü 日本"`, `"a\"b"`, `"\u0061\n"`, "\"a\xf3b\"", "\"\xed\xa0\x80\"",
		"\"tab\there\"", "\"\x7f\"", `"a"b"`, `"\"`, `"`, `x`, `"\ud83d"`,
		`"\ud83d\ude00"`, `"\ud83d\u0041"`, `"\ud83dx"`, `"\ude00\ud83d"`, `"\u00zz"`, `"\u12"`, `"\'"`, `"\/\b\f\r\t"`, "\"\\n\xff\xfe\""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b := []byte(s)
		if len(b) == 0 || b[0] != '"' {
			return
		}
		end, err := stringEnd(b, 0)
		if err != nil {
			return
		}
		got, gerr := str(b, span{0, end})
		var want string
		werr := json.Unmarshal(b[:end], &want)
		if (gerr != nil) != (werr != nil) || got != want {
			t.Fatalf("str(%q) = %q, %v; encoding/json %q, %v", b[:end], got, gerr, want, werr)
		}
	})
}
