package validation_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/toolguard/toolguard/errfmt"
	"github.com/toolguard/toolguard/repair"
	"github.com/toolguard/toolguard/strip"
	"github.com/toolguard/toolguard/validation"
)

// fuzzSchemas are the schemas FuzzValidateArgs picks from: eight BFCL tool
// schemas (testdata/fuzz_schemas.json, written by TestUpdateFuzzSeeds) and
// a few written here for what BFCL lacks.
var fuzzSchemas = sync.OnceValues(func() ([]*validation.Schema, error) {
	b, err := os.ReadFile("testdata/fuzz_schemas.json")
	if err != nil {
		return nil, err
	}
	var tools []struct {
		Name       string          `json:"name"`
		Parameters json.RawMessage `json:"parameters"`
	}
	if err := json.Unmarshal(b, &tools); err != nil {
		return nil, err
	}
	raws := []string{
		// Nullable, enums, bounds, formats, a closed object.
		`{"type": "object", "properties": {"city": {"type": "string", "minLength": 1}, "units": {"enum": ["celsius", "fahrenheit"]},
		  "days": {"type": "integer", "minimum": 1, "maximum": 16}, "note": {"type": ["string", "null"]}, "when": {"type": "string", "format": "date"},
		  "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": true}}, "required": ["city"], "additionalProperties": false}`,
		// Any JSON value, recursively.
		`{"definitions": {"v": {"anyOf": [{"type": ["string", "number", "boolean", "null"]}, {"type": "array", "items": {"$ref": "#/definitions/v"}},
		  {"type": "object", "additionalProperties": {"$ref": "#/definitions/v"}}]}}, "type": "object", "additionalProperties": {"$ref": "#/definitions/v"}}`,
		// Conditionals, oneOf, patterns, dependencies (2020-12).
		`{"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
		  "properties": {"kind": {"enum": ["a", "b"]}, "n": {"oneOf": [{"type": "integer", "multipleOf": 3}, {"type": "integer", "multipleOf": 5}]},
		  "opts": {"type": "object", "patternProperties": {"^x-": {"type": "string"}}, "additionalProperties": false, "minProperties": 1}},
		  "if": {"properties": {"kind": {"const": "a"}}}, "then": {"required": ["n"]}, "else": {"required": ["opts"]},
		  "dependentRequired": {"n": ["kind"]}}`,
	}
	for _, t := range tools {
		raws = append(raws, string(t.Parameters))
	}
	schemas := make([]*validation.Schema, len(raws))
	for i, raw := range raws {
		if schemas[i], err = validation.Compile(raw); err != nil {
			return nil, err
		}
	}
	return schemas, nil
})

