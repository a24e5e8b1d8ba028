package agent_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/toolguard/toolguard/agent"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/fakemodel"
	"github.com/toolguard/toolguard/retry"
	"github.com/toolguard/toolguard/toolstage"
)

// errTimeout is a tool's failure whose outcome it cannot know: the request
// went out and no answer came back in time.
var errTimeout = fmt.Errorf("payments API: %w", context.DeadlineExceeded)

// noWait is a backoff factory that never waits.
func noWait() backoff.BackOff { return &backoff.ZeroBackOff{} }

// flakyTool returns a tool named name that fails with errs[i] on its i-th
// run and answers "ok" once they run out, and the attempts it saw
// (CallFrom(ctx).Attempt, one per run).
func flakyTool(name string, errs ...error) (toolstage.Tool, func() []int) {
	var mu sync.Mutex
	var attempts []int
	tool := toolstage.NewSchemaTool(name, "A flaky tool.", nil, func(ctx context.Context, _ map[string]any) (string, error) {
		info, _ := toolstage.CallFrom(ctx)
		mu.Lock()
		defer mu.Unlock()
		attempts = append(attempts, info.Attempt)
		if n := len(attempts); n <= len(errs) {
			return "", errs[n-1]
		}
		return "ok", nil
	})
	return tool, func() []int {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(attempts)
	}
}

// runOnce runs an agent whose model calls tool once and then answers,
// with the tool middlewares and an event log, and returns the result.
func runOnce(t *testing.T, ctx context.Context, tool toolstage.Tool, log *eventLog, tmws ...toolstage.ToolMiddleware) (*agent.Result, error) {
	t.Helper()
	model := fakemodel.New(fakemodel.ToolCalls(fakemodel.Call(tool.Name(), `{}`)), fakemodel.Text("done"))
	a := agent.New(model, toolstage.New([]toolstage.Tool{tool}, toolstage.WithToolMiddleware(tmws...), toolstage.WithEventHandler(log.handle)))
	return a.Run(ctx, "go")
}

// An idempotent tool that times out twice and then answers runs three
// times, each attempt numbered, with a tool_retry event before each repeat.
func TestToolRetryIdempotentTimeout(t *testing.T) {
	t.Parallel()
	tool, attempts := flakyTool("get_rate", errTimeout, errTimeout)
	var log eventLog
	res, err := runOnce(t, context.Background(), toolstage.Idempotent(tool), &log, toolstage.ToolRetry(toolstage.WithBackOff(noWait)))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("idempotent get_rate timing out twice: executed %d times, attempts %v, Step.Err %v", len(attempts()), attempts(), res.Steps[0].Err)
	if got := attempts(); !slices.Equal(got, []int{1, 2, 3}) {
		t.Errorf("attempts = %v, want [1 2 3]", got)
	}
	if s := res.Steps[0]; s.Err != nil || s.Result != "ok" {
		t.Errorf("step = %q, %v; want ok, nil", s.Result, s.Err)
	}
	var retries []int
	for _, e := range log.events {
		if e.Kind == guard.EventToolRetry {
			retries = append(retries, e.Attempt)
			if e.Middleware != "ToolRetry" || e.Tool != "get_rate" || e.CallID != "call_1" || !errors.Is(e.Err, context.DeadlineExceeded) {
				t.Errorf("tool_retry event %+v: want ToolRetry, get_rate, call_1 and the timeout", e)
			}
		}
	}
	if !slices.Equal(retries, []int{1, 2}) {
		t.Errorf("tool_retry events for attempts %v, want [1 2]", retries)
	}
}

