package httpguard

import (
	"encoding/json"
	"errors"
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
// accepts as an object.
func FuzzObjectMembers(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":[1,{"b":"}"}]}`, `{"a":1,"a":2}`, `{"\u0061":"\\"}`, `[1]`, `{"a":}`, `{"a"`, `"x`} {
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
			// field reads in place what objectMembers lists.
			if v, ok, err := field(b, r, mm.key); err != nil || !ok || v != mm.v {
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

// field finds a key however it is spelled and refuses the key it reads
// twice, spelled alike or not, as objectMembers does.
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
		if _, _, err := field(b, r, "a"); !errors.Is(err, errJSON) {
			t.Errorf("field(%s, a) = %v, want errJSON (duplicate key)", s, err)
		}
	}
	if _, _, err := field([]byte(`[1]`), span{0, 3}, "a"); !errors.Is(err, errJSON) {
		t.Errorf("field of an array = %v, want errJSON", err)
	}
}
