package middleware_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/repair"
)

// benchModel answers every call with a fresh response holding one tool call
// (the middleware writes into the response it is handed, so a response is
// never reused). It applies the call options as a provider would, and
// records nothing, unlike fakemodel, so that its cost stays flat.
type benchModel struct{ name, args string }

func (m *benchModel) GenerateContent(_ context.Context, _ []llms.MessageContent, options ...llms.CallOption) (*llms.ContentResponse, error) {
	var opts llms.CallOptions
	for _, o := range options {
		o(&opts)
	}
	fn := &llms.FunctionCall{Name: m.name, Arguments: m.args}
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{{
		StopReason: "tool_calls",
		ToolCalls:  []llms.ToolCall{{ID: "call_1", Type: "function", FunctionCall: fn}},
		FuncCall:   fn,
	}}}, nil
}

func (m *benchModel) Call(ctx context.Context, prompt string, options ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, m, prompt, options...)
}

// benchSchema is a BFCL tool's schema (live_multiple ChaDri.change_drink),
// built fresh on each call, as a caller that rebuilds its tools would.
func benchSchema() map[string]any {
	return map[string]any{
		"$schema": "http://json-schema.org/draft-07/schema#",
		"type":    "object",
		"properties": map[string]any{
			"drink_id": map[string]any{"type": "string", "description": "The unique identifier of the drink to be changed."},
			"new_preferences": map[string]any{
				"type":        "object",
				"description": "The updated preferences for the drink order.",
				"properties": map[string]any{
					"size":                 map[string]any{"type": "string", "enum": []any{"small", "medium", "large"}, "default": "medium"},
					"temperature":          map[string]any{"type": "string", "enum": []any{"cold", "warm", "hot"}, "default": "cold"},
					"sweetness_level":      map[string]any{"type": "string", "enum": []any{"none", "light", "regular", "extra"}, "default": "regular"},
					"milk_type":            map[string]any{"type": "string", "enum": []any{"regular", "soy", "almond", "coconut"}, "default": "regular"},
					"special_instructions": map[string]any{"type": "string", "default": ""},
				},
			},
		},
		"required": []any{"drink_id", "new_preferences"},
	}
}

const (
	benchTool = "ChaDri.change_drink"
	benchArgs = `{"drink_id": "latte", "new_preferences": {"size": "large", "milk_type": "coconut", "sweetness_level": "extra", "temperature": "hot", "special_instructions": "served boiling hot"}}`
	// benchArgsNull carries the null a model sends for an optional field
	// it has no value for; SchemaAware strip removes it without a re-ask.
	// benchArgsInvalid has a size outside the enum, which nothing repairs.
	benchArgsInvalid = `{"drink_id": "latte", "new_preferences": {"size": "huge", "milk_type": "coconut"}}`
	benchArgsNull    = `{"drink_id": "latte", "new_preferences": {"size": "large", "milk_type": "coconut", "sweetness_level": "extra", "temperature": "hot", "special_instructions": null}}`
)

func benchTools(schema map[string]any) []llms.Tool {
	return []llms.Tool{{Type: "function", Function: &llms.FunctionDefinition{
		Name: benchTool, Description: "Change the preferences of a drink order.", Parameters: schema,
	}}}
}

// BenchmarkWrap measures one GenerateContent call that returns one valid
// tool call: "bare" is the model alone; "validation" is
// Wrap(model, ToolArgValidation()) with the same tools (the same schema map)
// on every call, so the schema cache answers by identity;
// "validation-fresh-schema-map" builds a new but equal schema map and tools
// option for every call, so the cache fingerprints the content (one marshal
// and one SHA-256) before it finds the compiled schema; "bare-fresh-schema-map"
// builds the same map for the bare model, to separate the cost of building
// it; "validation-null-stripped" gets a call with a null on an optional key
// that SchemaAware strip removes without a re-ask; "validation-coerced" gets
// the arguments double-encoded, which the default repair.Coercions decodes
// without a re-ask; "validation-invalid" gets a value outside an enum on
// every attempt (three model calls, then it fails open), with the default
// coercions tried on each and, in "validation-invalid-repair-none", without.
// The stack's overhead over decoding is (validation − bare) / decode-args.
func BenchmarkWrap(b *testing.B) {
	ctx := context.Background()
	msgs := []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "Make my latte large, hot, with coconut milk.")}
	sameOpts := []llms.CallOption{llms.WithTools(benchTools(benchSchema()))}
	freshOpts := func() []llms.CallOption { return []llms.CallOption{llms.WithTools(benchTools(benchSchema()))} }
	bare := &benchModel{name: benchTool, args: benchArgs}
	validated := middleware.Wrap(bare, middleware.ToolArgValidation())
	withNull := middleware.Wrap(&benchModel{name: benchTool, args: benchArgsNull}, middleware.ToolArgValidation())
	doubled, _ := json.Marshal(benchArgs)
	coerced := middleware.Wrap(&benchModel{name: benchTool, args: string(doubled)}, middleware.ToolArgValidation())
	invalid := &benchModel{name: benchTool, args: benchArgsInvalid}
	// The invalid call is given up on after the re-asks: a give_up event,
	// which without a handler is logged at Warn. A program that expects
	// it routes it; so does the benchmark, to measure the re-asks, not slog.
	quiet := guard.WithEventHandler(func(context.Context, guard.Event) {})
	reasked := middleware.Wrap(invalid, middleware.ToolArgValidation(quiet))
	reaskedNone := middleware.Wrap(invalid, middleware.ToolArgValidation(guard.WithRepair(repair.None()), quiet))

	tests := []struct {
		name  string
		model llms.Model
		opts  func() []llms.CallOption
		want  string
	}{
		{"bare", bare, func() []llms.CallOption { return sameOpts }, benchArgs},
		{"validation", validated, func() []llms.CallOption { return sameOpts }, benchArgs},
		{"bare-fresh-schema-map", bare, freshOpts, benchArgs},
		{"validation-fresh-schema-map", validated, freshOpts, benchArgs},
		{"validation-null-stripped", withNull, func() []llms.CallOption { return sameOpts },
			`{"drink_id":"latte","new_preferences":{"milk_type":"coconut","size":"large","sweetness_level":"extra","temperature":"hot"}}`},
		{"validation-coerced", coerced, func() []llms.CallOption { return sameOpts },
			`{"drink_id":"latte","new_preferences":{"milk_type":"coconut","size":"large","special_instructions":"served boiling hot","sweetness_level":"extra","temperature":"hot"}}`},
		{"validation-invalid", reasked, func() []llms.CallOption { return sameOpts }, benchArgsInvalid},
		{"validation-invalid-repair-none", reaskedNone, func() []llms.CallOption { return sameOpts }, benchArgsInvalid},
	}
	// "decode-args" is the floor the stack's overhead is measured against:
	// decoding the call's arguments into a map, numbers as json.Number, as
	// any consumer of the call must.
	b.Run("decode-args", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			d := json.NewDecoder(strings.NewReader(benchArgs))
			d.UseNumber()
			var m map[string]any
			if err := d.Decode(&m); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, tc := range tests {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				resp, err := tc.model.GenerateContent(ctx, msgs, tc.opts()...)
				if err != nil {
					b.Fatal(err)
				}
				if got := resp.Choices[0].ToolCalls[0].FunctionCall.Arguments; got != tc.want {
					b.Fatalf("arguments = %s, want %s", got, tc.want)
				}
			}
		})
	}
}
