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
