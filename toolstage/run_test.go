package toolstage_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/toolguard/toolguard/errfmt"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/toolstage"
	"github.com/toolguard/toolguard/validation"
)

// indexArgs are the arguments of a tool call that says which call it is.
type indexArgs struct {
	I int `json:"i"`
}

// Run runs the calls of a batch at most WithMaxConcurrency at a time, and
// gives their outcomes in call order, each with its Index, whatever order
// they finish in. The test holds every running tool until it has seen as
// many start as the bound allows, then lets the highest-numbered one
// finish first: the bound is reached, and the calls finish out of order.
// (That it is never passed, TestRunStartsAtMostTheBound proves: here a
// call started beyond it may be scheduled too late to be counted.)
func TestRunConcurrencyBoundAndCallOrder(t *testing.T) {
	t.Parallel()
	for _, bound := range []int{1, 2, 3} {
		t.Run(fmt.Sprintf("WithMaxConcurrency(%d)", bound), func(t *testing.T) {
			t.Parallel()
			const n = 6
			var running, most atomic.Int32
			started := make(chan int)
			release := make([]chan struct{}, n)
			for i := range release {
				release[i] = make(chan struct{})
			}
			var mu sync.Mutex
			var finished []int
			work := toolstage.NewTool("work", "Works.", func(_ context.Context, a indexArgs) (string, error) {
				now := running.Add(1)
				for m := most.Load(); now > m && !most.CompareAndSwap(m, now); m = most.Load() {
				}
				started <- a.I
				<-release[a.I]
				running.Add(-1)
				mu.Lock()
				finished = append(finished, a.I)
				mu.Unlock()
				return fmt.Sprintf("r%d", a.I), nil
			})
			calls := make([]guard.Call, n)
			for i := range calls {
				calls[i] = call(fmt.Sprintf("call_%d", i), "work", fmt.Sprintf(`{"i": %d}`, i))
			}
			stage := toolstage.New([]toolstage.Tool{work}, toolstage.WithMaxConcurrency(bound))
			type result struct {
				b   *toolstage.Batch
				err error
			}
			done := make(chan result, 1)
			go func() {
				b, err := stage.Run(context.Background(), calls)
				done <- result{b, err}
			}()
			// Hold the calls until bound of them run (or none is left to
			// start), then release the highest-numbered.
			var held []int
			for starts := 0; starts < n || len(held) > 0; {
				if starts < n && len(held) < bound {
					held = append(held, <-started)
					starts++
					continue
				}
				last := slices.Max(held)
				held = slices.DeleteFunc(held, func(i int) bool { return i == last })
				close(release[last])
			}
			r := <-done
			if r.err != nil {
				t.Fatalf("Run() error = %v", r.err)
			}
			if got := most.Load(); got != int32(bound) {
				t.Errorf("at most %d tools ran at once, want %d (the bound, reached)", got, bound)
			}
			wantIDs := []string{"call_0", "call_1", "call_2", "call_3", "call_4", "call_5"}
			if got := ids(r.b.Outcomes); !slices.Equal(got, wantIDs) {
				t.Errorf("outcome ids = %q, want %q (call order)", got, wantIDs)
			}
			if got := indexes(r.b.Outcomes); !slices.Equal(got, []int{0, 1, 2, 3, 4, 5}) {
				t.Errorf("outcome Index = %v, want 0..5", got)
			}
			for i, o := range r.b.Outcomes {
				if want := fmt.Sprintf("r%d", i); o.Content != want || o.Err != nil {
					t.Errorf("outcome %d = %q, %v; want %q", i, o.Content, o.Err, want)
				}
			}
			if bound > 1 && finished[0] == 0 {
				t.Errorf("calls finished in order %v: the test meant them to finish out of order", finished)
			}
			if r.b.Interrupt != nil {
				t.Errorf("Interrupt = %+v, want nil without approval", r.b.Interrupt)
			}
		})
	}
}

