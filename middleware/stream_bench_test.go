package middleware_test

import (
	"context"
	"testing"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/fakemodel"
)

// BenchmarkStreamGate measures what ToolArgValidation's streaming gate adds
// to a streamed call: 100 text chunks then one tool call in two deltas, as
// langchaingo's OpenAI client streams them, with and without the gate.
func BenchmarkStreamGate(b *testing.B) {
	chunks := make([]string, 0, 102)
	for range 100 {
		chunks = append(chunks, "some words ")
	}
	chunks = append(chunks, deltaStart, deltaArgs)
	tools := llms.WithTools([]llms.Tool{weatherTool})
	streaming := llms.WithStreamingFunc(func(context.Context, []byte) error { return nil })
	for _, bc := range []struct {
		name string
		mws  []middleware.Middleware
		opts []llms.CallOption
	}{
		{"bare, streaming", nil, []llms.CallOption{tools, streaming}},
		{"ToolArgValidation, not streaming", []middleware.Middleware{middleware.ToolArgValidation()}, []llms.CallOption{tools}},
		{"ToolArgValidation, streaming", []middleware.Middleware{middleware.ToolArgValidation()}, []llms.CallOption{tools, streaming}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				m := middleware.Wrap(fakemodel.New(streams(callResp("c1", `{"city": "Paris"}`), chunks...)), bc.mws...)
				b.StartTimer()
				if _, err := m.GenerateContent(context.Background(), question, bc.opts...); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
