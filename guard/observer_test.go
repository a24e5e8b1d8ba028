package guard_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/toolguard/toolguard/guard"
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

// runTracer is a traceObserver that is also a RunObserver.
type runTracer struct{ traceObserver }

func (o runTracer) OnRun(ctx context.Context) (context.Context, func(error)) {
	o.add("run, ctx mark " + mark(ctx))
	return context.WithValue(ctx, ctxMark{}, o.name), func(err error) { o.add("run ended: " + errText(err)) }
}

func (o runTracer) OnToolCall(ctx context.Context, call guard.Call) (context.Context, func(string, error)) {
	o.add("tool " + call.Name + " " + call.ID + ", ctx mark " + mark(ctx))
	return context.WithValue(ctx, ctxMark{}, o.name), func(result string, err error) {
		o.add("tool ended: " + result + errText(err))
	}
}

func mark(ctx context.Context) string {
	s, _ := ctx.Value(ctxMark{}).(string)
	return s
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestObserveRunAndToolCall: ObserveRun and ObserveToolCall tell each
// RunObserver in the context, outermost first, pass each the context the
// previous one returned, and end them innermost first; observers that are
// not RunObservers are skipped.
func TestObserveRunAndToolCall(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var log []string
	ctx := guard.WithObserver(context.Background(), runTracer{traceObserver{"outer", &mu, &log}})
	ctx = guard.WithObserver(ctx, traceObserver{"plain", &mu, &log})
	ctx = guard.WithObserver(ctx, runTracer{traceObserver{"inner", &mu, &log}})

	runCtx, endRun := guard.ObserveRun(ctx)
	toolCtx, endTool := guard.ObserveToolCall(runCtx, guard.Call{ID: "c1", Name: "search"})
	if got := mark(toolCtx); got != "inner" {
		t.Errorf("ObserveToolCall ctx mark = %q, want the innermost observer's", got)
	}
	endTool("found", nil)
	endRun(errors.New("boom"))
	want := []string{
		"outer run, ctx mark ", "inner run, ctx mark outer",
		"outer tool search c1, ctx mark inner", "inner tool search c1, ctx mark outer",
		"inner tool ended: found", "outer tool ended: found",
		"inner run ended: boom", "outer run ended: boom",
	}
	if !slices.Equal(log, want) {
		t.Errorf("run observers were told:\n%q\nwant:\n%q", log, want)
	}
}

// Without a RunObserver, ObserveRun and ObserveToolCall return ctx and a
// function that does nothing.
func TestObserveRunWithoutObserver(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	got, end := guard.ObserveRun(ctx)
	end(nil)
	got2, endTool := guard.ObserveToolCall(ctx, guard.Call{})
	endTool("", nil)
	if got != ctx || got2 != ctx {
		t.Errorf("ObserveRun/ObserveToolCall without observers changed the context")
	}
}

// Without an observer nothing changes, and a nil observer adds none.
func TestWithObserverNil(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	if got := guard.WithObserver(ctx, nil); got != ctx || guard.ObserverFrom(got) != nil {
		t.Errorf("WithObserver(ctx, nil) = %v, want ctx unchanged", got)
	}
}
