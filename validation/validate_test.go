package validation_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/internal/safetext"
	"github.com/toolguard/toolguard/validation"
)

func mustCompile(t *testing.T, schema any, opts ...validation.Option) *validation.Schema {
	t.Helper()
	s, err := validation.Compile(schema, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func violations(t *testing.T, s *validation.Schema, args string) []validation.Violation {
	t.Helper()
	err := s.ValidateJSON([]byte(args))
	if err == nil {
		return nil
	}
	var ve *validation.Error
	if !errors.As(err, &ve) {
		t.Fatalf("ValidateJSON(%s) = %v, want a *validation.Error", args, err)
	}
	return ve.Violations
}

func TestViolationsPerKeyword(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, schema, args string
		want               []validation.Violation
	}{
		{"type", `{"properties": {"a": {"type": "string"}}}`, `{"a": 42}`,
			[]validation.Violation{{Path: "/a", Keyword: "type", Message: "expected string", Got: "42"}}},
		{"type list", `{"properties": {"a": {"type": ["string", "null"]}}}`, `{"a": true}`,
			[]validation.Violation{{Path: "/a", Keyword: "type", Message: "expected string or null", Got: "true"}}},
		{"required, one per property", `{"properties": {"a": {"type": "integer"}}, "required": ["a", "b"]}`, `{}`,
			[]validation.Violation{
				{Path: "/a", Keyword: "required", Message: "missing required property (integer)"},
				{Path: "/b", Keyword: "required", Message: "missing required property"},
			}},
		{"additionalProperties, one per key", `{"properties": {"a": {}}, "additionalProperties": false}`, `{"a": 1, "x": 2, "y": null}`,
			[]validation.Violation{
				{Path: "/x", Keyword: "additionalProperties", Message: `unexpected property; allowed properties: "a"`, Got: "2"},
				{Path: "/y", Keyword: "additionalProperties", Message: `unexpected property; allowed properties: "a"`, Got: "null"},
			}},
		{"additionalProperties with patternProperties", `{"patternProperties": {"^x_": {}}, "additionalProperties": false}`, `{"x_1": 1, "y": 2}`,
			[]validation.Violation{{Path: "/y", Keyword: "additionalProperties", Message: "unexpected property; no properties are allowed here", Got: "2"}}},
		{"enum", `{"properties": {"u": {"enum": ["c", "f", 3]}}}`, `{"u": "k"}`,
			[]validation.Violation{{Path: "/u", Keyword: "enum", Message: `expected one of "c", "f", 3`, Got: `"k"`}}},
		{"const", `{"properties": {"u": {"const": {"a": 1}}}}`, `{"u": 2}`,
			[]validation.Violation{{Path: "/u", Keyword: "const", Message: `expected {"a":1}`, Got: "2"}}},
		{"format", `{"properties": {"d": {"format": "date"}}}`, `{"d": "tomorrow"}`,
			[]validation.Violation{{Path: "/d", Keyword: "format", Message: `expected a string in format "date"`, Got: `"tomorrow"`}}},
		{"bounds", `{"properties": {"a": {"minimum": 1}, "b": {"exclusiveMaximum": 2.5}, "c": {"multipleOf": 3}}}`, `{"a": 0, "b": 2.5, "c": 4}`,
			[]validation.Violation{
				{Path: "/a", Keyword: "minimum", Message: "expected a number >= 1", Got: "0"},
				{Path: "/b", Keyword: "exclusiveMaximum", Message: "expected a number < 2.5", Got: "2.5"},
				{Path: "/c", Keyword: "multipleOf", Message: "expected a multiple of 3", Got: "4"},
			}},
		{"lengths", `{"properties": {"s": {"maxLength": 2}, "l": {"minItems": 2}, "o": {"maxProperties": 0}}}`, `{"s": "héllo", "l": [1], "o": {"k": 1}}`,
			[]validation.Violation{
				{Path: "/l", Keyword: "minItems", Message: "expected at least 2 items (got 1)", Got: "[1]"},
				{Path: "/o", Keyword: "maxProperties", Message: "expected at most 0 properties (got 1)", Got: `{"k":1}`},
				{Path: "/s", Keyword: "maxLength", Message: "expected at most 2 characters (got 5)", Got: `"héllo"`},
			}},
		{"pattern", `{"properties": {"p": {"pattern": "^[a-z]+$"}}}`, `{"p": "ABC"}`,
			[]validation.Violation{{Path: "/p", Keyword: "pattern", Message: `expected a string matching the pattern "^[a-z]+$"`, Got: `"ABC"`}}},
		{"dependentRequired", `{"$schema": "https://json-schema.org/draft/2020-12/schema", "dependentRequired": {"from": ["to"]}}`, `{"from": 1}`,
			[]validation.Violation{{Path: "/to", Keyword: "dependentRequired", Message: `missing property, required when "from" is present`}}},
		{"dependencies", `{"dependencies": {"a/b": ["c"]}}`, `{"a/b": 1}`,
			[]validation.Violation{{Path: "/c", Keyword: "dependencies", Message: `missing property, required when "a/b" is present`}}},
		{"false schema", `{"properties": {"never": false}}`, `{"never": 1}`,
			[]validation.Violation{{Path: "/never", Keyword: "false", Message: "no value is allowed here", Got: "1"}}},
		{"nested and escaped paths", `{"properties": {"a/b": {"properties": {"c~d": {"items": {"type": "integer"}}}}, "sp ace": {"type": "integer"}}}`,
			`{"a/b": {"c~d": [1, "x"]}, "sp ace": "y"}`,
			[]validation.Violation{
				{Path: "/a~1b/c~0d/1", Keyword: "type", Message: "expected integer", Got: `"x"`},
				{Path: "/sp ace", Keyword: "type", Message: "expected integer", Got: `"y"`},
			}},
		{"anyOf keeps each branch's leaf", `{"properties": {"v": {"anyOf": [{"type": "string"}, {"type": "integer"}]}}}`, `{"v": true}`,
			[]validation.Violation{
				{Path: "/v", Keyword: "type", Message: "expected integer", Got: "true"},
				{Path: "/v", Keyword: "type", Message: "expected string", Got: "true"},
			}},
		{"$ref", `{"definitions": {"n": {"type": "integer"}}, "properties": {"v": {"$ref": "#/definitions/n"}}}`, `{"v": "x"}`,
			[]validation.Violation{{Path: "/v", Keyword: "type", Message: "expected integer", Got: `"x"`}}},
		{"if/then", `{"if": {"properties": {"kind": {"const": "a"}}}, "then": {"required": ["a"]}}`, `{"kind": "a"}`,
			[]validation.Violation{{Path: "/a", Keyword: "required", Message: "missing required property"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := violations(t, mustCompile(t, tc.schema), tc.args)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("violations of %s against %s:\n got %#v\nwant %#v", tc.args, tc.schema, got, tc.want)
			}
		})
	}
}

func TestEveryViolationIsReported(t *testing.T) {
	t.Parallel()
	s := mustCompile(t, `{"properties": {"a": {"type": "string"}, "b": {"type": "string"}, "c": {"type": "string"}}, "required": ["d"]}`)
	got := violations(t, s, `{"c": 1, "a": 2, "b": 3}`)
	var paths []string
	for _, v := range got {
		paths = append(paths, v.Path)
	}
	if want := []string{"/a", "/b", "/c", "/d"}; !reflect.DeepEqual(paths, want) {
		t.Errorf("violation paths = %v, want every one, sorted: %v", paths, want)
	}
}

func TestGotIsQuotedAndTruncated(t *testing.T) {
	t.Parallel()
	s := mustCompile(t, `{"properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}`)
	long := strings.Repeat("x", 10_000)
	got := violations(t, s, `{"a": "`+long+`", "b": "line\nbreak\"quote"}`)
	if n := len(got[0].Got); n > 300 || !strings.HasPrefix(got[0].Got, `"xxx`) || !strings.HasSuffix(got[0].Got, safetext.Ellipsis) {
		t.Errorf("Got for a 10 kB string has %d bytes (%q...), want it cut to a few hundred and marked", n, got[0].Got[:20])
	}
	if got[1].Got != `"line\nbreak\"quote"` {
		t.Errorf("Got = %s, want the string JSON-escaped", got[1].Got)
	}
	if s := got[1].String(); strings.Contains(s, "\n") {
		t.Errorf("Violation.String() = %q contains a raw newline", s)
	}
}

func TestDecodeArgs(t *testing.T) {
	t.Parallel()
	m, err := validation.DecodeArgs([]byte(`{"big": 123456789012345678901234567890, "f": 0.1000000000000000055511151231257827}`))
	if err != nil {
		t.Fatal(err)
	}
	if m["big"] != json.Number("123456789012345678901234567890") || m["f"] != json.Number("0.1000000000000000055511151231257827") {
		t.Errorf("DecodeArgs numbers = %#v, want them exactly as sent", m)
	}
	for _, in := range []string{"", "  ", "\n\t"} {
		if m, err := validation.DecodeArgs([]byte(in)); err != nil || len(m) != 0 {
			t.Errorf("DecodeArgs(%q) = %v, %v; want the empty object", in, m, err)
		}
	}
	for in, want := range map[string]string{
		`{"a":`:        "arguments are not valid JSON: unexpected end of input after byte 5 (truncated?)",
		`{"a" 1}`:      "arguments are not valid JSON: invalid character '1' after object key at byte 6",
		`{} {}`:        "arguments are not valid JSON: unexpected data after the JSON value at byte 2",
		`[1]`:          "arguments are not a JSON object but an array",
		`42`:           "arguments are not a JSON object but an integer",
		"\"\xff\xfe\"": "arguments are not a JSON object but a string",
	} {
		_, err := validation.DecodeArgs([]byte(in))
		var ve *validation.Error
		if !errors.As(err, &ve) || len(ve.Violations) != 1 || ve.Violations[0].Path != "" || ve.Violations[0].Keyword != "json" || ve.Violations[0].Message != want {
			t.Errorf("DecodeArgs(%q) = %v, want one root json violation %q", in, err, want)
		}
	}
}

func TestValidateAcceptsAnyValue(t *testing.T) {
	t.Parallel()
	s := mustCompile(t, `{"type": "array", "items": {"type": "number"}}`)
	if err := s.Validate([]any{json.Number("1"), 2.5}); err != nil {
		t.Errorf("Validate(array) = %v, want nil", err)
	}
	if err := s.Validate([]any{"x"}); err == nil {
		t.Errorf("Validate([\"x\"]) = nil, want a violation")
	}
}

func TestErrorString(t *testing.T) {
	t.Parallel()
	e := &validation.Error{Tool: "t\nx", CallID: "c1"}
	for i := range 12 {
		e.Violations = append(e.Violations, validation.Violation{Path: "/a", Keyword: "type", Message: "expected string", Got: string(rune('0' + i))})
	}
	s := e.Error()
	if !strings.HasPrefix(s, `validation: tool "t\nx" (call "c1"): 12 violations: /a: expected string, got 0; `) || !strings.HasSuffix(s, "; and 2 more") {
		t.Errorf("Error() = %q", s)
	}
}
