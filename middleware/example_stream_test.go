package middleware_test

import (
	"context"
	"fmt"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/fakemodel"
)

// A streaming caller resets on EventReask: the rejected call's deltas are
// never streamed, and the accepted call arrives whole, once.
func ExampleObserverFunc() {
	// A model that streams like langchaingo's OpenAI client: text, then
	// tool-call deltas. Its first call has a number for the city.
	streamed := func(id, args string) fakemodel.Step {
		return fakemodel.Func(func(ctx context.Context, _ []llms.MessageContent, o llms.CallOptions) (*llms.ContentResponse, error) {
			_ = o.StreamingFunc(ctx, []byte("Let me check."))
			_ = o.StreamingFunc(ctx, []byte(`[{"id":"`+id+`","type":"function","function":{"name":"get_weather","arguments":""}}]`))
			_ = o.StreamingFunc(ctx, []byte(`[{"type":"","function":{"name":"","arguments":`+fmt.Sprintf("%q", args)+`}}]`))
			return &llms.ContentResponse{Choices: []*llms.ContentChoice{{Content: "Let me check.", ToolCalls: []llms.ToolCall{
				{ID: id, Type: "function", FunctionCall: &llms.FunctionCall{Name: "get_weather", Arguments: args}}}}}}, nil
		})
	}
	model := middleware.Wrap(fakemodel.New(streamed("call_1", `{"city": 75001}`), streamed("call_2", `{"city": "Paris"}`)),
		middleware.ToolArgValidation())

	ctx := guard.WithObserver(context.Background(), guard.ObserverFunc(func(_ context.Context, e guard.Event) {
		if e.Kind == guard.EventReask {
			fmt.Println("-- reset: what was streamed is superseded")
		}
	}))
	weather := llms.Tool{Type: "function", Function: &llms.FunctionDefinition{Name: "get_weather",
		Parameters: map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}}}
	_, err := model.GenerateContent(ctx, []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "Weather in Paris?")},
		llms.WithTools([]llms.Tool{weather}),
		llms.WithStreamingFunc(func(_ context.Context, chunk []byte) error {
			fmt.Printf("%s\n", chunk)
			return nil
		}))
	if err != nil {
		fmt.Println(err)
	}
	// Output:
	// Let me check.
	// -- reset: what was streamed is superseded
	// Let me check.
	// [{"id":"call_2","type":"function","function":{"name":"get_weather","arguments":"{\"city\": \"Paris\"}"}}]
}