// Run starts no more calls than WithMaxConcurrency, in call order: with
// the first bound calls running and held, the context ends; the calls Run
// had started are cut off (ErrCallInterrupted), the others never started
// (ErrCallNotStarted). Which calls Run started is its own decision, made
// before the test cancels, so the outcomes show the bound whatever order
// the tools' goroutines are scheduled in.
func TestRunStartsAtMostTheBound(t *testing.T) {
	t.Parallel()
	for _, bound := range []int{1, 2, 3} {
		t.Run(fmt.Sprintf("WithMaxConcurrency(%d)", bound), func(t *testing.T) {
			t.Parallel()
			const n = 5
			var entered atomic.Int32
			started := make(chan int, n)
			release := make(chan struct{})
			work := toolstage.NewTool("work", "Works.", func(_ context.Context, a indexArgs) (string, error) {
				entered.Add(1)
				started <- a.I
				<-release
				return "done", nil
			})
			calls := make([]guard.Call, n)
			for i := range calls {
				calls[i] = call(fmt.Sprintf("call_%d", i), "work", fmt.Sprintf(`{"i": %d}`, i))
			}
			stage := toolstage.New([]toolstage.Tool{work}, toolstage.WithMaxConcurrency(bound))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go func() {
				for range bound {
					<-started
				}
				cancel()
			}()
			b, err := stage.Run(ctx, calls)
			close(release)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("Run() error = %v, want context.Canceled", err)
			}
			var got []string
			for _, o := range b.Outcomes {
				switch {
				case errors.Is(o.Err, toolstage.ErrCallInterrupted):
					got = append(got, "cut off")
				case errors.Is(o.Err, toolstage.ErrCallNotStarted):
					got = append(got, "not started")
				default:
					got = append(got, fmt.Sprintf("%q, %v", o.Content, o.Err))
				}
			}
			want := make([]string, n)
			for i := range want {
				want[i] = "not started"
				if i < bound {
					want[i] = "cut off"
				}
			}
			if !slices.Equal(got, want) {
				t.Errorf("outcomes = %q, want %q", got, want)
			}
		})
	}
}

// A call of a tool the stage does not have gets an outcome wrapping
// ErrUnknownTool whose Content names the tools there are; its siblings
// run, and Run reports no error.
func TestRunUnknownTool(t *testing.T) {
	t.Parallel()
	var rates, fees atomic.Int32
	stage := toolstage.New([]toolstage.Tool{counted("get_rate", "1.08", &rates), counted("get_fee", "0.50", &fees)})
	b, err := stage.Run(context.Background(), []guard.Call{
		call("call_1", "get_rate", `{}`), call("call_2", "transfer_money", `{"amount": 5}`), call("call_3", "get_fee", `{}`)})
	if err != nil {
		t.Fatalf("Run() error = %v, want nil: an unknown tool is the call's outcome", err)
	}
	if len(b.Outcomes) != 3 {
		t.Fatalf("Run() outcomes = %+v, want 3", b.Outcomes)
	}
	o := b.Outcomes[1]
	if !errors.Is(o.Err, toolstage.ErrUnknownTool) || o.Call.Name != "transfer_money" || o.Index != 1 || o.Args != nil {
		t.Errorf("outcome of the unknown call = %+v, want Err wrapping ErrUnknownTool, Index 1, no Args", o)
	}
	if want := errfmt.UnknownTool("transfer_money", []string{"get_fee", "get_rate"}); o.Content != want {
		t.Errorf("Content = %q, want %q", o.Content, want)
	}
	if !strings.Contains(o.Content, `"get_fee", "get_rate"`) {
		t.Errorf("Content = %q, want it to list the stage's tools", o.Content)
	}
	if b.Outcomes[0].Content != "1.08" || b.Outcomes[2].Content != "0.50" || rates.Load() != 1 || fees.Load() != 1 {
		t.Errorf("siblings = %q, %q, ran %d and %d times; want each run once", b.Outcomes[0].Content, b.Outcomes[2].Content, rates.Load(), fees.Load())
	}
}

