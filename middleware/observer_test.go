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
	"github.com/toolguard/toolguard/guard"
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

func (o traceObserver) OnEvent(_ context.Context, e guard.Event) {
	o.add("event " + string(e.Kind))
}

func (o traceObserver) OnModelCall(ctx context.Context, call guard.ModelCall) (context.Context, func(guard.ModelResult)) {
	o.add(fmt.Sprintf("request (model %q)", call.Model))
	return context.WithValue(ctx, ctxMark{}, o.name), func(r guard.ModelResult) {
		if r.Err != nil {
			o.add("failed")
			return
		}
		o.add("answered")
	}
}

// The observers' own plumbing (WithObserver, ObserveRun, ObserveToolCall)
// is tested in package guard; here, that the adapter's innermost handler
// reports each request that reaches langchaingo's model, with the model its
// options name, among the stages' events.

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
		middleware.ModelRetry(guard.WithBackOff(func() backoff.BackOff { return &backoff.ZeroBackOff{} })),
	)
	ctx := guard.WithObserver(context.Background(), traceObserver{"outer", &mu, &log})
	ctx = guard.WithObserver(ctx, traceObserver{"inner", &mu, &log})
	if _, err := llm.GenerateContent(ctx, question, llms.WithTools([]llms.Tool{weatherTool}), llms.WithModel("m1")); err != nil {
		t.Fatal(err)
	}
	want := []string{
		`outer request (model "m1")`, `inner request (model "m1")`, "inner failed", "outer failed",
		"outer event retry", "inner event retry",
		`outer request (model "m1")`, `inner request (model "m1")`, "inner answered", "outer answered",
		"outer event invalid", "inner event invalid",
		"outer event reask", "inner event reask",
		`outer request (model "m1")`, `inner request (model "m1")`, "inner answered", "outer answered",
	}
	if !slices.Equal(log, want) {
		t.Errorf("observers were told:\n%q\nwant:\n%q", log, want)
	}
	if reqs := m.Requests(); len(reqs) != 3 || len(reqs[2].Messages) != 4 {
		t.Errorf("the model got %d requests, want 3, the re-ask with 4 messages", len(reqs))
	}
	if !slices.Equal(seenByModel, []any{"inner"}) {
		t.Errorf("the model saw context marks %v, want the innermost observer's context", seenByModel)
	}
}
