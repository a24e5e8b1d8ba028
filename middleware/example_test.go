package middleware_test

import (
	"context"
	"fmt"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/fakemodel"
	"github.com/toolguard/toolguard/repair"
)

// named returns a middleware that prints when the request passes it on the
// way in and when the response passes it on the way out.
func named(name string) middleware.Middleware {
	return middleware.Func(func(next middleware.Handler) middleware.Handler {
		return func(ctx context.Context, req *middleware.Request) (*llms.ContentResponse, error) {
			fmt.Println(name, "sees the request")
			resp, err := next(ctx, req)
			fmt.Println(name, "sees the response")
			return resp, err
		}
	})
}

// The first middleware is the outermost layer: it sees the request first and
// the response last.
func ExampleChain() {
	model := fakemodel.New(fakemodel.Text("hi"))
	llm := middleware.Wrap(model, middleware.Chain(named("first"), named("second")), named("third"))
	resp, _ := llm.GenerateContent(context.Background(), []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeHuman, "hello"),
	})
	fmt.Println("model said", resp.Choices[0].Content)
	// Output:
	// first sees the request
	// second sees the request
	// third sees the request
	// third sees the response
	// second sees the response
	// first sees the response
	// model said hi
}

// A model sends a tool call with a wrong type and a hallucinated null;
// ToolArgValidation strips the null, feeds the type error back, and the
// caller receives the corrected call.
func ExampleToolArgValidation() {
	weather := llms.Tool{Type: "function", Function: &llms.FunctionDefinition{
		Name: "get_weather",
		Parameters: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"city":  map[string]any{"type": "string"},
				"units": map[string]any{"type": "string", "enum": []any{"celsius", "fahrenheit"}},
			},
			"required":             []any{"city"},
			"additionalProperties": false,
		},
	}}
	model := fakemodel.New(
		fakemodel.ToolCalls(fakemodel.Call("get_weather", `{"city": 42, "units": null}`)),
		fakemodel.ToolCalls(fakemodel.Call("get_weather", `{"city": "Paris"}`)),
	)
	llm := middleware.Wrap(model, middleware.ToolArgValidation())

	resp, err := llm.GenerateContent(context.Background(),
		[]llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "Weather in Paris?")},
		llms.WithTools([]llms.Tool{weather}))
	if err != nil {
		panic(err)
	}
	feedback := model.Requests()[1].Messages[2].Parts[0].(llms.ToolCallResponse)
	fmt.Println("the model was told:")
	fmt.Println(feedback.Content)
	fmt.Println("the caller gets:", resp.Choices[0].ToolCalls[0].FunctionCall.Arguments)
	// Output:
	// the model was told:
	// Invalid arguments for tool "get_weather": 1 error.
	// - /city: expected string, got 42
	// Call get_weather again with corrected arguments.
	// the caller gets: {"city": "Paris"}
}

// A model wraps its arguments in a code fence and writes a Python dict.
// With WithRepair the call is repaired without asking the model again, and
// the repair is reported.
func ExampleWithRepair() {
	weather := llms.Tool{Type: "function", Function: &llms.FunctionDefinition{
		Name: "get_weather",
		Parameters: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"city": map[string]any{"type": "string"},
				"days": map[string]any{"type": "integer"},
			},
			"required": []any{"city"},
		},
	}}
	model := fakemodel.New(
		fakemodel.ToolCalls(fakemodel.Call("get_weather", "```python\n{'city': 'Paris', 'days': '3'}\n```")),
	)
	report := func(_ context.Context, e guard.Event) {
		fmt.Println(e.Kind, e.Paths)
	}
	llm := middleware.Wrap(model, middleware.ToolArgValidation(
		guard.WithRepair(repair.Default()),
		guard.WithEventHandler(report),
	))

	resp, err := llm.GenerateContent(context.Background(),
		[]llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "Weather in Paris for 3 days?")},
		llms.WithTools([]llms.Tool{weather}))
	if err != nil {
		panic(err)
	}
	fmt.Println("model calls:", len(model.Requests()))
	fmt.Println("the caller gets:", resp.Choices[0].ToolCalls[0].FunctionCall.Arguments)
	// Output:
	// repaired [code_fence python_literal number_string at /days]
	// model calls: 1
	// the caller gets: {"city":"Paris","days":3}
}

// A model sends a number and a boolean as strings. By default they are
// coerced, without asking the model again, where the schema wants a number
// or a boolean, and the coercions are reported.
func ExampleToolArgValidation_coercions() {
	weather := llms.Tool{Type: "function", Function: &llms.FunctionDefinition{
		Name: "get_weather",
		Parameters: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"city":   map[string]any{"type": "string"},
				"days":   map[string]any{"type": "integer"},
				"hourly": map[string]any{"type": "boolean"},
			},
			"required": []any{"city"},
		},
	}}
	model := fakemodel.New(
		fakemodel.ToolCalls(fakemodel.Call("get_weather", `{"city": "Paris", "days": "3", "hourly": "true"}`)),
	)
	report := func(_ context.Context, e guard.Event) { fmt.Println(e.Kind, e.Paths) }
	llm := middleware.Wrap(model, middleware.ToolArgValidation(guard.WithEventHandler(report)))

	resp, err := llm.GenerateContent(context.Background(),
		[]llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "Hourly weather in Paris for 3 days?")},
		llms.WithTools([]llms.Tool{weather}))
	if err != nil {
		panic(err)
	}
	fmt.Println("model calls:", len(model.Requests()))
	fmt.Println("the caller gets:", resp.Choices[0].ToolCalls[0].FunctionCall.Arguments)
	// Output:
	// repaired [number_string at /days bool_string at /hourly]
	// model calls: 1
	// the caller gets: {"city":"Paris","days":3,"hourly":true}
}

// A model invents a parameter the tool does not have. The schema does not
// say "additionalProperties": false, so by default the call passes; with
// WithClosedObjects the model is asked again without it.
func ExampleWithClosedObjects() {
	search := llms.Tool{Type: "function", Function: &llms.FunctionDefinition{
		Name: "search",
		Parameters: map[string]any{
			"type":       "object",
			"properties": map[string]any{"query": map[string]any{"type": "string"}},
			"required":   []any{"query"},
		},
	}}
	model := fakemodel.New(
		fakemodel.ToolCalls(fakemodel.Call("search", `{"query": "toolguard", "verbose": true}`)),
		fakemodel.ToolCalls(fakemodel.Call("search", `{"query": "toolguard"}`)),
	)
	llm := middleware.Wrap(model, middleware.ToolArgValidation(guard.WithClosedObjects()))

	resp, err := llm.GenerateContent(context.Background(),
		[]llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "Search for toolguard.")},
		llms.WithTools([]llms.Tool{search}))
	if err != nil {
		panic(err)
	}
	reask := model.Requests()[1].Messages
	fmt.Println(reask[len(reask)-1].Parts[0].(llms.ToolCallResponse).Content)
	fmt.Println("the caller gets:", resp.Choices[0].ToolCalls[0].FunctionCall.Arguments)
	// Output:
	// Invalid arguments for tool "search": 1 error.
	// - /verbose: unexpected property; allowed properties: "query", got true
	// Call search again with corrected arguments.
	// the caller gets: {"query": "toolguard"}
}