// A tool that is not idempotent and times out runs once: the model reads
// that the outcome is unknown and must be checked, and tool_outcome_unknown
// is reported. LangChain's ToolRetryMiddleware would run it three times.
func TestToolRetryNotIdempotentTimeout(t *testing.T) {
	t.Parallel()
	tool, attempts := flakyTool("charge_card", errTimeout, errTimeout)
	var log eventLog
	res, err := runOnce(t, context.Background(), tool, &log, toolstage.ToolRetry(toolstage.WithBackOff(noWait)))
	if err != nil {
		t.Fatal(err)
	}
	msgs := toolMessages(res.Messages)
	t.Logf("non-idempotent charge_card timing out: executed %d times; the model reads %q", len(attempts()), msgs[0])
	if n := len(attempts()); n != 1 {
		t.Errorf("charge_card ran %d times, want once", n)
	}
	var unknown *toolstage.OutcomeUnknownError
	if !errors.As(res.Steps[0].Err, &unknown) || unknown.Tool != "charge_card" || !errors.Is(unknown, context.DeadlineExceeded) {
		t.Errorf("Step.Err = %v, want an *OutcomeUnknownError wrapping the timeout", res.Steps[0].Err)
	}
	for _, want := range []string{"outcome is unknown", "may have taken effect", "check whether it took effect before calling it again"} {
		if !strings.Contains(msgs[0], want) {
			t.Errorf("tool message %q lacks %q", msgs[0], want)
		}
	}
	if e, ok := log.find(guard.EventToolOutcomeUnknown); !ok || e.Attempt != 1 || e.Tool != "charge_card" || !errors.Is(e.Err, context.DeadlineExceeded) {
		t.Errorf("tool_outcome_unknown event = %+v, %v; want attempt 1 of charge_card with the timeout", e, ok)
	}
	if _, ok := log.find(guard.EventToolRetry); ok {
		t.Error("tool_retry reported for a call that was not repeated")
	}
}

// A tool that says it did not run (ErrNotRun) is run again, idempotent or
// not.
func TestToolRetryErrNotRun(t *testing.T) {
	t.Parallel()
	refused := fmt.Errorf("%w: payments API: 429 too many requests", toolstage.ErrNotRun)
	tool, attempts := flakyTool("charge_card", refused)
	var log eventLog
	res, err := runOnce(t, context.Background(), tool, &log, toolstage.ToolRetry(toolstage.WithBackOff(noWait)))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("non-idempotent charge_card failing with ErrNotRun once: executed %d times, attempts %v", len(attempts()), attempts())
	if got := attempts(); !slices.Equal(got, []int{1, 2}) || res.Steps[0].Result != "ok" {
		t.Errorf("attempts %v, result %q; want [1 2], ok", got, res.Steps[0].Result)
	}
	if _, ok := log.find(guard.EventToolOutcomeUnknown); ok {
		t.Error("tool_outcome_unknown reported for a call that did not run")
	}
}

// A cancelled context ends ToolRetry's wait at once: here the wait is an
// hour, and the run is cancelled as the retry is reported.
func TestToolRetryCancelStopsWait(t *testing.T) {
	t.Parallel()
	tool, attempts := flakyTool("get_rate", errTimeout, errTimeout)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	returned := make(chan error, 1) // what ToolRetry returned
	outer := toolstage.ToolFunc(func(next toolstage.ToolHandler) toolstage.ToolHandler {
		return func(ctx context.Context, call *toolstage.ToolCall) (*toolstage.ToolResult, error) {
			res, err := next(ctx, call)
			returned <- err
			return res, err
		}
	})
	hour := func() backoff.BackOff { return backoff.NewConstantBackOff(time.Hour) }
	model := fakemodel.New(fakemodel.ToolCalls(fakemodel.Call("get_rate", `{}`)), fakemodel.Text("done"))
	a := agent.New(model, toolstage.New([]toolstage.Tool{toolstage.Idempotent(tool)}, toolstage.WithToolMiddleware(outer, toolstage.ToolRetry(toolstage.WithBackOff(hour))), toolstage.WithEventHandler(func(_ context.Context, e guard.Event) {
		if e.Kind == guard.EventToolRetry {
			cancel()
		}
	})))
	if _, err := a.Run(ctx, "go"); !errors.Is(err, context.Canceled) {
		t.Errorf("Run = %v, want context.Canceled", err)
	}
	select {
	case err := <-returned:
		t.Logf("cancelled during an hour's wait: get_rate executed %d times; ToolRetry returned %v", len(attempts()), err)
		var re *retry.Error
		if !errors.As(err, &re) || re.Attempts != 1 || !errors.Is(err, context.Canceled) {
			t.Errorf("ToolRetry returned %v, want a *retry.Error after 1 attempt matching context.Canceled", err)
		}
	case <-time.After(30 * time.Second): // a failure guard, not a wait the test relies on
		t.Fatal("ToolRetry still waiting 30s after its context was cancelled")
	}
	if n := len(attempts()); n != 1 {
		t.Errorf("get_rate ran %d times, want once", n)
	}
}

