package validation_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/validation"
)

func TestDecodeArgsRefusesDuplicateKeys(t *testing.T) {
	t.Parallel()
	many := func(dup bool) string {
		var b strings.Builder
		b.WriteString(`{`)
		for i := range 40 {
			fmt.Fprintf(&b, `"k%d": %d, `, i, i)
		}
		if dup {
			b.WriteString(`"k7": 0, `)
		}
		b.WriteString(`"last": {"k7": 1}}`)
		return b.String()
	}
	tests := []struct {
		name, in string
		want     string // "" = accepted
	}{
		{"root", `{"city": "Paris", "city": "Rome"}`,
			`arguments are ambiguous JSON: the key "city" appears more than once in the object at (root) (byte 18); send each key once`},
		{"nested", `{"a": {"b": 1, "c": 2, "b": 3}}`,
			`arguments are ambiguous JSON: the key "b" appears more than once in the object at /a (byte 23); send each key once`},
		{"in an array", `{"xs": [{"id": 1}, {"id": 2, "id": 3}]}`,
			`arguments are ambiguous JSON: the key "id" appears more than once in the object at /xs/1 (byte 29); send each key once`},
		{"escaped spelling", `{"a": 1, "\u0061": 2}`,
			`arguments are ambiguous JSON: the key "a" appears more than once in the object at (root) (byte 9); send each key once`},
		{"pointer escapes", `{"a/b": {"~": 1, "~": 2}}`,
			`arguments are ambiguous JSON: the key "~" appears more than once in the object at /a~1b (byte 17); send each key once`},
		{"invalid UTF-8 decodes to the same key", "{\"\xff\": 1, \"\xfe\": 2}",
			"arguments are ambiguous JSON: the key \"\uFFFD\" appears more than once in the object at (root) (byte 9); send each key once"},
		{"many keys", many(true),
			`arguments are ambiguous JSON: the key "k7" appears more than once in the object at (root) (byte 421); send each key once`},
		{"many keys, none twice", many(false), ""},
		{"same key in sibling objects", `{"a": {"id": 1}, "b": {"id": 1}, "c": [{"id": 1}, {"id": 1}]}`, ""},
		{"same key at another depth", `{"id": {"id": {"id": 1}}}`, ""},
		{"a value equal to a key", `{"a": "a", "b": ["a", "b"], "c": {"a": "b"}}`, ""},
		{"keys with escaped quotes", `{"a\"": 1, "a": 2, "a\\": 3}`, ""},
		{"case differs", `{"City": 1, "city": 2}`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := validation.DecodeArgs([]byte(tc.in))
			if tc.want == "" {
				if err != nil {
					t.Errorf("DecodeArgs(%q) = %v, want no error", tc.in, err)
				}
				return
			}
			var ve *validation.Error
			if !errors.As(err, &ve) || len(ve.Violations) != 1 {
				t.Fatalf("DecodeArgs(%q) = %v, want one violation", tc.in, err)
			}
			v := ve.Violations[0]
			if v.Path != "" || v.Keyword != "json" || v.Message != tc.want || v.Got != "" {
				t.Errorf("DecodeArgs(%q) violation = %+v, want a root json violation %q", tc.in, v, tc.want)
			}
		})
	}
}

// TestDuplicateKeyScanIsCheap: the scan allocates nothing for arguments
// with few, plain keys per object and little nesting, the common case.
func TestDuplicateKeyScanIsCheap(t *testing.T) {
	args := []byte(`{"city": "Paris", "units": "celsius", "days": 3, "tags": ["a", "b"], "opts": {"x": 1, "y": [{"z": null}]}}`)
	withScan := testing.AllocsPerRun(100, func() {
		if _, err := validation.DecodeArgs(args); err != nil {
			t.Fatal(err)
		}
	})
	// Measured on go1.26: 34 allocations, all the decoder's.
	plain := testing.AllocsPerRun(100, func() {
		dec := json.NewDecoder(bytes.NewReader(args))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		dec.Token()
	})
	if withScan != plain {
		t.Errorf("DecodeArgs allocations = %v, want %v, as many as the decoder alone", withScan, plain)
	}
}

// TestDecodeArgsNumbers: numbers beyond float64 and int64 are kept digit for
// digit; numbers too long or with too large an exponent for the validator
// to check cheaply are one violation at the number.
func TestDecodeArgsNumbers(t *testing.T) {
	t.Parallel()
	kept := []string{
		"123456789012345678901234567890", "-9007199254740993", "1e400", "-1E-400", "4.9e-324",
		"0.1000000000000000055511151231257827", "1e+000400", strings.Repeat("9", 100),
	}
	for _, num := range kept {
		m, err := validation.DecodeArgs([]byte(`{"n": [` + num + `]}`))
		if err != nil {
			t.Errorf("DecodeArgs(%s) = %v, want it kept", num, err)
			continue
		}
		if got := m["n"].([]any)[0]; got != json.Number(num) {
			t.Errorf("DecodeArgs(%s) = %#v, want json.Number(%q)", num, got, num)
		}
	}
	refused := map[string]string{
		"1e401":                        "/n/0",
		"-1e-10000000":                 "/n/0",
		"1e999999999999999999999":      "/n/0",
		strings.Repeat("9", 101):       "/n/0",
		"0." + strings.Repeat("1", 99): "/n/0",
	}
	for num, path := range refused {
		_, err := validation.DecodeArgs([]byte(`{"n": [` + num + `]}`))
		var ve *validation.Error
		if !errors.As(err, &ve) || len(ve.Violations) != 1 {
			t.Errorf("DecodeArgs(%.40s) = %v, want one violation", num, err)
			continue
		}
		v := ve.Violations[0]
		if v.Path != path || v.Keyword != "json" || !strings.HasPrefix(v.Message, "number out of range: at most 100 characters and an exponent within ±400") || len(v.Got) > 300 {
			t.Errorf("DecodeArgs(%.40s) violation = %+v, want a json violation at %s", num, v, path)
		}
	}
}

// TestDecodeArgsValueCount: arguments may hold MaxValues values — the
// object, member values and array elements at any depth — and no more.
func TestDecodeArgsValueCount(t *testing.T) {
	t.Parallel()
	// 1 object + 1 array + n elements, of every kind.
	build := func(n int) []byte {
		kinds := []string{`1`, `"s"`, `true`, `false`, `null`, `-2.5e3`}
		var b strings.Builder
		b.WriteString(`{"a": [`)
		for i := range n {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(kinds[i%len(kinds)])
		}
		b.WriteString(`]}`)
		return []byte(b.String())
	}
	if _, err := validation.DecodeArgs(build(validation.MaxValues - 2)); err != nil {
		t.Errorf("DecodeArgs(%d values) = %v, want it accepted", validation.MaxValues, err)
	}
	_, err := validation.DecodeArgs(build(validation.MaxValues - 1))
	var ve *validation.Error
	const want = "arguments hold 100001 values, more than the 100000 accepted; send fewer"
	if !errors.As(err, &ve) || len(ve.Violations) != 1 || ve.Violations[0].Path != "" || ve.Violations[0].Message != want {
		t.Errorf("DecodeArgs(%d values) = %v, want one root violation %q", validation.MaxValues+1, err, want)
	}
	// Nested containers count too; keys do not.
	if _, err := validation.DecodeArgs([]byte(`{"k": {"k": [{}, []]}}`)); err != nil {
		t.Errorf("DecodeArgs = %v", err)
	}
}
