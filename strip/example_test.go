package strip_test

import (
	"encoding/json"
	"fmt"

	"github.com/toolguard/toolguard/strip"
	"github.com/toolguard/toolguard/validation"
)

// SchemaAwareStrip removes only the empty values whose removal fixes the
// call: the null for an optional integer goes, the nullable note's null and
// the required empty list stay.
func ExampleSchemaAwareStrip() {
	s, _ := validation.Compile(`{"type": "object",
		"properties": {"ids": {"type": "array"}, "limit": {"type": "integer"}, "note": {"type": ["string", "null"]}},
		"required": ["ids"]}`)
	args, _ := validation.DecodeArgs([]byte(`{"ids": [], "limit": null, "note": null}`))
	removed, remaining := strip.SchemaAwareStrip(args, s, s.Check(args).Violations)
	out, _ := json.Marshal(args)
	fmt.Println(string(out), removed, len(remaining))
	// Output:
	// {"ids":[],"note":null} [/limit] 0
}

// RecursiveStrip is LangChain's rule: no null, {} or [] remains under any
// key; array elements stay.
func ExampleRecursiveStrip() {
	args, _ := validation.DecodeArgs([]byte(`{"q": "x", "filters": {"tags": [], "since": null}, "ids": [null, 1]}`))
	removed := strip.RecursiveStrip(args)
	out, _ := json.Marshal(args)
	fmt.Println(string(out), removed)
	// Output:
	// {"ids":[null,1],"q":"x"} [/filters /filters/since /filters/tags]
}
