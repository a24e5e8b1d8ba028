package agent_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/toolguard/toolguard/agent"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/middleware/fakemodel"
	"github.com/toolguard/toolguard/toolstage"
)

// counted is a tool that counts its runs and returns result.
func counted(name, result string, runs *atomic.Int32, before func()) toolstage.Tool {
	return toolstage.NewSchemaTool(name, name, nil, func(context.Context, map[string]any) (string, error) {
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
			tools := []toolstage.Tool{
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
			opts := []any{toolstage.WithMaxConcurrency(tc.concurrency)}
			if tc.checkpointed {
				opts = append(opts, agent.WithCheckpointer(new(toolstage.MemoryCheckpointer)))
			}
			a := build(model, tools, opts...)
			ctx := guard.WithThread(context.Background(), "panic")
			res, err := a.Run(ctx, "pay")
			var perr *toolstage.ToolPanicError
			if !errors.As(err, &perr) || perr.Tool != "lookup_fee" || perr.CallID != "call_2" || !errors.Is(err, errors.ErrUnsupported) {
				t.Fatalf("Run() error = %v, want a *ToolPanicError for lookup_fee's call_2 wrapping the panic's error", err)
			}
			wantRates, rate, rateStep := int32(1), "1.08", error(nil)
			if tc.concurrency == 1 {
				wantRates, rate, rateStep = 0, notStartedAnswer, toolstage.ErrCallNotStarted
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
	cp := new(toolstage.MemoryCheckpointer)
	ctx, cancel := context.WithCancel(guard.WithThread(context.Background(), "cancel"))
	defer cancel()
	// The calls cut off return only once Run has returned: the cut always
	// comes before their results.
	release := make(chan struct{})
	var payments, rates, fees, balances atomic.Int32
	tools := []toolstage.Tool{
		counted("transfer_money", "paid, ref P-1", &payments, nil),
		counted("get_rate", "1.08", &rates, func() { <-release }),
		counted("lookup_fee", "0.50", &fees, func() { cancel(); <-release }),
		counted("get_balance", "1000.00", &balances, nil),
	}
	model := fakemodel.New(fakemodel.ToolCalls(fakemodel.Call("transfer_money", `{}`), fakemodel.Call("get_rate", `{}`),
		fakemodel.Call("lookup_fee", `{}`), fakemodel.Call("get_balance", `{}`)))
	// Two at a time: transfer_money and get_rate start; lookup_fee takes
	// the payment's slot and cancels; get_balance never starts.
	a := agent.New(model, toolstage.New(tools, toolstage.WithMaxConcurrency(2)), agent.WithCheckpointer(cp))
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
	if len(res.Steps) != 4 || res.Steps[0].Err != nil || !errors.Is(res.Steps[1].Err, toolstage.ErrCallInterrupted) ||
		!errors.Is(res.Steps[2].Err, toolstage.ErrCallInterrupted) || !errors.Is(res.Steps[3].Err, toolstage.ErrCallNotStarted) {
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
	boom := toolstage.Idempotent(toolstage.NewSchemaTool("boom", "Panics.", nil, func(context.Context, map[string]any) (string, error) {
		runs.Add(1)
		panic("kaboom")
	}))
	model := fakemodel.New(fakemodel.ToolCalls(fakemodel.Call("boom", `{}`)))
	_, err := agent.New(model, toolstage.New([]toolstage.Tool{boom}, toolstage.WithToolMiddleware(toolstage.ToolRetry()))).Run(context.Background(), "go")
	var perr *toolstage.ToolPanicError
	if !errors.As(err, &perr) || runs.Load() != 1 {
		t.Errorf("Run() error = %v, boom ran %d times; want a *ToolPanicError after 1 run", err, runs.Load())
	}
}

// cutOffRounds is how many times TestToolReturningAfterCancelIsCutOff
// plays its scene.
const cutOffRounds = 32

// errBankDown is the cause a run's context is cancelled with.
var errBankDown = errors.New("the bank is down")

// A tool that returns because the run's context ended — the bank call of a
// payment cut short, returning ctx.Err() or its cause wrapped — was cut
// off: whether the payment went through is unknown. The call is recorded
// as cut off, as a call still running when the context ended is, never as
// a call that failed: Run's Steps leave it out, and Resume tells the model
// its outcome is unknown (ErrCallInterrupted), never "Error: context
// canceled".
//
// The order is forced, without sleeping: the agent is busy with a sibling's
// failure (lookup_fee's error, whose Error the agent calls to tell the
// model, cancels the run and waits for the payment to return) when the
// context ends and the payment returns, so it then finds both the
// payment's result and the context's end ready at once. Go's select picks
// either at random; each round sets the scene again, so that the result is
// picked first in some round but with a chance of 2^-32.
func TestToolReturningAfterCancelIsCutOff(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// bankErr is what the payment's tool returns once ctx ended.
		bankErr func(ctx context.Context) error
	}{
		{"ctx.Err", func(ctx context.Context) error { return fmt.Errorf("bank: %w", ctx.Err()) }},
		{"context.Cause", func(ctx context.Context) error { return fmt.Errorf("bank: %w", context.Cause(ctx)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for round := range cutOffRounds {
				if !cutOffRound(t, round, tc.bankErr) {
					return
				}
			}
		})
	}
}

// cutOffRound plays one round of TestToolReturningAfterCancelIsCutOff, the
// payment returning bankErr(ctx); it reports whether the round passed.
// A round that fails reports every way it does: what Run returned, and
// what the model read after Resume.
func cutOffRound(t *testing.T, round int, bankErr func(context.Context) error) bool {
	thread := fmt.Sprintf("cut-off-%d", round)
	ctx, cancel := context.WithCancelCause(guard.WithThread(context.Background(), thread))
	defer cancel(nil)
	var payments atomic.Int32
	returned := make(chan struct{}) // the payment's tool stage returned
	pay := toolstage.NewSchemaTool("transfer_money", "Pay.", nil, func(ctx context.Context, _ map[string]any) (string, error) {
		payments.Add(1)
		<-ctx.Done() // the bank's reply never comes
		return "", bankErr(ctx)
	})
	fee := toolstage.NewSchemaTool("lookup_fee", "Fee.", nil, func(context.Context, map[string]any) (string, error) {
		return "", &onFirstText{msg: "fee table unreachable", do: func() { cancel(errBankDown); <-returned }}
	})
	signal := toolstage.ToolFunc(func(next toolstage.ToolHandler) toolstage.ToolHandler {
		return func(ctx context.Context, call *toolstage.ToolCall) (*toolstage.ToolResult, error) {
			res, err := next(ctx, call)
			if call.Name == "transfer_money" {
				close(returned)
			}
			return res, err
		}
	})
	model := fakemodel.New(fakemodel.ToolCalls(fakemodel.Call("transfer_money", `{}`), fakemodel.Call("lookup_fee", `{}`)))
	a := agent.New(model, toolstage.New([]toolstage.Tool{pay, fee}, toolstage.WithToolMiddleware(signal)), agent.WithCheckpointer(new(toolstage.MemoryCheckpointer)))
	res, err := a.Run(ctx, "pay")
	if !errors.Is(err, context.Canceled) {
		t.Errorf("round %d: Run() error = %v, want context.Canceled", round, err)
		return false
	}
	ok := true
	if len(res.Steps) != 1 || res.Steps[0].Tool != "lookup_fee" {
		t.Errorf("round %d: Run() steps = %+v, want lookup_fee's failure alone (the payment was cut off)", round, res.Steps)
		ok = false
	}
	model.Append(fakemodel.Text("I will check the payment first."))
	res, err = a.Resume(guard.WithThread(context.Background(), thread), nil)
	if err != nil {
		t.Errorf("round %d: Resume(nil) error = %v", round, err)
		return false
	}
	reqs := model.Requests()
	want := []string{"human: pay",
		"ai: call_1 transfer_money({})", "tool: call_1 transfer_money -> " + unknownAnswer,
		"ai: call_2 lookup_fee({})", "tool: call_2 lookup_fee -> Error: fee table unreachable"}
	if got := render(reqs[len(reqs)-1].Messages); !slices.Equal(got, want) {
		diffLines(t, fmt.Sprintf("round %d: the model's request after Resume", round), got, want)
		ok = false
	}
	if len(res.Steps) != 2 || !errors.Is(res.Steps[0].Err, toolstage.ErrCallInterrupted) || res.Steps[1].Err == nil {
		t.Errorf("round %d: Resume() steps = %+v, want the payment with ErrCallInterrupted, then lookup_fee's failure", round, res.Steps)
		ok = false
	}
	if payments.Load() != 1 {
		t.Errorf("round %d: transfer_money ran %d times, want 1", round, payments.Load())
		ok = false
	}
	return ok
}

// onFirstText is an error that calls do the first time its text is read.
type onFirstText struct {
	msg  string
	once sync.Once
	do   func()
}

func (e *onFirstText) Error() string {
	e.once.Do(e.do)
	return e.msg
}

// A tool's own cancellation while the run goes on (a request the tool
// gave up on itself) is a failure like any: the model reads the error, and
// the run goes on. Only the run's context ending cuts a call off.
func TestToolsOwnCancellationIsAFailure(t *testing.T) {
	t.Parallel()
	lookup := toolstage.NewSchemaTool("lookup_fee", "Fee.", nil, func(context.Context, map[string]any) (string, error) {
		return "", fmt.Errorf("fee service: %w", context.Canceled)
	})
	model := fakemodel.New(fakemodel.ToolCalls(fakemodel.Call("lookup_fee", `{}`)), fakemodel.Text("No fee known."))
	res, err := agent.New(model, toolstage.New([]toolstage.Tool{lookup})).Run(context.Background(), "fee?")
	if err != nil || res.Output != "No fee known." {
		t.Fatalf("Run() = %q, %v; want the model's answer", res.Output, err)
	}
	if len(res.Steps) != 1 || !errors.Is(res.Steps[0].Err, context.Canceled) || errors.Is(res.Steps[0].Err, toolstage.ErrCallInterrupted) {
		t.Errorf("steps = %+v, want lookup_fee failed with its own context.Canceled", res.Steps)
	}
	want := []string{"Error: fee service: context canceled"}
	if got := toolMessages(res.Messages); !slices.Equal(got, want) {
		t.Errorf("tool messages = %q, want %q", got, want)
	}
}
