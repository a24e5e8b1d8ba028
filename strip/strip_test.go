package strip_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/toolguard/toolguard/strip"
	"github.com/toolguard/toolguard/validation"
)

func decode(t *testing.T, s string) map[string]any {
	t.Helper()
	m, err := validation.DecodeArgs([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func encode(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestIsEmpty(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		v    any
		want bool
	}{
		{nil, true}, {map[string]any{}, true}, {[]any{}, true},
		{"", false}, {json.Number("0"), false}, {false, false}, {[]any{nil}, false}, {map[string]any{"a": nil}, false},
	} {
		if got := strip.IsEmpty(tc.v); got != tc.want {
			t.Errorf("IsEmpty(%#v) = %v, want %v", tc.v, got, tc.want)
		}
	}
}

func TestRecursiveStrip(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, want string
		removed  []string
	}{
		{`{"a": null, "b": 1}`, `{"b":1}`, []string{"/a"}},
		{`{"a": {"b": {"c": []}}, "d": "x"}`, `{"d":"x"}`, []string{"/a", "/a/b", "/a/b/c"}},
		{`{"list": [null, {}, [], {"k": null}]}`, `{"list":[null,{},[],{}]}`, []string{"/list/3/k"}},
		{`{"a/b": null, "": {}}`, `{}`, []string{"/", "/a~1b"}},
		{`{"zero": 0, "empty": "", "f": false}`, `{"empty":"","f":false,"zero":0}`, nil},
	}
	for _, tc := range tests {
		v := decode(t, tc.in)
		removed := strip.RecursiveStrip(v)
		if got := encode(v); got != tc.want || !reflect.DeepEqual(removed, tc.removed) {
			t.Errorf("RecursiveStrip(%s) = %s, removed %v; want %s, removed %v", tc.in, got, removed, tc.want, tc.removed)
		}
	}
}

func TestSchemaAwareStrip(t *testing.T) {
	t.Parallel()
	schema := `{
		"type": "object",
		"properties": {
			"q":       {"type": "string"},
			"limit":   {"type": "integer"},
			"filters": {"type": "object", "properties": {"lang": {"type": "string"}, "tags": {"type": "array", "minItems": 1}}},
			"ids":     {"type": "array"},
			"note":    {"type": ["string", "null"]},
			"opt":     {"anyOf": [{"type": "string"}, {"$ref": "#/definitions/obj"}]},
			"kind":    {"type": "string"},
			"extra":   {"type": "object", "required": ["x"]}
		},
		"definitions": {"obj": {"type": "object", "required": ["z"]}},
		"required": ["q", "ids"],
		"if": {"properties": {"kind": {"const": "pro"}}, "required": ["kind"]},
		"then": {"properties": {"limit": {"type": "integer"}}, "required": ["limit"]}
	}`
	s, err := validation.Compile(schema)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, in, want string
		removed        []string
		valid          bool
	}{
		{"valid call untouched", `{"q": "x", "ids": [], "note": null, "filters": {}}`, `{"filters":{},"ids":[],"note":null,"q":"x"}`, nil, true},
		{"null on optional removed", `{"q": "x", "ids": [1], "limit": null}`, `{"ids":[1],"q":"x"}`, []string{"/limit"}, true},
		{"required [] kept while others removed", `{"q": "x", "ids": [], "limit": null, "filters": {"tags": []}}`,
			`{"filters":{},"ids":[],"q":"x"}`, []string{"/filters/tags", "/limit"}, true},
		{"required null never removed", `{"q": null, "ids": [1], "limit": null}`, `{"ids":[1],"q":null}`, []string{"/limit"}, false},
		{"nullable null kept beside a fix", `{"q": "x", "ids": [1], "note": null, "limit": {}}`, `{"ids":[1],"note":null,"q":"x"}`, []string{"/limit"}, true},
		{"through anyOf and $ref", `{"q": "x", "ids": [1], "opt": {}}`, `{"ids":[1],"q":"x"}`, []string{"/opt"}, true},
		{"through if/then: removing limit would add a violation", `{"q": "x", "ids": [1], "kind": "pro", "limit": null}`,
			`{"ids":[1],"kind":"pro","limit":null,"q":"x"}`, nil, false},
		{"empty object failing required removed", `{"q": "x", "ids": [1], "extra": {}}`, `{"ids":[1],"q":"x"}`, []string{"/extra"}, true},
		{"unrelated violation left alone", `{"q": 1, "ids": [1], "filters": {}}`, `{"filters":{},"ids":[1],"q":1}`, nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v := decode(t, tc.in)
			removed, remaining := strip.SchemaAwareStrip(v, s, violations(s, v))
			if got := encode(v); got != tc.want {
				t.Errorf("SchemaAwareStrip(%s) left %s, want %s", tc.in, got, tc.want)
			}
			if !reflect.DeepEqual(removed, tc.removed) {
				t.Errorf("removed %v, want %v", removed, tc.removed)
			}
			if (len(remaining) == 0) != tc.valid {
				t.Errorf("result valid = %v (remaining %v), want %v", len(remaining) == 0, remaining, tc.valid)
			}
			if !reflect.DeepEqual(remaining, violations(s, v)) {
				t.Errorf("remaining %v, want the violations of what is left, %v", remaining, violations(s, v))
			}
		})
	}
}

