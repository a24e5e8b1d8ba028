package fakemodel_test

import (
	"context"
	"fmt"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/middleware/fakemodel"
)

// A scripted model answers each call with the next step, like httptest for
// agents; Requests shows what it was sent.
func ExampleNew() {
	m := fakemodel.New(
		fakemodel.ToolCalls(fakemodel.Call("get_weather", `{"city": 42}`)),
		fakemodel.Text("It is sunny in Paris."),
	)
	ctx := context.Background()
	msgs := []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "Weather in Paris?")}
	resp, _ := m.GenerateContent(ctx, msgs)
	call := resp.Choices[0].ToolCalls[0]
	fmt.Println(call.ID, call.FunctionCall.Name, call.FunctionCall.Arguments)
	resp, _ = m.GenerateContent(ctx, msgs)
	fmt.Println(resp.Choices[0].Content)
	_, err := m.GenerateContent(ctx, msgs)
	fmt.Println(err == fakemodel.ErrExhausted, len(m.Requests()))
	// Output:
	// call_1 get_weather {"city": 42}
	// It is sunny in Paris.
	// true 3
}