// ToolRetry never waits past the context's deadline: a wait that would end
// after it gives up at once.
func TestToolRetryDeadline(t *testing.T) {
	t.Parallel()
	tool, attempts := flakyTool("get_rate", errTimeout)
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	twoHours := func() backoff.BackOff { return backoff.NewConstantBackOff(2 * time.Hour) }
	var log eventLog
	res, err := runOnce(t, ctx, toolstage.Idempotent(tool), &log, toolstage.ToolRetry(toolstage.WithBackOff(twoHours)))
	if err != nil {
		t.Fatal(err)
	}
	var re *retry.Error
	if !errors.As(res.Steps[0].Err, &re) || re.Attempts != 1 || len(attempts()) != 1 {
		t.Errorf("Step.Err = %v after %d runs, want a *retry.Error after one attempt", res.Steps[0].Err, len(attempts()))
	}
	if _, ok := log.find(guard.EventToolRetry); ok {
		t.Error("tool_retry reported for a wait past the deadline")
	}
}

// countingBackOff never waits and counts the waits asked of it.
type countingBackOff struct {
	mu    *sync.Mutex
	waits *int
	stop  bool // answer backoff.Stop
}

func (b countingBackOff) NextBackOff() time.Duration {
	if b.stop {
		return backoff.Stop
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	*b.waits++
	return 0
}

func (countingBackOff) Reset() {}

func TestToolRetryOptions(t *testing.T) {
	t.Parallel()
	errFlaky := errors.New("flaky") // not transient for retry.IsRetryable
	for _, tc := range []struct {
		name       string
		errs       []error
		idempotent bool
		opts       []toolstage.ToolRetryOption
		stop       bool // the backoff says Stop
		runs       int
		waits      int
		wantErr    func(error) bool
	}{
		{name: "default: three attempts", errs: []error{errTimeout, errTimeout, errTimeout}, idempotent: true,
			runs: 3, waits: 2, wantErr: retryError(3)},
		{name: "WithMaxRetries(1)", errs: []error{errTimeout, errTimeout}, idempotent: true,
			opts: []toolstage.ToolRetryOption{toolstage.WithMaxRetries(1)}, runs: 2, waits: 1, wantErr: retryError(2)},
		{name: "WithMaxRetries(0) still reports an unknown outcome", errs: []error{errTimeout},
			opts: []toolstage.ToolRetryOption{toolstage.WithMaxRetries(0)}, runs: 1, wantErr: outcomeUnknown},
		{name: "WithRetryTools leaves other tools alone", errs: []error{errTimeout}, idempotent: false,
			opts: []toolstage.ToolRetryOption{toolstage.WithRetryTools("other")}, runs: 1, wantErr: is(errTimeout)},
		{name: "WithRetryTools covers the tool", errs: []error{errTimeout}, idempotent: true,
			opts: []toolstage.ToolRetryOption{toolstage.WithRetryTools("other"), toolstage.WithRetryTools("tool")}, runs: 2, waits: 1},
		{name: "not transient: one attempt", errs: []error{errFlaky}, idempotent: true, runs: 1, wantErr: is(errFlaky)},
		{name: "WithRetryIf makes it transient", errs: []error{errFlaky}, idempotent: true,
			opts: []toolstage.ToolRetryOption{toolstage.WithRetryIf(func(err error) bool { return errors.Is(err, errFlaky) })}, runs: 2, waits: 1},
		{name: "WithRetryIf does not make a repeat safe", errs: []error{errFlaky},
			opts: []toolstage.ToolRetryOption{toolstage.WithRetryIf(func(err error) bool { return errors.Is(err, errFlaky) })}, runs: 1, wantErr: outcomeUnknown},
		{name: "RetryIf can refuse ErrNotRun", errs: []error{fmt.Errorf("%w: bad key", toolstage.ErrNotRun)},
			opts: []toolstage.ToolRetryOption{toolstage.WithRetryIf(retry.IsRetryable)}, runs: 1, wantErr: is(toolstage.ErrNotRun)},
		{name: "the backoff says stop", errs: []error{errTimeout}, idempotent: true, stop: true, runs: 1, wantErr: retryError(1)},
		{name: "ErrStopRun is never retried", errs: []error{fmt.Errorf("%w: %w", toolstage.ErrStopRun, toolstage.ErrNotRun)}, runs: 1,
			wantErr: is(toolstage.ErrStopRun)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tool, attempts := flakyTool("tool", tc.errs...)
			if tc.idempotent {
				tool = toolstage.Idempotent(tool)
			}
			var mu sync.Mutex
			waits := 0
			opts := append([]toolstage.ToolRetryOption{toolstage.WithBackOff(func() backoff.BackOff {
				return countingBackOff{mu: &mu, waits: &waits, stop: tc.stop}
			})}, tc.opts...)
			var log eventLog
			res, err := runOnce(t, context.Background(), tool, &log, toolstage.ToolRetry(opts...))
			if err != nil && !errors.Is(err, toolstage.ErrStopRun) {
				t.Fatal(err)
			}
			t.Logf("%s: executed %d times", tc.name, len(attempts()))
			if n := len(attempts()); n != tc.runs {
				t.Errorf("ran %d times, want %d", n, tc.runs)
			}
			mu.Lock()
			if waits != tc.waits {
				t.Errorf("the backoff gave %d waits, want %d", waits, tc.waits)
			}
			mu.Unlock()
			stepErr := res.Steps[0].Err
			if tc.wantErr == nil && stepErr != nil || tc.wantErr != nil && !tc.wantErr(stepErr) {
				t.Errorf("Step.Err = %v (%T)", stepErr, stepErr)
			}
		})
	}
}

