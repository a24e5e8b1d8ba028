// Command quickstart shows toolguard catching a bad tool call, feeding the
// errors back to the model and running the tool only with the corrected
// call, in a toolguard agent with a typed tool.
//
// It runs offline, always, on a scripted fake model that makes the mistakes
// real models make (a number where a string belongs, null for an optional
// field); an OPENAI_API_KEY in the environment changes nothing. The -openai
// flag runs it on OpenAI instead (it needs OPENAI_API_KEY; OPENAI_MODEL
// picks the model), and the first line of output says which model runs.
//
//	go run ./examples/quickstart          # offline, on the fake model
//	go run ./examples/quickstart -openai  # on OpenAI
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/openai"
	"github.com/toolguard/toolguard/agent"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/fakemodel"
	"github.com/toolguard/toolguard/toolstage"
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
	useOpenAI := flag.Bool("openai", false, "run on OpenAI (needs OPENAI_API_KEY) instead of the scripted fake model")
	flag.Parse()
	model, err := chooseModel(os.Stdout, *useOpenAI)
	if err != nil {
		log.Fatal(err)
	}
	if err := run(context.Background(), os.Stdout, model); err != nil {
		log.Fatal(err)
	}
}

// chooseModel returns OpenAI when asked with -openai, else the scripted fake
// model, whatever the environment holds, and says which it chose.
func chooseModel(out io.Writer, useOpenAI bool) (llms.Model, error) {
	if !useOpenAI {
		fmt.Fprintln(out, "Running offline on a scripted fake model (-openai runs on OpenAI).")
		return scriptedModel(), nil
	}
	if os.Getenv("OPENAI_API_KEY") == "" {
		return nil, errors.New("-openai needs OPENAI_API_KEY")
	}
	fmt.Fprintln(out, "Running on OpenAI (OPENAI_MODEL picks the model).")
	return openai.New()
}

// scriptedModel makes a bad call, then the corrected call, then answers.
func scriptedModel() *fakemodel.Model {
	return fakemodel.New(
		fakemodel.ToolCalls(fakemodel.Call("get_weather", `{"city": 75001, "units": null}`)),
		fakemodel.ToolCalls(fakemodel.Call("get_weather", `{"city": "Paris"}`)),
		fakemodel.Text("It is 18 °C and sunny in Paris."),
	)
}

func run(ctx context.Context, out io.Writer, model llms.Model) error {
	// The tool: it receives only arguments that passed validation, decoded
	// into WeatherArgs.
	weather := toolstage.NewTool("get_weather", "Current weather in a city.",
		func(_ context.Context, args WeatherArgs) (string, error) {
			fmt.Fprintf(out, "tool get_weather runs with city=%q units=%q\n", args.City, args.Units)
			return `{"temperature_c": 18, "sky": "sunny"}`, nil
		})

	a := agent.New(model, toolstage.New([]toolstage.Tool{weather}), agent.WithSystemPrompt("You answer weather questions with the get_weather tool."), agent.WithMiddleware(
		middleware.ToolArgValidation(guard.WithEventHandler(func(_ context.Context, e guard.Event) {
			switch e.Kind {
			case guard.EventStripped:
				fmt.Fprintf(out, "  toolguard: removed empty values at %s\n", strings.Join(e.Paths, ", "))
			case guard.EventInvalid:
				fmt.Fprintf(out, "  toolguard: %s has invalid arguments\n", e.CallID)
				printFeedback(out, e)
			}
		})),
		trace(out), // innermost: sees every raw model call
	))

	const question = "What's the weather in Paris?"
	fmt.Fprintln(out, "user:", question)
	res, err := a.Run(ctx, question)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "assistant: %s\n\n", res.Output)
	fmt.Fprintf(out, "%d model calls; the tool ran %s, with valid arguments.\n", res.ModelCalls, times(len(res.Steps)))
	return nil
}

// trace is a middleware that prints the model's raw answers.
func trace(out io.Writer) middleware.Middleware {
	return middleware.Func(func(next middleware.Handler) middleware.Handler {
		return func(ctx context.Context, req *middleware.Request) (*llms.ContentResponse, error) {
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

// printFeedback prints the tool message a re-ask sends the model about an
// invalid call.
func printFeedback(out io.Writer, e guard.Event) {
	fmt.Fprintf(out, "  toolguard -> model, tool message for %s:\n", e.CallID)
	for _, line := range strings.Split(e.Feedback, "\n") {
		fmt.Fprintf(out, "    | %s\n", line)
	}
}

func times(n int) string {
	switch n {
	case 1:
		return "once"
	case 2:
		return "twice"
	}
	return fmt.Sprintf("%d times", n)
}
