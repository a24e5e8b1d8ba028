package middleware_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/cenkalti/backoff/v4"
	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/fakemodel"
)

// traceObserver records what it is told, in order.
type traceObserver struct {
	name string
	mu   *sync.Mutex
	log  *[]string
}

type ctxMark struct{}

func (o traceObserver) add(s string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	*o.log = append(*o.log, o.name+" "+s)
}

func (o traceObserver) OnEvent(_ context.Context, e middleware.Event) {
	o.add("event " + string(e.Kind))
}

func (o traceObserver) OnModelCall(ctx context.Context, req *middleware.Request) (context.Context, func(*llms.ContentResponse, error)) {
	o.add(fmt.Sprintf("request (%d messages)", len(req.Messages)))
	return context.WithValue(ctx, ctxMark{}, o.name), func(resp *llms.ContentResponse, err error) {
		if err != nil {
			o.add("failed")
			return
		}
		o.add("answered")
	}
}

// TestObserverSeesEveryRequestAndEvent: an observer in the context is told
// of each request that reaches the model and of each event, in the order
// they happen (a re-ask is announced before its request), and the context
// it returns is the one the model is called with.
func TestObserverSeesEveryRequestAndEvent(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var log []string
	var seenByModel []any
	m := fakemodel.New(
		fakemodel.Fail(errors.New("API returned unexpected status code: 503")),
		fakemodel.ToolCalls(fakemodel.Call("get_weather", `{"city": 1}`)),
		fakemodel.Func(func(ctx context.Context, _ []llms.MessageContent, _ llms.CallOptions) (*llms.ContentResponse, error) {
			seenByModel = append(seenByModel, ctx.Value(ctxMark{}))
			return &llms.ContentResponse{Choices: []*llms.ContentChoice{{ToolCalls: []llms.ToolCall{{ID: "c2", Type: "function",
				FunctionCall: &llms.FunctionCall{Name: "get_weather", Arguments: `{"city": "Paris"}`}}}}}}, nil
		}),
	)
	llm := middleware.Wrap(m,
		middleware.ToolArgValidation(),
		middleware.ModelRetry(middleware.WithBackOff(func() backoff.BackOff { return &backoff.ZeroBackOff{} })),
	)
	ctx := middleware.WithObserver(context.Background(), traceObserver{"outer", &mu, &log})
	ctx = middleware.WithObserver(ctx, traceObserver{"inner", &mu, &log})
	if _, err := llm.GenerateContent(ctx, question, llms.WithTools([]llms.Tool{weatherTool})); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"outer request (2 messages)", "inner request (2 messages)", "inner failed", "outer failed",
		"outer event retry", "inner event retry",
		"outer request (2 messages)", "inner request (2 messages)", "inner answered", "outer answered",
		"outer event invalid", "inner event invalid",
		"outer event reask", "inner event reask",
		"outer request (4 messages)", "inner request (4 messages)", "inner answered", "outer answered",
	}
	if !slices.Equal(log, want) {
		t.Errorf("observers were told:\n%q\nwant:\n%q", log, want)
	}
	if !slices.Equal(seenByModel, []any{"inner"}) {
		t.Errorf("the model saw context marks %v, want the innermost observer's context", seenByModel)
	}
}

// Without an observer nothing changes, and a nil observer adds none.
func TestWithObserverNil(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	if got := middleware.WithObserver(ctx, nil); got != ctx || middleware.ObserverFrom(got) != nil {
		t.Errorf("WithObserver(ctx, nil) = %v, want ctx unchanged", got)
	}
}
