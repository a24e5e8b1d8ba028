package middleware_test

import (
	"context"
	"fmt"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/fakemodel"
)

// A model asks for three searches at once in a run limited to two. The
// limiter holds the whole batch back, tells the model why, and the caller
// receives the two calls the model re-issues: three calls never leave.
func ExampleToolCallLimit() {
	model := fakemodel.New(
		fakemodel.ToolCalls(
			fakemodel.Call("search", `{"q": "go"}`),
			fakemodel.Call("search", `{"q": "rust"}`),
			fakemodel.Call("search", `{"q": "zig"}`),
		),
		fakemodel.ToolCalls(
			fakemodel.Call("search", `{"q": "go"}`),
			fakemodel.Call("search", `{"q": "rust"}`),
		),
	)
	llm := middleware.Wrap(model, middleware.ToolCallLimit(
		guard.WithToolName("search"),
		guard.WithRunLimit(2),
	))

	ctx := guard.WithRun(context.Background()) // one user turn
	question := []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "Compare go, rust and zig.")}
	resp, err := llm.GenerateContent(ctx, question)
	if err != nil {
		panic(err)
	}
	fmt.Println("the model was told:")
	for _, msg := range model.Requests()[1].Messages[len(question):] {
		if msg.Role == llms.ChatMessageTypeTool {
			fmt.Println("-", msg.Parts[0].(llms.ToolCallResponse).Content)
		}
	}
	fmt.Println("the caller gets:")
	for _, tc := range resp.Choices[0].ToolCalls {
		fmt.Println("-", tc.FunctionCall.Name, tc.FunctionCall.Arguments)
	}
	// Output:
	// the model was told:
	// - Not executed: this batch exceeded the tool call limit; 2 calls of 'search' remain in this run, so re-issue at most 2.
	// - Not executed: this batch exceeded the tool call limit; 2 calls of 'search' remain in this run, so re-issue at most 2.
	// - Tool call limit exceeded: 'search' may be called at most 2 times per run; do not call it again.
	// the caller gets:
	// - search {"q": "go"}
	// - search {"q": "rust"}
}
