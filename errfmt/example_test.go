package errfmt_test

import (
	"fmt"

	"github.com/toolguard/toolguard/errfmt"
	"github.com/toolguard/toolguard/validation"
)

// Feedback is the tool message a model reads about its invalid call: every
// violation, sorted, with what it sent quoted, and what to do next.
func ExampleFeedback() {
	s, _ := validation.Compile(`{"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}}, "required": ["city"]}`)
	err := s.ValidateJSON([]byte(`{"city": 75001, "days": 0}`)).(*validation.Error)
	err.Tool = "get_weather"
	fmt.Println(errfmt.Feedback(err))
	// Output:
	// Invalid arguments for tool "get_weather": 2 errors.
	// - /city: expected string, got 75001
	// - /days: expected a number >= 1, got 0
	// Call get_weather again with corrected arguments.
}

// UnknownTool answers a call of a tool that does not exist.
func ExampleUnknownTool() {
	fmt.Println(errfmt.UnknownTool("get_wether", []string{"search", "get_weather"}))
	// Output:
	// Tool "get_wether" does not exist. Available tools: "get_weather", "search". Did you mean "get_weather"? Call one of the available tools by its exact name.
}
