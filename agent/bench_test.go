package agent_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/agent"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/toolstage"
	"github.com/toolguard/toolguard/validation"
)

// runBenchModel answers a transcript ending in a tool message with text,
// anything else with one valid change_drink call. It keeps no state, so
// one model serves every iteration at a flat cost.
type runBenchModel struct{}

const runBenchArgs = `{"drink_id": "latte", "new_preferences": {"size": "large", "milk_type": "coconut", "sweetness_level": "extra", "temperature": "hot", "special_instructions": "served boiling hot"}}`

func (runBenchModel) GenerateContent(_ context.Context, msgs []llms.MessageContent, options ...llms.CallOption) (*llms.ContentResponse, error) {
	var opts llms.CallOptions
	for _, o := range options {
		o(&opts)
	}
	if n := len(msgs); n > 0 && msgs[n-1].Role == llms.ChatMessageTypeTool {
		return &llms.ContentResponse{Choices: []*llms.ContentChoice{{Content: "Done.", StopReason: "stop"}}}, nil
	}
	fn := &llms.FunctionCall{Name: "change_drink", Arguments: runBenchArgs}
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{{
		StopReason: "tool_calls",
		ToolCalls:  []llms.ToolCall{{ID: "call_1", Type: "function", FunctionCall: fn}},
	}}}, nil
}

func (m runBenchModel) Call(ctx context.Context, prompt string, options ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, m, prompt, options...)
}

// DrinkPreferences and ChangeDrinkArgs are the arguments of a BFCL tool
// (live_multiple ChaDri.change_drink) as a typed tool's struct.
type DrinkPreferences struct {
	Size                string `json:"size,omitempty"`
	Temperature         string `json:"temperature,omitempty"`
	SweetnessLevel      string `json:"sweetness_level,omitempty"`
	MilkType            string `json:"milk_type,omitempty"`
	SpecialInstructions string `json:"special_instructions,omitempty"`
}

type ChangeDrinkArgs struct {
	DrinkID        string           `json:"drink_id"`
	NewPreferences DrinkPreferences `json:"new_preferences"`
}

// BenchmarkRun measures one agent run with one valid typed tool call: the
// model asks for the call, the tool runs, the model answers. "bare" has no
// middleware; "recommended" has the recommended stack (ToolCallLimit,
// ToolArgValidation, ModelRetry). Neither has tool middlewares: this is
// the common path the tool stage must not slow down.
func BenchmarkRun(b *testing.B) {
	tool := toolstage.NewTool("change_drink", "Change the preferences of a drink order.",
		func(_ context.Context, a ChangeDrinkArgs) (string, error) { return "changed " + a.DrinkID, nil })
	for _, tc := range []struct {
		name string
		opts []any
	}{
		{"bare", nil},
		{"recommended", []any{agent.WithMiddleware(
			middleware.ToolCallLimit(guard.WithRunLimit(10)), middleware.ToolArgValidation(), middleware.ModelRetry())}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			a := build(runBenchModel{}, []toolstage.Tool{tool}, tc.opts...)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				res, err := a.Run(ctx, "Make my latte large, hot, with coconut milk.")
				if err != nil {
					b.Fatal(err)
				}
				if len(res.Steps) != 1 || res.Steps[0].Result != "changed latte" {
					b.Fatalf("steps = %+v", res.Steps)
				}
			}
		})
	}
}

// BenchmarkRunSchemaTool is BenchmarkRun with the tool as a NewSchemaTool:
// the same call, whose arguments the tool takes as a map.
func BenchmarkRunSchemaTool(b *testing.B) {
	schema := validation.Typed[ChangeDrinkArgs]().Map()
	tool := toolstage.NewSchemaTool("change_drink", "Change the preferences of a drink order.", schema,
		func(_ context.Context, args map[string]any) (string, error) {
			return fmt.Sprint("changed ", args["drink_id"]), nil
		})
	for _, tc := range []struct {
		name string
		opts []any
	}{
		{"bare", nil},
		{"recommended", []any{agent.WithMiddleware(
			middleware.ToolCallLimit(guard.WithRunLimit(10)), middleware.ToolArgValidation(), middleware.ModelRetry())}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			a := build(runBenchModel{}, []toolstage.Tool{tool}, tc.opts...)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				res, err := a.Run(ctx, "Make my latte large, hot, with coconut milk.")
				if err != nil {
					b.Fatal(err)
				}
				if len(res.Steps) != 1 || res.Steps[0].Result != "changed latte" {
					b.Fatalf("steps = %+v", res.Steps)
				}
			}
		})
	}
}