// A call whose arguments are not JSON, or not a JSON object, gets a
// *validation.Error naming its tool and the feedback the model reads as
// its Content; the tool does not run, and its siblings do.
func TestRunArgsNotAnObject(t *testing.T) {
	t.Parallel()
	for _, args := range []string{`{"amount": 5`, `not json`, `[5]`, `5`, `"five"`, `null`, `true`} {
		t.Run(args, func(t *testing.T) {
			t.Parallel()
			var payments, rates atomic.Int32
			pay := toolstage.NewTool("transfer_money", "Pays.", func(context.Context, transferArgs) (string, error) {
				payments.Add(1)
				return "paid", nil
			})
			stage := toolstage.New([]toolstage.Tool{pay, counted("get_rate", "1.08", &rates)})
			b, err := stage.Run(context.Background(), []guard.Call{call("call_1", "transfer_money", args), call("call_2", "get_rate", `{}`)})
			if err != nil {
				t.Fatalf("Run() error = %v, want nil", err)
			}
			o := b.Outcomes[0]
			var ve *validation.Error
			if !errors.As(o.Err, &ve) || ve.Tool != "transfer_money" {
				t.Fatalf("Err = %#v, want a *validation.Error naming transfer_money", o.Err)
			}
			if o.Content != errfmt.Feedback(ve) || o.Content == "" {
				t.Errorf("Content = %q, want the feedback %q", o.Content, errfmt.Feedback(ve))
			}
			if payments.Load() != 0 || o.Args != nil {
				t.Errorf("transfer_money ran %d times (Args %s), want never", payments.Load(), o.Args)
			}
			if b.Outcomes[1].Content != "1.08" || rates.Load() != 1 {
				t.Errorf("sibling = %+v, ran %d times; want it run", b.Outcomes[1], rates.Load())
			}
		})
	}
}

// A tool that panics ends the batch: its outcome is a *ToolPanicError
// (the model reads that its outcome is unknown), a sibling running then
// finishes and keeps its outcome, a call not started never starts
// (ErrCallNotStarted), and Run returns the panic as its error beside the
// batch.
func TestRunPanicEndsBatch(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		bound int
	}{
		{"sibling running", 3},     // all three start at once: get_rate waits for the panic
		{"sibling not started", 1}, // one at a time: get_rate never starts
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var payments, rates atomic.Int32
			panicking := make(chan struct{})
			boom := toolstage.NewSchemaTool("lookup_fee", "Panics.", nil, func(context.Context, map[string]any) (string, error) {
				close(panicking)
				panic(fmt.Errorf("fee table: %w", errors.ErrUnsupported))
			})
			rate := toolstage.NewSchemaTool("get_rate", "Rate.", nil, func(context.Context, map[string]any) (string, error) {
				rates.Add(1)
				<-panicking
				return "1.08", nil
			})
			stage := toolstage.New([]toolstage.Tool{counted("transfer_money", "paid", &payments), boom, rate}, toolstage.WithMaxConcurrency(tc.bound))
			b, err := stage.Run(context.Background(), []guard.Call{
				call("call_1", "transfer_money", `{}`), call("call_2", "lookup_fee", `{}`), call("call_3", "get_rate", `{}`)})
			var perr *toolstage.ToolPanicError
			if !errors.As(err, &perr) || perr.Tool != "lookup_fee" || perr.CallID != "call_2" || !errors.Is(err, errors.ErrUnsupported) || len(perr.Stack) == 0 {
				t.Fatalf("Run() error = %v, want a *ToolPanicError for lookup_fee's call_2, with its stack, wrapping the panic's error", err)
			}
			if b == nil || len(b.Outcomes) != 3 {
				t.Fatalf("Run() batch = %+v, want 3 outcomes beside the error", b)
			}
			logOutcomes(t, tc.name, b.Outcomes)
			if o := b.Outcomes[0]; o.Content != "paid" || o.Err != nil {
				t.Errorf("transfer_money = %q, %v; want paid", o.Content, o.Err)
			}
			if o := b.Outcomes[1]; !errors.As(o.Err, &perr) || o.Content != errfmt.CallInterrupted {
				t.Errorf("lookup_fee = %q, %v; want a *ToolPanicError read as %q", o.Content, o.Err, errfmt.CallInterrupted)
			}
			o := b.Outcomes[2]
			if tc.bound == 1 {
				if !errors.Is(o.Err, toolstage.ErrCallNotStarted) || !errors.Is(o.Err, toolstage.ErrNotRun) || o.Content != errfmt.CallNotStarted || rates.Load() != 0 {
					t.Errorf("get_rate = %q, %v, ran %d times; want ErrCallNotStarted, never run", o.Content, o.Err, rates.Load())
				}
			} else if o.Content != "1.08" || o.Err != nil || rates.Load() != 1 {
				t.Errorf("get_rate = %q, %v, ran %d times; want its result: it was running", o.Content, o.Err, rates.Load())
			}
			if payments.Load() != 1 {
				t.Errorf("transfer_money ran %d times, want 1", payments.Load())
			}
		})
	}
}

