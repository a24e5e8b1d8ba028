package otelguard_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/cenkalti/backoff/v4"
	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/guard/otelguard"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/fakemodel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// Middleware placed outermost: one call with a transient 503, an invalid
// tool call and its correction is one span with three chat spans under it,
// and the retry, the violation and the re-ask as its events.
func ExampleMiddleware() {
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	defer func() { _ = tp.Shutdown(context.Background()) }()

	model := fakemodel.New(
		fakemodel.Fail(errors.New("API returned unexpected status code: 503")),
		fakemodel.ToolCalls(fakemodel.Call("get_weather", `{"city": 75001}`)),
		fakemodel.ToolCalls(fakemodel.Call("get_weather", `{"city": "Paris"}`)),
	)
	llm := middleware.Wrap(model,
		middleware.Observe(otelguard.New(otelguard.WithTracerProvider(tp))),
		middleware.ToolArgValidation(),
		middleware.ModelRetry(guard.WithBackOff(func() backoff.BackOff { return &backoff.ZeroBackOff{} })),
	)
	_, err := llm.GenerateContent(context.Background(),
		[]llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "Weather in Paris?")},
		llms.WithTools([]llms.Tool{weatherTool}), llms.WithModel("gpt-4o"))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range spans.Ended() {
		fmt.Printf("%s (%s)", s.Name(), s.SpanKind())
		for _, e := range s.Events() {
			fmt.Printf(" %s", e.Name)
		}
		fmt.Println()
	}
	// Output:
	// chat gpt-4o (client)
	// chat gpt-4o (client)
	// chat gpt-4o (client)
	// toolguard.generate_content (internal) toolguard.retry toolguard.invalid toolguard.reask
}
