package agent_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/toolguard/toolguard/agent"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/fakemodel"
)

// midBatch is a batch of four calls, at most two at a time: a payment, a
// slow sibling, one that panics (or stops the run) once the payment has
// returned, and one that never starts. The slow sibling returns only once
// the third has failed, so it is still running when the run is ended.
type midBatch struct {
	payments atomic.Int32
	paid     chan struct{}
	failing  chan struct{}
	last     atomic.Int32
}

func newMidBatch() *midBatch {
	return &midBatch{paid: make(chan struct{}), failing: make(chan struct{})}
}

func (m *midBatch) tools(fail func()) []agent.Tool {
	tool := func(name string, fn func() string) agent.Tool {
		return agent.NewSchemaTool(name, name, nil, func(context.Context, map[string]any) (string, error) { return fn(), nil })
	}
	return []agent.Tool{
		tool("transfer_money", func() string { m.payments.Add(1); close(m.paid); return "paid, ref P-1" }),
		tool("get_rate", func() string { <-m.failing; return "1.08" }),
		tool("lookup_fee", func() string { <-m.paid; close(m.failing); fail(); return "unreachable" }),
		tool("get_balance", func() string { m.last.Add(1); return "1000.00" }),
	}
}

func (m *midBatch) model() *fakemodel.Model {
	return fakemodel.New(fakemodel.ToolCalls(
		fakemodel.Call("transfer_money", `{}`), fakemodel.Call("get_rate", `{}`),
		fakemodel.Call("lookup_fee", `{}`), fakemodel.Call("get_balance", `{}`)))
}

// A tool that panics mid-batch ends the run with a *ToolPanicError naming
// it; the process survives; the sibling still running finishes and is
// recorded; the call not started never starts; the turn is recorded whole,
// with or without a checkpointer, and the next run on the thread shows the
// model every outcome, the payment's result first.
func TestToolPanicMidBatch(t *testing.T) {
	t.Parallel()
	for _, checkpointed := range []bool{false, true} {
		t.Run(fmt.Sprintf("checkpointer %v", checkpointed), func(t *testing.T) {
			t.Parallel()
			m := newMidBatch()
			model := m.model()
			cp := new(agent.MemoryCheckpointer)
			opts := []agent.Option{agent.WithMaxConcurrency(2)}
			if checkpointed {
				opts = append(opts, agent.WithCheckpointer(cp))
			}
			a := agent.New(model, m.tools(func() { panic(fmt.Errorf("fee table: %w", errors.ErrUnsupported)) }), opts...)
			ctx := middleware.WithThread(context.Background(), "panic")
			res, err := a.Run(ctx, "pay")
			var perr *agent.ToolPanicError
			if !errors.As(err, &perr) || perr.Tool != "lookup_fee" || perr.CallID != "call_3" || !errors.Is(err, errors.ErrUnsupported) {
				t.Fatalf("Run() error = %v, want a *ToolPanicError for lookup_fee's call_3 wrapping the panic's error", err)
			}
			if n := m.payments.Load(); n != 1 || m.last.Load() != 0 {
				t.Errorf("transfer_money ran %d times, get_balance %d; want 1 and 0", n, m.last.Load())
			}
			wantMsgs := []string{"paid, ref P-1", "1.08", "The run stopped while this call was running, so whether it took effect is unknown. Check before calling it again.",
				"The run stopped before this call started, so it did not run."}
			if got := toolMessages(res.Messages); !slices.Equal(got, wantMsgs) {
				t.Errorf("tool messages:\n%q\nwant\n%q", got, wantMsgs)
			}
			if len(res.Steps) != 4 || res.Steps[0].Result != "paid, ref P-1" || res.Steps[1].Result != "1.08" ||
				!errors.As(res.Steps[2].Err, &perr) || !errors.Is(res.Steps[3].Err, agent.ErrCallNotStarted) {
				t.Errorf("steps = %+v, want the payment, the rate, the panic and the call that never started", res.Steps)
			}
			if !checkpointed {
				return
			}
			if _, err := a.Resume(ctx, nil); !errors.Is(err, agent.ErrNothingToResume) {
				t.Errorf("Resume(nil) after the panic: error = %v, want ErrNothingToResume (the run ended; the next Run goes on)", err)
			}
			model.Append(fakemodel.Text("Paid; I will check the fee."))
			if _, err := a.Run(ctx, "and?"); err != nil {
				t.Fatalf("the next Run() error = %v", err)
			}
			reqs := model.Requests()
			if got := toolMessages(reqs[len(reqs)-1].Messages); !slices.Equal(got, wantMsgs) {
				t.Errorf("the next run showed the model:\n%q\nwant\n%q", got, wantMsgs)
			}
		})
	}
}

