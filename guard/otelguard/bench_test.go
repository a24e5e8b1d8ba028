package otelguard_test

import (
	"context"
	"testing"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/guard/otelguard"
	"github.com/toolguard/toolguard/middleware"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// answering is a model that answers every call with the same text and
// token usage, so a benchmark can call it b.N times.
type answering struct{}

func (answering) GenerateContent(context.Context, []llms.MessageContent, ...llms.CallOption) (*llms.ContentResponse, error) {
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{{
		Content: "hi", StopReason: "stop",
		GenerationInfo: map[string]any{"PromptTokens": 10, "CompletionTokens": 2},
	}}}, nil
}

func (m answering) Call(ctx context.Context, prompt string, opts ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, m, prompt, opts...)
}

// BenchmarkOverhead measures otelguard per model call: the bare
// wrapped model, the middleware with the no-op providers, and with the
// SDK's recording providers (every span sampled and ended, metrics
// aggregated by a manual reader, nothing exported).
func BenchmarkOverhead(b *testing.B) {
	recordingTP := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()))
	recordingMP := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	b.Cleanup(func() {
		_ = recordingTP.Shutdown(context.Background())
		_ = recordingMP.Shutdown(context.Background())
	})
	for _, bc := range []struct {
		name string
		mws  []middleware.Middleware
	}{
		{"bare", nil},
		{"noop", []middleware.Middleware{middleware.Observe(otelguard.New(
			otelguard.WithTracerProvider(tracenoop.NewTracerProvider()),
			otelguard.WithMeterProvider(metricnoop.NewMeterProvider())))}},
		{"sdk", []middleware.Middleware{middleware.Observe(otelguard.New(
			otelguard.WithTracerProvider(recordingTP),
			otelguard.WithMeterProvider(recordingMP)))}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			llm := middleware.Wrap(answering{}, bc.mws...)
			msgs := human("hello")
			opt := llms.WithModel("gpt-test")
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := llm.GenerateContent(ctx, msgs, opt); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