func retryError(attempts int) func(error) bool {
	return func(err error) bool {
		var re *retry.Error
		return errors.As(err, &re) && re.Attempts == attempts
	}
}

func outcomeUnknown(err error) bool {
	var u *toolstage.OutcomeUnknownError
	return errors.As(err, &u)
}

func is(target error) func(error) bool {
	return func(err error) bool {
		var re *retry.Error
		return errors.Is(err, target) && !outcomeUnknown(err) && !errors.As(err, &re)
	}
}

// The Idempotent mark is seen through Renamed, whichever wraps which, and
// through the agent's own renaming of an unsafe name.
func TestIdempotentThroughWrappers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		wrap func(toolstage.Tool) toolstage.Tool
		sent string
	}{
		{"Renamed(Idempotent(t))", func(t toolstage.Tool) toolstage.Tool { return toolstage.Renamed(toolstage.Idempotent(t), "lookup") }, "lookup"},
		{"Idempotent(Renamed(t))", func(t toolstage.Tool) toolstage.Tool { return toolstage.Idempotent(toolstage.Renamed(t, "lookup")) }, "lookup"},
		{"an unsafe name renamed by New", func(t toolstage.Tool) toolstage.Tool { return toolstage.Idempotent(toolstage.Renamed(t, "rates.get")) }, toolstage.SafeToolName("rates.get")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tool, attempts := flakyTool("get_rate", errTimeout)
			wrapped := tc.wrap(tool)
			if again := toolstage.Idempotent(wrapped); again != wrapped {
				t.Error("Idempotent of a marked tool wraps it again")
			}
			model := fakemodel.New(fakemodel.ToolCalls(fakemodel.Call(tc.sent, `{}`)), fakemodel.Text("done"))
			a := agent.New(model, toolstage.New([]toolstage.Tool{wrapped}, toolstage.WithToolMiddleware(toolstage.ToolRetry(toolstage.WithBackOff(noWait)))))
			res, err := a.Run(context.Background(), "go")
			if err != nil {
				t.Fatal(err)
			}
			if n := len(attempts()); n != 2 || res.Steps[0].Err != nil {
				t.Errorf("ran %d times, Step.Err %v; want 2, nil", n, res.Steps[0].Err)
			}
		})
	}
}