// A context cancelled mid-batch leaves the thread's run cut off with the
// calls that finished recorded: Resume shows the model the payment's
// result, that the running call's outcome is unknown, and that the call
// never started did not run — and runs none of them again.
func TestCancelMidBatchRecordsFinishedCalls(t *testing.T) {
	t.Parallel()
	m := newMidBatch()
	model := m.model()
	cp := new(agent.MemoryCheckpointer)
	ctx, cancel := context.WithCancel(middleware.WithThread(context.Background(), "cancel"))
	defer cancel()
	a := agent.New(model, m.tools(func() { cancel() }), agent.WithMaxConcurrency(2), agent.WithCheckpointer(cp))
	res, err := a.Run(ctx, "pay")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run() error = %v, want context.Canceled", err)
	}
	if len(res.Steps) != 1 || res.Steps[0].Result != "paid, ref P-1" || len(toolMessages(res.Messages)) != 0 {
		t.Errorf("steps %+v, messages %q; want the payment alone and a transcript before the turn", res.Steps, render(res.Messages))
	}
	thread := middleware.WithThread(context.Background(), "cancel")
	if _, err := a.Pending(thread); !errors.Is(err, agent.ErrRunUnfinished) {
		t.Errorf("Pending() of a cut-off run: error = %v, want ErrRunUnfinished", err)
	}
	model.Append(fakemodel.Text("Paid."))
	res, err = a.Resume(thread, nil)
	if err != nil {
		t.Fatalf("Resume(nil) error = %v", err)
	}
	// lookup_fee and get_rate were both running when the context ended.
	want := []string{"paid, ref P-1", "The run stopped while this call was running, so whether it took effect is unknown. Check before calling it again.",
		"The run stopped while this call was running, so whether it took effect is unknown. Check before calling it again.",
		"The run stopped before this call started, so it did not run."}
	if got := toolMessages(res.Messages); !slices.Equal(got, want) {
		t.Errorf("the resumed run shows the model:\n%q\nwant\n%q", got, want)
	}
	if len(res.Steps) != 4 || res.Steps[0].Err != nil || !errors.Is(res.Steps[1].Err, agent.ErrCallInterrupted) ||
		!errors.Is(res.Steps[2].Err, agent.ErrCallInterrupted) || !errors.Is(res.Steps[3].Err, agent.ErrCallNotStarted) {
		t.Errorf("steps = %+v", res.Steps)
	}
	if m.payments.Load() != 1 || m.last.Load() != 0 {
		t.Errorf("transfer_money ran %d times, get_balance %d; want 1 and 0", m.payments.Load(), m.last.Load())
	}
}

// A panic is never retried: ToolRetry does not see it, even for an
// idempotent tool.
func TestToolPanicNotRetried(t *testing.T) {
	t.Parallel()
	var runs atomic.Int32
	boom := agent.Idempotent(agent.NewSchemaTool("boom", "Panics.", nil, func(context.Context, map[string]any) (string, error) {
		runs.Add(1)
		panic("kaboom")
	}))
	model := fakemodel.New(fakemodel.ToolCalls(fakemodel.Call("boom", `{}`)))
	_, err := agent.New(model, []agent.Tool{boom}, agent.WithToolMiddleware(agent.ToolRetry())).Run(context.Background(), "go")
	var perr *agent.ToolPanicError
	if !errors.As(err, &perr) || runs.Load() != 1 {
		t.Errorf("Run() error = %v, boom ran %d times; want a *ToolPanicError after 1 run", err, runs.Load())
	}
}