// A tool middleware (or a tool) whose error wraps ErrStopRun ends the
// batch: the calls not started never start, and Run returns that error
// beside the batch, with the stopping call's outcome and a run_stopped
// event.
func TestRunErrStopRunEndsBatch(t *testing.T) {
	t.Parallel()
	var payments, fees, rates atomic.Int32
	budget := toolstage.ToolFunc(func(next toolstage.ToolHandler) toolstage.ToolHandler {
		return func(ctx context.Context, c *toolstage.ToolCall) (*toolstage.ToolResult, error) {
			if c.Name == "lookup_fee" {
				return nil, fmt.Errorf("%w: the budget is spent", toolstage.ErrStopRun)
			}
			return next(ctx, c)
		}
	})
	var events eventLog
	stage := toolstage.New([]toolstage.Tool{counted("transfer_money", "paid", &payments), counted("lookup_fee", "0.50", &fees), counted("get_rate", "1.08", &rates)},
		toolstage.WithMaxConcurrency(1), toolstage.WithToolMiddleware(budget), toolstage.WithEventHandler(events.handle))
	b, err := stage.Run(context.Background(), []guard.Call{
		call("call_1", "transfer_money", `{}`), call("call_2", "lookup_fee", `{}`), call("call_3", "get_rate", `{}`)})
	if !errors.Is(err, toolstage.ErrStopRun) {
		t.Fatalf("Run() error = %v, want one wrapping ErrStopRun", err)
	}
	if len(b.Outcomes) != 3 {
		t.Fatalf("outcomes = %+v, want 3", b.Outcomes)
	}
	logOutcomes(t, "stopped", b.Outcomes)
	if o := b.Outcomes[0]; o.Content != "paid" || o.Err != nil {
		t.Errorf("transfer_money = %q, %v; want paid", o.Content, o.Err)
	}
	if o := b.Outcomes[1]; !errors.Is(o.Err, toolstage.ErrStopRun) || o.Content != errfmt.ToolError(o.Err) || fees.Load() != 0 {
		t.Errorf("lookup_fee = %q, %v, ran %d times; want the stop, read as the error, never run", o.Content, o.Err, fees.Load())
	}
	if o := b.Outcomes[2]; !errors.Is(o.Err, toolstage.ErrCallNotStarted) || o.Content != errfmt.CallNotStarted || rates.Load() != 0 {
		t.Errorf("get_rate = %q, %v, ran %d times; want ErrCallNotStarted, never run", o.Content, o.Err, rates.Load())
	}
	if ev := events.of(guard.EventRunStopped); len(ev) != 1 || ev[0].CallID != "call_2" || ev[0].Tool != "lookup_fee" {
		t.Errorf("run_stopped events = %+v, want one for call_2 of lookup_fee", ev)
	}
}

// The first tool middleware is the outermost: it sees the call first and
// the result last.
func TestToolMiddlewareOrder(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var trace []string
	note := func(s string) { mu.Lock(); trace = append(trace, s); mu.Unlock() }
	layer := func(name string) toolstage.ToolMiddleware {
		return toolstage.ToolFunc(func(next toolstage.ToolHandler) toolstage.ToolHandler {
			return func(ctx context.Context, c *toolstage.ToolCall) (*toolstage.ToolResult, error) {
				note(name + " in")
				res, err := next(ctx, c)
				note(name + " out")
				return res, err
			}
		})
	}
	tool := toolstage.NewSchemaTool("t", "T.", nil, func(context.Context, map[string]any) (string, error) {
		note("tool")
		return "ok", nil
	})
	stage := toolstage.New([]toolstage.Tool{tool}, toolstage.WithToolMiddleware(layer("a"), nil, layer("b")), toolstage.WithToolMiddleware(layer("c")))
	if _, err := stage.Run(context.Background(), []guard.Call{call("call_1", "t", `{}`)}); err != nil {
		t.Fatal(err)
	}
	want := []string{"a in", "b in", "c in", "tool", "c out", "b out", "a out"}
	if !slices.Equal(trace, want) {
		t.Errorf("trace = %q, want %q", trace, want)
	}
}

