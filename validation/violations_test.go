package validation_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/toolguard/toolguard/validation"
)

// TestTypeMismatchReportsEnumAndConst: the validator stops at a failed
// "type", so without help a value of the wrong type that is also outside the
// enum (BFCL: "smoking_allowed": false against "type": "string", "enum":
// ["True", "False", "dontcare"]) was reported as a type error alone, and the
// model learned the allowed values only after a second re-ask.
func TestTypeMismatchReportsEnumAndConst(t *testing.T) {
	t.Parallel()
	s, err := validation.Compile(`{
		"type": "object",
		"properties": {
			"smoking": {"type": "string", "enum": ["True", "False", "dontcare"]},
			"id":      {"type": "integer", "enum": [1, 2, 3]},
			"mode":    {"type": "string", "const": "fast"},
			"mixed":   {"type": "integer", "enum": [1, "a"]},
			"plain":   {"type": "string"}
		}
	}`)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, args string
		want       []validation.Violation
	}{
		{"bool against string enum", `{"smoking": false}`, []validation.Violation{
			{Path: "/smoking", Keyword: "enum", Message: `expected one of "True", "False", "dontcare"`, Got: "false"},
			{Path: "/smoking", Keyword: "type", Message: "expected string", Got: "false"},
		}},
		{"null against integer enum", `{"id": null}`, []validation.Violation{
			{Path: "/id", Keyword: "enum", Message: "expected one of 1, 2, 3", Got: "null"},
			{Path: "/id", Keyword: "type", Message: "expected integer", Got: "null"},
		}},
		{"number against const", `{"mode": 5}`, []validation.Violation{
			{Path: "/mode", Keyword: "const", Message: `expected "fast"`, Got: "5"},
			{Path: "/mode", Keyword: "type", Message: "expected string", Got: "5"},
		}},
		{"wrong type but in the enum", `{"mixed": "a"}`, []validation.Violation{
			{Path: "/mixed", Keyword: "type", Message: "expected integer", Got: `"a"`},
		}},
		{"right type, outside the enum", `{"id": 4}`, []validation.Violation{
			{Path: "/id", Keyword: "enum", Message: "expected one of 1, 2, 3", Got: "4"},
		}},
		{"no enum", `{"plain": 1}`, []validation.Violation{
			{Path: "/plain", Keyword: "type", Message: "expected string", Got: "1"},
		}},
		{"integer enum matched by 2.0", `{"id": 2.0}`, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := s.ValidateJSON([]byte(tc.args))
			var got []validation.Violation
			var ve *validation.Error
			if errors.As(err, &ve) {
				got = ve.Violations
			} else if err != nil {
				t.Fatalf("ValidateJSON(%s) = %v (%T), want a *validation.Error", tc.args, err, err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("ValidateJSON(%s) violations = %+v, want %+v", tc.args, got, tc.want)
			}
		})
	}
}