// TestSchemaAwareStripIsBounded: a huge invalid argument full of empty values
// costs a bounded number of validations and loses nothing else; one with
// more violations than an Error lists is left alone.
func TestSchemaAwareStripIsBounded(t *testing.T) {
	t.Parallel()
	s, err := validation.Compile(`{"type": "object", "additionalProperties": {"type": "string"}}`)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		keys, wantRemoved int
	}{
		{900, 256}, // every removal helps; the trial budget stops it
		{1500, 0},  // 1500 violations: every trial leaves more than an Error lists, never an improvement
		{10, 10},   // small: everything fixed
	} {
		v := map[string]any{}
		for i := range tc.keys {
			v[fmt.Sprintf("k%05d", i)] = nil
		}
		removed, remaining := strip.SchemaAwareStrip(v, s, violations(s, v))
		if len(removed) != tc.wantRemoved || len(v) != tc.keys-len(removed) {
			t.Errorf("%d keys: removed %d (left %d), want %d removed and nothing else lost", tc.keys, len(removed), len(v), tc.wantRemoved)
		}
		if (len(remaining) == 0) != (tc.wantRemoved == tc.keys) {
			t.Errorf("%d keys: %d violations remain", tc.keys, len(remaining))
		}
	}

	// A large value gets fewer trials: 99,302 values leave room for
	// 524,288 / 99,302 = 5 validations, so 5 of 300 helpful removals.
	s, err = validation.Compile(`{"type": "object", "properties": {"data": {"type": "array"}}, "additionalProperties": {"type": "string"}}`)
	if err != nil {
		t.Fatal(err)
	}
	data := make([]any, 99000)
	for i := range data {
		data[i] = "x"
	}
	v := map[string]any{"data": data}
	for i := range 300 {
		v[fmt.Sprintf("k%05d", i)] = nil
	}
	removed, _ := strip.SchemaAwareStrip(v, s, violations(s, v))
	if len(removed) != 5 || len(v) != 301-5 {
		t.Errorf("large value: removed %d, want 5 (the trial budget) and nothing else lost", len(removed))
	}
}

func TestModeString(t *testing.T) {
	t.Parallel()
	for m, want := range map[strip.Mode]string{strip.Off: "Off", strip.Recursive: "Recursive", strip.SchemaAware: "SchemaAware", strip.Mode(9): "Mode(9)"} {
		if got := m.String(); got != want {
			t.Errorf("Mode(%d).String() = %q, want %q", int(m), got, want)
		}
	}
}

// violations returns the violations of v against s, none when v is valid.
func violations(s *validation.Schema, v any) []validation.Violation {
	if e := s.Check(v); e != nil {
		return e.Violations
	}
	return nil
}