// Arguments a tool middleware replaces are checked against the tool's
// schema before the tool runs: invalid ones fail the call with an
// *ArgsRejectedError (the model never reads the violations; Unwrap gives
// them to the program) and the tool never runs; valid ones run, the
// outcome's Args holding them and its Call the model's, with an
// args_rewritten event naming the changed path.
func TestReplacedArgsChecked(t *testing.T) {
	t.Parallel()
	rewrite := func(args string) toolstage.ToolMiddleware {
		return toolstage.ToolFunc(func(next toolstage.ToolHandler) toolstage.ToolHandler {
			return func(ctx context.Context, c *toolstage.ToolCall) (*toolstage.ToolResult, error) {
				c.Args = []byte(args)
				return next(ctx, c)
			}
		})
	}
	t.Run("invalid", func(t *testing.T) {
		t.Parallel()
		var payments atomic.Int32
		pay := toolstage.NewTool("transfer_money", "Pays.", func(context.Context, transferArgs) (string, error) {
			payments.Add(1)
			return "paid", nil
		})
		var events eventLog
		stage := toolstage.New([]toolstage.Tool{pay}, toolstage.WithToolMiddleware(rewrite(`{"amount": "all of it"}`)), toolstage.WithEventHandler(events.handle))
		b, err := stage.Run(context.Background(), []guard.Call{call("call_1", "transfer_money", `{"amount": 5}`)})
		if err != nil {
			t.Fatal(err)
		}
		o := b.Outcomes[0]
		var rejected *toolstage.ArgsRejectedError
		var ve *validation.Error
		if !errors.As(o.Err, &rejected) || rejected.Tool != "transfer_money" || !errors.As(o.Err, &ve) {
			t.Fatalf("Err = %v, want an *ArgsRejectedError for transfer_money wrapping the *validation.Error", o.Err)
		}
		if payments.Load() != 0 || o.Args != nil {
			t.Errorf("transfer_money ran %d times, want never", payments.Load())
		}
		if strings.Contains(o.Content, "all of it") || strings.Contains(o.Content, "amount") || o.Content == "" {
			t.Errorf("Content = %q, want that the call could not run, without the violations", o.Content)
		}
		if ev := events.of(guard.EventArgsRejected); len(ev) != 1 || ev[0].CallID != "call_1" {
			t.Errorf("args_rejected events = %+v, want one for call_1", ev)
		}
	})
	t.Run("valid", func(t *testing.T) {
		t.Parallel()
		var got atomic.Int64
		pay := toolstage.NewTool("transfer_money", "Pays.", func(_ context.Context, a transferArgs) (string, error) {
			got.Store(int64(a.Amount))
			return "paid", nil
		})
		var events eventLog
		stage := toolstage.New([]toolstage.Tool{pay}, toolstage.WithToolMiddleware(rewrite(`{"amount": 10}`)), toolstage.WithEventHandler(events.handle))
		b, err := stage.Run(context.Background(), []guard.Call{call("call_1", "transfer_money", `{"amount": 5000}`)})
		if err != nil {
			t.Fatal(err)
		}
		o := b.Outcomes[0]
		if o.Err != nil || got.Load() != 10 || string(o.Args) != `{"amount": 10}` || string(o.Call.Args) != `{"amount": 5000}` {
			t.Errorf("outcome = %+v, tool got %d; want it run with 10, Args the replaced ones, Call the model's", o, got.Load())
		}
		if ev := events.of(guard.EventArgsRewritten); len(ev) != 1 || !slices.Equal(ev[0].Paths, []string{"/amount"}) {
			t.Errorf("args_rewritten events = %+v, want one naming /amount", ev)
		}
	})
}