func TestToolRetryOptionPanics(t *testing.T) {
	t.Parallel()
	for name, fn := range map[string]func(){
		"WithRetryTools()":     func() { toolstage.WithRetryTools() },
		`WithRetryTools("")`:   func() { toolstage.WithRetryTools("a", "") },
		"WithMaxRetries(-1)":   func() { toolstage.WithMaxRetries(-1) },
		"WithBackOff(nil)":     func() { toolstage.WithBackOff(nil) },
		"WithBackOff(nil-ing)": func() { toolstage.WithBackOff(func() backoff.BackOff { return nil }) },
		"RetryIf(nil)":         func() { toolstage.WithRetryIf(nil) },
		"Idempotent(nil)":      func() { toolstage.Idempotent(nil) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if p := recover(); p == nil || !strings.HasPrefix(fmt.Sprint(p), "toolstage: ") {
					t.Errorf("%s panicked with %v, want a message starting with \"toolstage: \"", name, p)
				}
			}()
			fn()
		})
	}
}

// An Idempotent tool under ToolRetry keeps the one check per call: with the
// recommended stack, one Validate() and two decodes, as without them.
// Not parallel: it shares TestOneCheckPerCall's counters.
func TestOneCheckIdempotentUnderToolRetry(t *testing.T) {
	countedDecodes.Store(0)
	countedValidates.Store(0)
	tool := toolstage.Idempotent(toolstage.NewTool("get_weather", "Weather.", func(_ context.Context, a CountedArgs) (string, error) {
		return "sunny in " + a.City, nil
	}))
	model := fakemodel.New(fakemodel.ToolCalls(fakemodel.Call("get_weather", `{"city":"Paris"}`)), fakemodel.Text("done"))
	a := agent.New(model, toolstage.New([]toolstage.Tool{tool}, toolstage.WithToolMiddleware(toolstage.ToolRetry())), agent.WithMiddleware(middleware.ToolCallLimit(guard.WithRunLimit(10)), middleware.ToolArgValidation(), middleware.ModelRetry()))
	if _, err := a.Run(context.Background(), "weather"); err != nil {
		t.Fatal(err)
	}
	v, d := countedValidates.Load(), countedDecodes.Load()
	t.Logf("Idempotent typed tool under ToolRetry, recommended stack: Validate() %d, decodes %d", v, d)
	if v != 1 || d != 2 {
		t.Errorf("Validate() %d, decodes %d; want 1, 2", v, d)
	}
}

// ToolRetry's events reach guard.LogEvents through the agent's
// WithEventHandler: a retry at Info, an unknown outcome at Warn.
func TestToolRetryLogEvents(t *testing.T) {
	t.Parallel()
	rates, _ := flakyTool("get_rate", errTimeout)
	charge, _ := flakyTool("charge_card", errTimeout)
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
	model := fakemodel.New(fakemodel.ToolCalls(fakemodel.Call("get_rate", `{}`), fakemodel.Call("charge_card", `{}`)), fakemodel.Text("done"))
	a := agent.New(model, toolstage.New([]toolstage.Tool{toolstage.Idempotent(rates), charge}, toolstage.WithMaxConcurrency(1), toolstage.WithToolMiddleware(toolstage.ToolRetry(toolstage.WithBackOff(noWait))), toolstage.WithEventHandler(guard.LogEvents(logger))))
	if _, err := a.Run(context.Background(), "go"); err != nil {
		t.Fatal(err)
	}
	got := buf.String()
	t.Logf("LogEvents:\n%s", got)
	for _, want := range []string{
		`level=INFO msg="toolguard: tool_retry" event.kind=tool_retry event.middleware=ToolRetry event.attempt=1 event.tool=get_rate event.call_id=call_1 event.err="payments API: context deadline exceeded"`,
		`level=WARN msg="toolguard: tool_outcome_unknown" event.kind=tool_outcome_unknown event.middleware=ToolRetry event.attempt=1 event.tool=charge_card event.call_id=call_2`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("log lacks %s", want)
		}
	}
}

