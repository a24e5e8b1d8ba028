package validation_test

import (
	"errors"
	"fmt"

	"github.com/toolguard/toolguard/validation"
)

// Compile takes a schema in any form a tool carries it; ValidateJSON reports
// every violation of a call's arguments at once, each at its JSON Pointer.
func ExampleCompile() {
	s, err := validation.Compile(`{
		"type": "object",
		"properties": {
			"city":  {"type": "string"},
			"units": {"enum": ["celsius", "fahrenheit"]}
		},
		"required": ["city"]
	}`)
	if err != nil {
		fmt.Println(err)
		return
	}
	err = s.ValidateJSON([]byte(`{"units": "kelvin"}`))
	var ve *validation.Error
	if errors.As(err, &ve) {
		for _, v := range ve.Violations {
			fmt.Println(v)
		}
	}
	// Output:
	// /city: missing required property (string)
	// /units: expected one of "celsius", "fahrenheit", got "kelvin"
}

// BookingArgs are a tool's arguments: the schema is inferred from the
// struct, and Validate checks what a JSON Schema cannot.
type BookingArgs struct {
	From string `json:"from" jsonschema:"first night, YYYY-MM-DD"`
	To   string `json:"to" jsonschema:"last night, YYYY-MM-DD"`
	Note string `json:"note,omitempty"`
}

func (b BookingArgs) Validate() error {
	if b.To < b.From {
		return validation.FieldError("/to", "must not be before from")
	}
	return nil
}

// Typed infers a schema from a Go type once and keeps the type's Validate
// hook; the *Schema marshals to its JSON Schema for the model.
func ExampleTyped() {
	s := validation.Typed[BookingArgs]()
	fmt.Println(s)
	fmt.Println(s.ValidateJSON([]byte(`{"from": "2025-05-02", "to": "2025-05-01"}`)))
	fmt.Println(s.ValidateJSON([]byte(`{"from": "2025-05-01", "to": "2025-05-02"}`)))
	// Output:
	// {"type":"object","properties":{"from":{"type":"string","description":"first night, YYYY-MM-DD"},"to":{"type":"string","description":"last night, YYYY-MM-DD"},"note":{"type":"string"}},"required":["from","to"],"additionalProperties":false}
	// validation: 1 violation: /to: must not be before from
	// <nil>
}
