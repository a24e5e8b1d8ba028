package agent_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/toolguard/toolguard/agent"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/middleware/fakemodel"
)

// counted is a tool that counts its runs and returns result.
func counted(name, result string, runs *atomic.Int32, before func()) agent.Tool {
	return agent.NewSchemaTool(name, name, nil, func(context.Context, map[string]any) (string, error) {
		runs.Add(1)
		if before != nil {
			before()
		}
		return result, nil
	})
}

const (
	unknownAnswer    = "The run stopped while this call was running, so whether it took effect is unknown. Check before calling it again."
	notStartedAnswer = "The run stopped before this call started, so it did not run."
)

// A tool that panics mid-batch ends the run with a *ToolPanicError naming
// it; the process survives; a sibling still running when it panics
// finishes and is recorded; a call not yet started never starts; the turn
// is recorded whole, with or without a checkpointer, and the next run on
// the thread shows the model every outcome, the payment's result first.
func TestToolPanicMidBatch(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name         string
		concurrency  int
		checkpointed bool
	}{
		// All three start: get_rate is running when lookup_fee panics.
		{"siblings running", 3, false},
		{"siblings running, checkpointer", 3, true},
		// One at a time: get_rate never starts.
		{"siblings not started", 1, false},
		{"siblings not started, checkpointer", 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var payments, rates, fees atomic.Int32
			paid, failing := make(chan struct{}), make(chan struct{})
			tools := []agent.Tool{
				counted("transfer_money", "paid, ref P-1", &payments, func() { close(paid) }),
				counted("lookup_fee", "unreachable", &fees, func() {
					<-paid
					close(failing)
					panic(fmt.Errorf("fee table: %w", errors.ErrUnsupported))
				}),
				counted("get_rate", "1.08", &rates, func() { <-failing }),
			}
			model := fakemodel.New(fakemodel.ToolCalls(
				fakemodel.Call("transfer_money", `{}`), fakemodel.Call("lookup_fee", `{}`), fakemodel.Call("get_rate", `{}`)))
			opts := []agent.Option{agent.WithMaxConcurrency(tc.concurrency)}
			if tc.checkpointed {
				opts = append(opts, agent.WithCheckpointer(new(agent.MemoryCheckpointer)))
			}
			a := agent.New(model, tools, opts...)
			ctx := guard.WithThread(context.Background(), "panic")
			res, err := a.Run(ctx, "pay")
			var perr *agent.ToolPanicError
			if !errors.As(err, &perr) || perr.Tool != "lookup_fee" || perr.CallID != "call_2" || !errors.Is(err, errors.ErrUnsupported) {
				t.Fatalf("Run() error = %v, want a *ToolPanicError for lookup_fee's call_2 wrapping the panic's error", err)
			}
			wantRates, rate, rateStep := int32(1), "1.08", error(nil)
			if tc.concurrency == 1 {
				wantRates, rate, rateStep = 0, notStartedAnswer, agent.ErrCallNotStarted
			}
			if payments.Load() != 1 || fees.Load() != 1 || rates.Load() != wantRates {
				t.Errorf("runs: transfer_money %d, lookup_fee %d, get_rate %d; want 1, 1, %d", payments.Load(), fees.Load(), rates.Load(), wantRates)
			}
			wantMsgs := []string{"paid, ref P-1", unknownAnswer, rate}
			if got := toolMessages(res.Messages); !slices.Equal(got, wantMsgs) {
				t.Errorf("tool messages:\n%q\nwant\n%q", got, wantMsgs)
			}
			if len(res.Steps) != 3 || res.Steps[0].Result != "paid, ref P-1" || !errors.As(res.Steps[1].Err, &perr) ||
				!errors.Is(res.Steps[2].Err, rateStep) || (rateStep == nil && res.Steps[2].Err != nil) {
				t.Errorf("steps = %+v, want the payment, the panic and get_rate (%v)", res.Steps, rateStep)
			}
			if !tc.checkpointed {
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
			if payments.Load() != 1 {
				t.Errorf("transfer_money ran %d times, want 1", payments.Load())
			}
		})
	}
}

// A context cancelled mid-batch leaves the thread's run cut off with the
// calls that finished recorded: Resume shows the model the payment's
// result, that the running calls' outcome is unknown, and that the call
// never started did not run — and runs none of them again.
func TestCancelMidBatchRecordsFinishedCalls(t *testing.T) {
	t.Parallel()
	cp := new(agent.MemoryCheckpointer)
	ctx, cancel := context.WithCancel(guard.WithThread(context.Background(), "cancel"))
	defer cancel()
	// The calls cut off return only once Run has returned: the cut always
	// comes before their results.
	release := make(chan struct{})
	var payments, rates, fees, balances atomic.Int32
	tools := []agent.Tool{
		counted("transfer_money", "paid, ref P-1", &payments, nil),
		counted("get_rate", "1.08", &rates, func() { <-release }),
		counted("lookup_fee", "0.50", &fees, func() { cancel(); <-release }),
		counted("get_balance", "1000.00", &balances, nil),
	}
	model := fakemodel.New(fakemodel.ToolCalls(fakemodel.Call("transfer_money", `{}`), fakemodel.Call("get_rate", `{}`),
		fakemodel.Call("lookup_fee", `{}`), fakemodel.Call("get_balance", `{}`)))
	// Two at a time: transfer_money and get_rate start; lookup_fee takes
	// the payment's slot and cancels; get_balance never starts.
	a := agent.New(model, tools, agent.WithMaxConcurrency(2), agent.WithCheckpointer(cp))
	res, err := a.Run(ctx, "pay")
	close(release)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run() error = %v, want context.Canceled", err)
	}
	if len(res.Steps) != 1 || res.Steps[0].Result != "paid, ref P-1" || len(toolMessages(res.Messages)) != 0 {
		t.Errorf("steps %+v, messages %q; want the payment alone and a transcript before the turn", res.Steps, render(res.Messages))
	}
	thread := guard.WithThread(context.Background(), "cancel")
	if _, err := a.Pending(thread); !errors.Is(err, agent.ErrRunUnfinished) {
		t.Errorf("Pending() of a cut-off run: error = %v, want ErrRunUnfinished", err)
	}
	model.Append(fakemodel.Text("Paid."))
	res, err = a.Resume(thread, nil)
	if err != nil {
		t.Fatalf("Resume(nil) error = %v", err)
	}
	want := []string{"paid, ref P-1", unknownAnswer, unknownAnswer, notStartedAnswer}
	if got := toolMessages(res.Messages); !slices.Equal(got, want) {
		t.Errorf("the resumed run shows the model:\n%q\nwant\n%q", got, want)
	}
	if len(res.Steps) != 4 || res.Steps[0].Err != nil || !errors.Is(res.Steps[1].Err, agent.ErrCallInterrupted) ||
		!errors.Is(res.Steps[2].Err, agent.ErrCallInterrupted) || !errors.Is(res.Steps[3].Err, agent.ErrCallNotStarted) {
		t.Errorf("steps = %+v", res.Steps)
	}
	// get_rate was started; whether its tool got to run before the cut
	// is its own business (outcome unknown), but it never ran twice.
	if payments.Load() != 1 || rates.Load() > 1 || fees.Load() != 1 || balances.Load() != 0 {
		t.Errorf("runs: transfer_money %d, get_rate %d, lookup_fee %d, get_balance %d; want 1, at most 1, 1, 0",
			payments.Load(), rates.Load(), fees.Load(), balances.Load())
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
