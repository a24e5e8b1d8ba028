package middleware_test

import (
	"context"
	"fmt"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/fakemodel"
)

// A model that keeps calling tools is stopped at its third model call of
// the run: the call never reaches the model, and the answer ends the loop.
func ExampleModelCallLimit() {
	model := fakemodel.New(
		fakemodel.ToolCalls(fakemodel.Call("search", `{"q": "go"}`)),
		fakemodel.ToolCalls(fakemodel.Call("search", `{"q": "go"}`)),
		fakemodel.ToolCalls(fakemodel.Call("search", `{"q": "go"}`)),
	)
	llm := middleware.Wrap(model, middleware.ModelCallLimit(guard.WithRunLimit(2)))

	ctx := guard.WithRun(context.Background()) // one user turn
	msgs := []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "Find out about Go.")}
	for {
		resp, err := llm.GenerateContent(ctx, msgs)
		if err != nil {
			panic(err)
		}
		ch := resp.Choices[0]
		if len(ch.ToolCalls) == 0 {
			fmt.Println("answer:", ch.Content)
			break
		}
		fmt.Println("tool call:", ch.ToolCalls[0].FunctionCall.Name)
		msgs = append(msgs,
			llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{ch.ToolCalls[0]}},
			llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{
				llms.ToolCallResponse{ToolCallID: ch.ToolCalls[0].ID, Name: "search", Content: "Go is a language."},
			}})
	}
	fmt.Println("model calls:", len(model.Requests()))
	// Output:
	// tool call: search
	// tool call: search
	// answer: Model call limit reached: run limit exceeded (2/2 calls).
	// model calls: 2
}
