package otelguard_test

import (
	"context"
	"strconv"
	"sync"
	"testing"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/middleware"
	"go.opentelemetry.io/otel/sdk/trace"
)

// fixOnReask answers a fresh conversation with an invalid call and a re-ask
// with a valid one, whatever the order concurrent callers reach it in.
type fixOnReask struct{}

func (fixOnReask) GenerateContent(_ context.Context, msgs []llms.MessageContent, _ ...llms.CallOption) (*llms.ContentResponse, error) {
	args := `{"city": 1}`
	if len(msgs) > 1 {
		args = `{"city": "Paris"}`
	}
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{{ToolCalls: []llms.ToolCall{{
		ID: "c" + strconv.Itoa(len(msgs)), Type: "function",
		FunctionCall: &llms.FunctionCall{Name: "get_weather", Arguments: args},
	}}}}}, nil
}

func (m fixOnReask) Call(ctx context.Context, prompt string, opts ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, m, prompt, opts...)
}

// TestConcurrentCallsNeverCrossParent: calls made at once, each naming its
// own model, each get one call span whose two chat spans (the invalid
// attempt and the re-ask) and events are its own.
func TestConcurrentCallsNeverCrossParent(t *testing.T) {
	t.Parallel()
	const callers = 16
	tel := newTelemetry(t)
	llm := middleware.Wrap(fixOnReask{}, tel.middleware(), middleware.ToolArgValidation())
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := llm.GenerateContent(context.Background(), human("hi"),
				llms.WithTools([]llms.Tool{weatherTool}), llms.WithModel("m"+strconv.Itoa(i)))
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	byID := map[string]trace.ReadOnlySpan{}
	parents := tel.ended("toolguard.generate_content")
	if len(parents) != callers {
		t.Fatalf("%d call spans, want %d", len(parents), callers)
	}
	for _, p := range parents {
		byID[p.SpanContext().SpanID().String()] = p
		if len(p.Events()) != 2 || p.Events()[0].Name != "toolguard.invalid" || p.Events()[1].Name != "toolguard.reask" {
			t.Errorf("call span of %s has events %v, want invalid then reask", attr(p.Attributes(), "gen_ai.request.model"), p.Events())
		}
	}
	children := map[string]int{}
	for _, s := range tel.ended("") {
		if s.Name() == "toolguard.generate_content" {
			continue
		}
		p, ok := byID[s.Parent().SpanID().String()]
		if !ok {
			t.Errorf("span %q has no call span as parent", s.Name())
			continue
		}
		model := attr(p.Attributes(), "gen_ai.request.model")
		if s.Name() != "chat "+model || s.SpanContext().TraceID() != p.SpanContext().TraceID() {
			t.Errorf("span %q is under the call span of %s", s.Name(), model)
		}
		children[model]++
	}
	for model, n := range children {
		if n != 2 {
			t.Errorf("call span of %s has %d chat spans, want 2", model, n)
		}
	}
	if len(children) != callers {
		t.Errorf("%d call spans have chat spans, want %d", len(children), callers)
	}
}
