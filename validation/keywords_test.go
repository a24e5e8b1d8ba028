package validation_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/validation"
)

// plainArgs is what a newcomer passes as Parameters instead of its schema.
type plainArgs struct {
	City string `json:"city"`
}

func TestCompileRefusesSchemaWithoutKeyword(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		schema any
		refuse bool
	}{
		{"Go struct value", plainArgs{}, true},
		{"pointer to Go struct value", &plainArgs{City: "Paris"}, true},
		{"map of field names", map[string]any{"city": "", "days": 0}, true},
		{"properties without the wrapper", `{"city": {"type": "string"}}`, true},
		{"empty schema", `{}`, false},
		{"empty map", map[string]any{}, false},
		{"boolean schema", `true`, false},
		{"only a description", `{"description": "anything"}`, false},
		{"one keyword among unknown keys", `{"type": "object", "x-internal": true}`, false},
		{"OpenAPI nullable", `{"nullable": true}`, false},
		{"only $defs", `{"$defs": {"a": {"type": "string"}}}`, false},
		{"draft-04 id", `{"id": "urn:x"}`, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := validation.Compile(tc.schema)
			if got := errors.Is(err, validation.ErrNoKeyword); got != tc.refuse {
				t.Errorf("Compile(%v) = %v, want ErrNoKeyword: %v", tc.schema, err, tc.refuse)
			}
			if !tc.refuse && err != nil {
				t.Errorf("Compile(%v) = %v, want a schema", tc.schema, err)
			}
		})
	}
}

// TestNoKeywordErrorNamesKeys: the error says which keys it saw and what
// to do, so the mistake is found from a log line.
func TestNoKeywordErrorNamesKeys(t *testing.T) {
	t.Parallel()
	raw, _ := json.Marshal(plainArgs{})
	_, err := validation.Compile(raw)
	if err == nil {
		t.Fatalf("Compile(%s) = nil, want an error", raw)
	}
	for _, want := range []string{`"city"`, "Typed"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Compile(%s) = %q, want it to mention %s", raw, err, want)
		}
	}
	many := `{"a":1,"b":1,"c":1,"d":1,"e":1,"f":1,"g":1}`
	if _, err := validation.Compile(many); err == nil || !strings.Contains(err.Error(), "and 2 more") {
		t.Errorf("Compile(%s) = %v, want the first 5 keys and %q", many, err, "and 2 more")
	}
}