// Two ToolRetry layers (an application's and a library's, say) around a
// tool that is not idempotent and times out: one attempt, one unknown
// outcome reported, and the model reads it once — the outer layer does not
// take the inner one's OutcomeUnknownError for a new transient failure.
func TestToolRetryNestedOutcomeUnknownOnce(t *testing.T) {
	t.Parallel()
	tool, attempts := flakyTool("charge_card", errTimeout, errTimeout)
	var log eventLog
	res, err := runOnce(t, context.Background(), tool, &log,
		toolstage.ToolRetry(toolstage.WithBackOff(noWait)), toolstage.ToolRetry(toolstage.WithBackOff(noWait)))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(attempts()); n != 1 {
		t.Errorf("charge_card ran %d times, want once", n)
	}
	var unknown *toolstage.OutcomeUnknownError
	if !errors.As(res.Steps[0].Err, &unknown) || !errors.Is(unknown.Err, errTimeout) || errors.As(unknown.Err, new(*toolstage.OutcomeUnknownError)) {
		t.Errorf("Step.Err = %v, want one *OutcomeUnknownError wrapping the timeout", res.Steps[0].Err)
	}
	n := 0
	for _, k := range log.kinds() {
		if k == guard.EventToolOutcomeUnknown {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d tool_outcome_unknown events, want 1 (events %v)", n, log.kinds())
	}
}

// A ResultTool is retried only when marked Idempotent, through the agent's
// wrappers as any tool, and its ToolResult survives the retry.
func TestToolRetryResultTool(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		wrap func(toolstage.Tool) toolstage.Tool
		sent string
		runs int
	}{
		{"not marked", func(t toolstage.Tool) toolstage.Tool { return t }, "charge", 1},
		{"Renamed, not marked", func(t toolstage.Tool) toolstage.Tool { return toolstage.Renamed(t, "pay") }, "pay", 1},
		{"Idempotent", toolstage.Idempotent, "charge", 2},
		{"Renamed(Idempotent(t))", func(t toolstage.Tool) toolstage.Tool { return toolstage.Renamed(toolstage.Idempotent(t), "pay") }, "pay", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var runs atomic.Int32
			tool := toolstage.NewResultTool("charge", "Charge.", func(context.Context, struct{}) (*toolstage.ToolResult, error) {
				if runs.Add(1) == 1 {
					return nil, errTimeout
				}
				return &toolstage.ToolResult{Content: "charged", Artifact: 42}, nil
			})
			model := fakemodel.New(fakemodel.ToolCalls(fakemodel.Call(tc.sent, `{}`)), fakemodel.Text("done"))
			a := agent.New(model, toolstage.New([]toolstage.Tool{tc.wrap(tool)}, toolstage.WithToolMiddleware(toolstage.ToolRetry(toolstage.WithBackOff(noWait)))))
			res, err := a.Run(context.Background(), "go")
			if err != nil {
				t.Fatal(err)
			}
			if n := int(runs.Load()); n != tc.runs {
				t.Errorf("ran %d times, want %d", n, tc.runs)
			}
			s := res.Steps[0]
			if tc.runs == 1 && !errors.As(s.Err, new(*toolstage.OutcomeUnknownError)) {
				t.Errorf("Step.Err = %v, want an *OutcomeUnknownError", s.Err)
			}
			if tc.runs == 2 && (s.Err != nil || s.Result != "charged" || s.Artifact != 42) {
				t.Errorf("Step = %+v, want the second attempt's result and artifact", s)
			}
		})
	}
}
