package mcpguard

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
)

// members reads what encoding/json reads: for an object, each key's raw
// value (blanks around it aside), a key given twice refused; anything
// else refused.
func FuzzMembers(f *testing.F) {
	for _, s := range []string{
		`{"a":1,"b":"x"}`, ` { "b" : [1,{"a":"}"}] , "a" : {"c":"\"]"} } `, `{"a":1,"a":2}`, `{"\u0061":true}`,
		`[]`, `"a"`, `{"a":`, `{"a":1}x`, `{}`, `{"a":null,"b":-1.5e3}`, `{"b\\":"\\"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := members(data, "a", "b")
		var raw map[string]json.RawMessage
		jerr := json.Unmarshal(data, &raw)
		var dup *duplicateKeyError
		switch {
		case jerr != nil:
			if err == nil {
				t.Fatalf("members(%q) = %q, nil; encoding/json refuses it: %v", data, got, jerr)
			}
		case errors.As(err, &dup):
			// encoding/json keeps the last value; members refuses.
		case err != nil:
			t.Fatalf("members(%q) error %v; encoding/json reads it", data, err)
		default:
			for i, k := range []string{"a", "b"} {
				want, ok := raw[k]
				if ok != (got[i].value != nil) || ok && !bytes.Equal(bytes.TrimSpace(want), got[i].value) {
					t.Fatalf("members(%q)[%q] = %q, encoding/json reads %q", data, k, got[i].value, want)
				}
				if ok && !bytes.Equal(data[got[i].off:got[i].off+len(got[i].value)], got[i].value) {
					t.Fatalf("members(%q)[%q]: offset %d does not hold the value", data, k, got[i].off)
				}
			}
		}
	})
}
