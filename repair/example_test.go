package repair_test

import (
	"encoding/json"
	"fmt"

	"github.com/toolguard/toolguard/repair"
	"github.com/toolguard/toolguard/validation"
)

// A Repairer fixes unambiguous formatting slips: here a code fence, a
// trailing comma and a number sent as a string.
func ExampleDefault() {
	s, _ := validation.Compile(`{"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}`)
	args, repairs := repair.Default().Repair([]byte("```json\n{\"city\": \"Paris\", \"days\": \"3\",}\n```"), s)
	out, _ := json.Marshal(args)
	fmt.Println(string(out))
	for _, r := range repairs {
		fmt.Println(r)
	}
	// Output:
	// {"city":"Paris","days":3}
	// code_fence
	// trailing_comma
	// number_string at /days
}

// The default coercions read what a value sent as a string means where the
// schema wants another type, and leave a single value where a list is
// wanted for the model to send again.
func ExampleCoercions() {
	s, _ := validation.Compile(`{"type": "object", "properties": {
		"sizes":  {"type": "array", "items": {"type": "string"}},
		"colors": {"type": "array", "items": {"type": "string"}},
		"open":   {"type": "boolean"}}}`)
	for _, args := range []string{
		`{"sizes": "['M', 'L']", "colors": "[\"red\"]", "open": "True"}`,
		`{"sizes": "M"}`,
	} {
		fixed, repairs := repair.Coercions().Repair([]byte(args), s)
		out, _ := json.Marshal(fixed)
		fmt.Println(string(out), repairs)
	}
	// Output:
	// {"colors":["red"],"open":true,"sizes":["M","L"]} [json_string at /colors bool_any_case at /open python_string at /sizes]
	// null []
}
