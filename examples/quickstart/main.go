// Command quickstart shows toolguard catching a bad tool call, feeding the
// errors back to the model and passing on the corrected call. It runs
// offline: the model is a scripted fake that makes the mistakes real models
// make (a number where a string belongs, null for an optional field).
//
//	go run ./examples/quickstart
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/fakemodel"
	"github.com/toolguard/toolguard/validation"
)

// WeatherArgs are the arguments of the get_weather tool. Its JSON Schema is
// inferred from the struct: city is required, units is optional.
type WeatherArgs struct {
	City  string `json:"city" jsonschema:"the city, e.g. Paris"`
	Units Units  `json:"units,omitempty"`
}

// Units is a temperature unit.
type Units string

// JSONSchema restricts Units to the values the tool understands.
func (Units) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{Type: "string", Enum: []any{"celsius", "fahrenheit"}}
}

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, out io.Writer) error {
	weather := llms.Tool{Type: "function", Function: &llms.FunctionDefinition{
		Name:        "get_weather",
		Description: "Current weather in a city.",
		Parameters:  validation.Typed[WeatherArgs](),
	}}

	// The model's script: a bad call, the corrected call, the answer.
	model := fakemodel.New(
		fakemodel.ToolCalls(fakemodel.Call("get_weather", `{"city": 75001, "units": null}`)),
		fakemodel.ToolCalls(fakemodel.Call("get_weather", `{"city": "Paris"}`)),
		fakemodel.Text("It is 18 °C and sunny in Paris."),
	)

	llm := middleware.Wrap(model,
		middleware.ToolArgValidation(middleware.WithEventHandler(func(_ context.Context, e middleware.Event) {
			switch e.Kind {
			case middleware.EventStripped:
				fmt.Fprintf(out, "  toolguard: removed empty values at %s\n", strings.Join(e.Paths, ", "))
			case middleware.EventInvalid:
				fmt.Fprintf(out, "  toolguard: %s has invalid arguments\n", e.CallID)
			}
		})),
		trace(out), // innermost: sees every raw model call
	)

	msgs := []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeSystem, "You answer weather questions with the get_weather tool."),
		llms.TextParts(llms.ChatMessageTypeHuman, "What's the weather in Paris?"),
	}
	fmt.Fprintln(out, "user: What's the weather in Paris?")
	for range 5 {
		resp, err := llm.GenerateContent(ctx, msgs, llms.WithTools([]llms.Tool{weather}))
		if err != nil {
			return err
		}
		choice := resp.Choices[0]
		if len(choice.ToolCalls) == 0 {
			fmt.Fprintf(out, "assistant: %s\n\n", choice.Content)
			fmt.Fprintf(out, "%d model calls; the tool ran once, with valid arguments.\n", len(model.Requests()))
			return nil
		}
		for _, tc := range choice.ToolCalls {
			result := getWeather(tc.FunctionCall.Arguments)
			fmt.Fprintf(out, "agent runs %s(%s) -> %s\n", tc.FunctionCall.Name, tc.FunctionCall.Arguments, result)
			msgs = append(msgs,
				llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{tc}},
				llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{
					llms.ToolCallResponse{ToolCallID: tc.ID, Name: tc.FunctionCall.Name, Content: result},
				}})
		}
	}
	return fmt.Errorf("quickstart: the model did not finish")
}

// trace is a middleware that prints the feedback a re-ask carries and the
// model's raw answer.
func trace(out io.Writer) middleware.Middleware {
	return middleware.Func(func(next middleware.Handler) middleware.Handler {
		return func(ctx context.Context, req *middleware.Request) (*llms.ContentResponse, error) {
			last := req.Messages[len(req.Messages)-1]
			if last.Role == llms.ChatMessageTypeTool {
				if r, ok := last.Parts[0].(llms.ToolCallResponse); ok && strings.HasPrefix(r.Content, "Invalid arguments") {
					fmt.Fprintf(out, "  toolguard -> model, tool message for %s:\n", r.ToolCallID)
					for _, line := range strings.Split(r.Content, "\n") {
						fmt.Fprintf(out, "    | %s\n", line)
					}
				}
			}
			resp, err := next(ctx, req)
			if err != nil {
				return nil, err
			}
			for _, ch := range resp.Choices {
				for _, tc := range ch.ToolCalls {
					fmt.Fprintf(out, "model: %s(%s)\n", tc.FunctionCall.Name, tc.FunctionCall.Arguments)
				}
				if ch.Content != "" {
					fmt.Fprintf(out, "model: %q\n", ch.Content)
				}
			}
			return resp, nil
		}
	})
}

// getWeather is the tool. It receives only arguments that passed validation.
func getWeather(string) string {
	return `{"temperature_c": 18, "sky": "sunny"}`
}