// FuzzValidateArgs runs arbitrary argument bytes through what
// ToolArgValidation does with them — DecodeArgs, stripping, validation,
// feedback, and (WithRepair) repair — and checks that nothing panics, that
// the feedback is bounded and well-formed, that stripped arguments written
// back as JSON decode to exactly the stripped value, and that repaired
// arguments keep DecodeArgs's limits.
func FuzzValidateArgs(f *testing.F) {
	schemas, err := fuzzSchemas()
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []struct {
		args   string
		schema uint8
	}{
		{`{"city": "Paris", "units": "kelvin", "days": 0, "note": null, "tags": []}`, 0},
		{`{"city": null, "tags": ["a", "a"], "when": "2024-02-30"}`, 0},
		{`{"a": {"b": [1, 2.5e400, -0, 123456789012345678901234567890, {"c": null}]}}`, 1},
		{`{"kind": "a", "opts": {"x-1": 2, "y": null}}`, 2},
		{`{"a": 1, "a": 2}`, 0},
		{"{\"\xff\": \"\xfe\", \"e\\u0301\": \"\\ud800\"}", 1},
		{`[1, 2]`, 0},
		{`{"x": NaN}`, 0},
	} {
		f.Add([]byte(seed.args), "get_weather", seed.schema, uint8(0))
	}
	for _, seed := range []string{
		"```json\n{'city': 'Paris', 'days': '5', 'tags': ['a',],}\n```",
		`Sure: {"city": "Rome", "city": "Paris"} hope it helps`,
		`"{\"city\": \"Paris\", \"note\": None}"`,
		`{'city': 'Paris', 'days': 1e999999, 'note': True}`,
	} {
		f.Add([]byte(seed), "get_weather", uint8(0), uint8(4))
	}
	f.Fuzz(func(t *testing.T, args []byte, tool string, schemaIndex, modeIndex uint8) {
		s := schemas[int(schemaIndex)%len(schemas)]
		mode := []strip.Mode{strip.SchemaAware, strip.Recursive, strip.Off}[int(modeIndex)%3]

		if modeIndex&4 != 0 {
			checkRepair(t, args, s)
		}
		v, err := validation.DecodeArgs(args)
		if err != nil {
			var ve *validation.Error
			// One "json" violation: at the root, or at the number that
			// is out of range (the key "" has the pointer "/").
			if !errors.As(err, &ve) || len(ve.Violations) != 1 || ve.Violations[0].Keyword != "json" ||
				(ve.Violations[0].Path != "" && !strings.Contains(ve.Violations[0].Message, "number out of range")) {
				t.Fatalf("DecodeArgs(%q) = %v, want one json violation, at the root unless a number is out of range", args, err)
			}
			if verr := s.ValidateJSON(args); verr == nil {
				t.Fatalf("ValidateJSON(%q) = nil after DecodeArgs refused it", args)
			}
			checkFeedback(t, tool, ve)
			return
		}
		if got, want := s.ValidateJSON(args) == nil, s.Validate(v) == nil; got != want {
			t.Fatalf("ValidateJSON(%q) valid = %v, Validate(DecodeArgs) valid = %v", args, got, want)
		}

		var verr error
		switch mode {
		case strip.Recursive:
			strip.RecursiveStrip(v)
			verr = s.Validate(v)
		case strip.SchemaAware:
			_, verr = schemaAwareStrip(v, s)
		default:
			verr = s.Validate(v)
		}
		if got, want := verr == nil, s.Validate(v) == nil; got != want {
			t.Fatalf("strip reported valid = %v, but the stripped value validates = %v", got, want)
		}

		// Written back the way ToolArgValidation does: compact, no HTML
		// escaping, numbers as sent.
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			t.Fatalf("encoding the stripped arguments: %v", err)
		}
		back, err := validation.DecodeArgs(buf.Bytes())
		if err != nil {
			t.Fatalf("stripped arguments %s do not decode: %v", buf.Bytes(), err)
		}
		if !reflect.DeepEqual(back, v) {
			t.Fatalf("stripped arguments %s decode to %#v, want %#v", buf.Bytes(), back, v)
		}

		if verr != nil {
			var ve *validation.Error
			if !errors.As(verr, &ve) || len(ve.Violations) == 0 {
				t.Fatalf("validation error %v (%T) is not a *validation.Error with violations", verr, verr)
			}
			checkFeedback(t, tool, ve)
		}
	})
}

// checkFeedback checks errfmt's text for one call: bounded, valid UTF-8, no
// control characters but line breaks, every line of a known kind.
func checkFeedback(t *testing.T, tool string, ve *validation.Error) {
	t.Helper()
	ve.Tool = tool
	text := errfmt.Feedback(ve)
	if len(text) > errfmt.DefaultMaxBytes {
		t.Fatalf("feedback is %d bytes, want <= %d:\n%s", len(text), errfmt.DefaultMaxBytes, text)
	}
	if !utf8.ValidString(text) {
		t.Fatalf("feedback is not valid UTF-8: %q", text)
	}
	for _, r := range text {
		if (r < 0x20 && r != '\n') || r == 0x7f || r == '\u2028' || r == '\u2029' {
			t.Fatalf("feedback contains control character %U: %q", r, text)
		}
	}
	lines := strings.Split(text, "\n")
	if !strings.HasPrefix(lines[0], "Invalid arguments") {
		t.Fatalf("first line %q, want the header", lines[0])
	}
	last := lines[len(lines)-1]
	if !strings.HasPrefix(last, "Call ") || !strings.Contains(last, " again with corrected arguments.") {
		t.Fatalf("last line %q, want the instruction", last)
	}
	for _, l := range lines[1 : len(lines)-1] {
		if !strings.HasPrefix(l, "- ") {
			t.Fatalf("line %q, want a violation line starting with \"- \"", l)
		}
	}
}

// checkRepair: whatever repair makes of args is a JSON object that,
// written back, DecodeArgs accepts and decodes to the same value.
func checkRepair(t *testing.T, args []byte, s *validation.Schema) {
	t.Helper()
	v, reps := repair.Default().Repair(args, s)
	if v == nil {
		if reps != nil {
			t.Fatalf("Repair(%q) = nil value with repairs %v", args, reps)
		}
		return
	}
	if len(reps) == 0 {
		t.Fatalf("Repair(%q) = %v without saying which repairs", args, v)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatalf("repaired arguments do not encode: %v", err)
	}
	back, err := validation.DecodeArgs(buf.Bytes())
	if err != nil {
		t.Fatalf("Repair(%q) = %s, which DecodeArgs refuses: %v", args, buf.Bytes(), err)
	}
	if !reflect.DeepEqual(back, v) {
		t.Fatalf("repaired arguments %s decode to %#v, want %#v", buf.Bytes(), back, v)
	}
}
