package agent_test

import (
	"context"
	"fmt"
	"strconv"

	"github.com/toolguard/toolguard/agent"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/fakemodel"
	"github.com/toolguard/toolguard/toolstage"
)

// AddArgs are the arguments of the add tool: both required, integers.
type AddArgs struct {
	A int `json:"a" jsonschema:"the first addend"`
	B int `json:"b" jsonschema:"the second addend"`
}

// A typed tool: the schema the model sees is inferred from the struct, and
// the function receives the arguments decoded into it.
func ExampleNew_typedTool() {
	add := toolstage.NewTool("add", "Adds two integers.", func(_ context.Context, args AddArgs) (string, error) {
		return strconv.Itoa(args.A + args.B), nil
	})
	fmt.Println(add.Schema())

	out, err := add.Call(context.Background(), `{"a": 2, "b": 3}`)
	fmt.Println(out, err)

	_, err = add.Call(context.Background(), `{"a": "two", "b": 3}`)
	fmt.Println(err)
	// Output:
	// {"type":"object","properties":{"a":{"type":"integer","description":"the first addend"},"b":{"type":"integer","description":"the second addend"}},"required":["a","b"],"additionalProperties":false}
	// 5 <nil>
	// validation: tool "add": 1 violation: /a: expected integer, got "two"
}

// The model's first call is malformed; ToolArgValidation has it corrected
// before the agent runs anything, so the tool runs once.
func ExampleNew() {
	add := toolstage.NewTool("add", "Adds two integers.", func(_ context.Context, args AddArgs) (string, error) {
		return strconv.Itoa(args.A + args.B), nil
	})
	model := fakemodel.New( // a scripted model; use any llms.Model
		fakemodel.ToolCalls(fakemodel.Call("add", `{"a": "two", "b": 3}`)),
		fakemodel.ToolCalls(fakemodel.Call("add", `{"a": 2, "b": 3}`)),
		fakemodel.Text("2 + 3 = 5"),
	)
	a := agent.New(model, toolstage.New([]toolstage.Tool{add}), agent.WithSystemPrompt("You do arithmetic with the add tool."), agent.WithMiddleware(middleware.ToolArgValidation()))

	res, err := a.Run(context.Background(), "What is 2 + 3?")
	if err != nil {
		panic(err)
	}
	for _, s := range res.Steps {
		fmt.Printf("%s %s(%s) = %s\n", s.CallID, s.Tool, s.Arguments, s.Result)
	}
	fmt.Println(res.Output)
	fmt.Println("model calls:", res.ModelCalls)
	// Output:
	// call_2 add({"a": 2, "b": 3}) = 5
	// 2 + 3 = 5
	// model calls: 3
}
