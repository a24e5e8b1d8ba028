package guard_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/retry"
)

// The provider's error texts, verbatim (full stops included).
var (
	//lint:ignore ST1005 verbatim provider error text
	err401 = errors.New("API returned unexpected status code: 401: Incorrect API key provided: sk-abc.")
	//lint:ignore ST1005 verbatim provider error text
	err429 = errors.New("API returned unexpected status code: 429: Rate limit reached for gpt-4o-mini on requests per min (RPM): Limit 3, Used 3, Requested 1.")
	err503 = errors.New("API returned unexpected status code: 503: The engine is currently overloaded, please try again later")
)

func retryQuestion() *tReq {
	return &tReq{Msgs: []msg{{Role: roleUser, Text: "What is the weather in Paris?"}}}
}

// sleepRecorder replaces ModelRetry's wait: it records the waits asked for
// and returns at once.
type sleepRecorder struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (r *sleepRecorder) sleep(ctx context.Context, d time.Duration) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.waits = append(r.waits, d)
	return ctx.Err()
}

func (r *sleepRecorder) recorded() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Duration(nil), r.waits...)
}

func constant(d time.Duration) guard.RetryOption {
	return guard.WithBackOff(func() backoff.BackOff { return backoff.NewConstantBackOff(d) })
}

func text(t *testing.T, resp *tResp) string {
	t.Helper()
	if resp == nil {
		t.Fatalf("response = %v, want one", resp)
	}
	return resp.Text
}

func asRetryError(t *testing.T, err error) *retry.Error {
	t.Helper()
	var re *retry.Error
	if !errors.As(err, &re) {
		t.Fatalf("err = %v (%T), want a *retry.Error", err, err)
	}
	return re
}

func TestModelRetryRetriesTransientErrors(t *testing.T) {
	t.Parallel()
	model := newScript(failStep(err429), failStep(err503), textStep("It is sunny."))
	var sleeps sleepRecorder
	var events recorder
	llm := wrap(model, modelRetry(
		guard.WithSleep(sleeps.sleep), guard.WithEventHandler(events.handle)))

	resp, err := llm(context.Background(), retryQuestion())
	if err != nil {
		t.Fatalf("call() error = %v, want nil", err)
	}
	if got := text(t, resp); got != "It is sunny." {
		t.Errorf("call() text = %q, want %q", got, "It is sunny.")
	}
	if got := len(model.requests()); got != 3 {
		t.Errorf("model calls = %d, want 3", got)
	}
	// The default policy: about 1s, then about 2s (±25%).
	waits := sleeps.recorded()
	if len(waits) != 2 ||
		waits[0] < 750*time.Millisecond || waits[0] > 1250*time.Millisecond ||
		waits[1] < 1500*time.Millisecond || waits[1] > 2500*time.Millisecond {
		t.Errorf("waits = %v, want [~1s ~2s] within ±25%%", waits)
	}
	want := []guard.Event{
		{Kind: guard.EventRetry, Middleware: "ModelRetry", Attempt: 1, Err: err429},
		{Kind: guard.EventRetry, Middleware: "ModelRetry", Attempt: 2, Err: err503},
	}
	if len(events.events) != len(want) {
		t.Fatalf("events = %v, want %v", events.trace(), want)
	}
	for i, e := range events.events {
		if e.Kind != want[i].Kind || e.Middleware != want[i].Middleware || e.Attempt != want[i].Attempt ||
			e.Err != want[i].Err || e.Wait != waits[i] {
			t.Errorf("event %d = %+v, want %+v with Wait %v", i, e, want[i], waits[i])
		}
	}
}

func TestModelRetryPermanentError(t *testing.T) {
	t.Parallel()
	model := newScript(failStep(err401), textStep("never"))
	var sleeps sleepRecorder
	var events recorder
	llm := wrap(model, modelRetry(
		guard.WithSleep(sleeps.sleep), guard.WithEventHandler(events.handle)))

	_, err := llm(context.Background(), retryQuestion())
	if !errors.Is(err, err401) {
		t.Fatalf("call() error = %v, want one that errors.Is the 401", err)
	}
	if re := asRetryError(t, err); re.Attempts != 1 {
		t.Errorf("Attempts = %d, want 1", re.Attempts)
	}
	if got := len(model.requests()); got != 1 {
		t.Errorf("model calls = %d, want 1", got)
	}
	if waits := sleeps.recorded(); len(waits) != 0 {
		t.Errorf("waits = %v, want none", waits)
	}
	if got, want := events.trace(), []string{"ModelRetry:give_up#1"}; !reflect.DeepEqual(got, want) {
		t.Errorf("events = %v, want %v", got, want)
	}
}

func TestModelRetryMaxRetries(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		opts         []guard.RetryOption
		failures     int
		wantCalls    int
		wantAttempts int // 0: the call succeeds
	}{
		{name: "default gives up after 3 attempts", failures: 3, wantCalls: 3, wantAttempts: 3},
		{name: "default succeeds on the third attempt", failures: 2, wantCalls: 3},
		{name: "WithMaxRetries(5) succeeds on the sixth attempt", opts: []guard.RetryOption{guard.WithMaxRetries(5)}, failures: 5, wantCalls: 6},
		{name: "WithMaxRetries(5) gives up after 6 attempts", opts: []guard.RetryOption{guard.WithMaxRetries(5)}, failures: 6, wantCalls: 6, wantAttempts: 6},
		{name: "WithMaxRetries(0) never retries", opts: []guard.RetryOption{guard.WithMaxRetries(0)}, failures: 1, wantCalls: 1, wantAttempts: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var steps []step
			var errs []error
			for i := range tc.failures {
				err := fmt.Errorf("API returned unexpected status code: 429: attempt %d", i+1)
				errs = append(errs, err)
				steps = append(steps, failStep(err))
			}
			model := newScript(append(steps, textStep("ok"))...)
			var sleeps sleepRecorder
			opts := append([]guard.RetryOption{guard.WithSleep(sleeps.sleep)}, tc.opts...)
			llm := wrap(model, modelRetry(opts...))

			resp, err := llm(context.Background(), retryQuestion())
			if got := len(model.requests()); got != tc.wantCalls {
				t.Errorf("model calls = %d, want %d", got, tc.wantCalls)
			}
			if tc.wantAttempts == 0 {
				if err != nil || text(t, resp) != "ok" {
					t.Fatalf("call() = %v, %v, want ok", resp, err)
				}
				return
			}
			re := asRetryError(t, err)
			if re.Attempts != tc.wantAttempts {
				t.Errorf("Attempts = %d, want %d", re.Attempts, tc.wantAttempts)
			}
			last := errs[tc.wantAttempts-1]
			if !errors.Is(err, last) || re.Err != last {
				t.Errorf("error = %v, want the last attempt's error %v", err, last)
			}
			if tc.wantAttempts > 1 && errors.Is(err, errs[0]) {
				t.Errorf("error = %v reaches the first attempt's error, want only the last", err)
			}
			if got := len(sleeps.recorded()); got != tc.wantAttempts-1 {
				t.Errorf("waits = %d, want %d", got, tc.wantAttempts-1)
			}
		})
	}
}

func TestModelRetryCancelDuringWait(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	waiting := make(chan struct{})
	model := newScript(failStep(err503), textStep("never"))
	failureHandled := false
	llm := wrap(model, modelRetry(
		constant(time.Hour), // the real timer, not a fake sleep
		guard.WithEventHandler(func(_ context.Context, e guard.Event) {
			if e.Kind == guard.EventRetry {
				close(waiting)
			}
		}),
		guard.WithOnFailure(func(context.Context, error) (string, error) {
			failureHandled = true
			return "", errors.New("handled")
		}),
	))

	type result struct {
		resp *tResp
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := llm(ctx, retryQuestion())
		done <- result{resp, err}
	}()
	select {
	case <-waiting:
	case r := <-done: // a ModelRetry that did not retry would leave the test waiting forever
		t.Fatalf("call() = %v, %v before any retry, want it waiting to retry the 503", r.resp, r.err)
	}
	cancel()
	var r result
	select {
	case r = <-done:
	case <-time.After(10 * time.Second): // a guard against hanging, not a timing assertion
		t.Fatal("call() still waiting 10s after the context was cancelled, want it to return at once")
	}
	if !errors.Is(r.err, context.Canceled) || !errors.Is(r.err, err503) {
		t.Errorf("error = %v, want one that errors.Is context.Canceled and the 503", r.err)
	}
	if re := asRetryError(t, r.err); re.Attempts != 1 || re.ContextErr != context.Canceled {
		t.Errorf("retry.Error = %+v, want Attempts 1 and ContextErr context.Canceled", re)
	}
	if failureHandled {
		t.Error("the failure handler was called for a cancelled call, want it bypassed")
	}
	if got := len(model.requests()); got != 1 {
		t.Errorf("model calls = %d, want 1", got)
	}
}

func TestModelRetryDeadline(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		timeout   time.Duration
		wantCalls int
		wantWaits []time.Duration
	}{
		{"deadline before the wait ends: give up now", 200 * time.Millisecond, 1, nil},
		{"deadline after the wait ends: wait and retry", time.Hour, 2, []time.Duration{30 * time.Second}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), tc.timeout)
			defer cancel()
			model := newScript(failStep(err503), textStep("ok"))
			var sleeps sleepRecorder
			var events recorder
			llm := wrap(model, modelRetry(constant(30*time.Second),
				guard.WithSleep(sleeps.sleep), guard.WithEventHandler(events.handle)))

			resp, err := llm(ctx, retryQuestion())
			if got := len(model.requests()); got != tc.wantCalls {
				t.Errorf("model calls = %d, want %d", got, tc.wantCalls)
			}
			if got := sleeps.recorded(); !reflect.DeepEqual(got, tc.wantWaits) {
				t.Errorf("waits = %v, want %v", got, tc.wantWaits)
			}
			if tc.wantCalls == 2 {
				if err != nil || text(t, resp) != "ok" {
					t.Errorf("call() = %v, %v, want ok", resp, err)
				}
				return
			}
			if !errors.Is(err, err503) || errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("error = %v, want the 503, not the deadline", err)
			}
			if re := asRetryError(t, err); re.Attempts != 1 {
				t.Errorf("Attempts = %d, want 1", re.Attempts)
			}
			if got, want := events.trace(), []string{"ModelRetry:give_up#1"}; !reflect.DeepEqual(got, want) {
				t.Errorf("events = %v, want %v", got, want)
			}
		})
	}
}

type retryAfterError struct{ d time.Duration }

func (e retryAfterError) Error() string             { return "API returned unexpected status code: 429" }
func (e retryAfterError) RetryAfter() time.Duration { return e.d }

func TestModelRetryHonoursRetryAfter(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		policy   []guard.RetryOption
		err      error
		wantWait time.Duration
	}{
		{"hint above the backoff", []guard.RetryOption{constant(time.Second)},
			errors.New("API returned unexpected status code: 429: Rate limit reached for gpt-4o. Please try again in 20s."), 20 * time.Second},
		{"hint below the backoff", []guard.RetryOption{constant(5 * time.Second)},
			errors.New("API returned unexpected status code: 429: retry after 2"), 5 * time.Second},
		{"hint capped at the default 60s", nil,
			errors.New("API returned unexpected status code: 429: Rate limit reached for gpt-4o on tokens per day (TPD). Please try again in 6m0s."), time.Minute},
		{"RetryAfter method", []guard.RetryOption{constant(time.Second)}, retryAfterError{7 * time.Second}, 7 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			model := newScript(failStep(tc.err), textStep("ok"))
			var sleeps sleepRecorder
			opts := append([]guard.RetryOption{guard.WithSleep(sleeps.sleep)}, tc.policy...)
			llm := wrap(model, modelRetry(opts...))
			if _, err := llm(context.Background(), retryQuestion()); err != nil {
				t.Fatalf("call() error = %v, want nil", err)
			}
			if got := sleeps.recorded(); len(got) != 1 || got[0] != tc.wantWait {
				t.Errorf("waits = %v, want [%v]", got, tc.wantWait)
			}
		})
	}
}

// TestModelRetryStreaming: an attempt that streamed anything to the caller
// (text or reasoning) is not retried, unless WithRetryStreamed; one that
// streamed nothing, or only empty parts, is. The caller's request is never
// modified. (Package middleware's TestModelRetryStreamingOptions checks
// langchaingo's streaming functions and options.)
func TestModelRetryStreaming(t *testing.T) {
	t.Parallel()
	reasonThenFail := streamThenFail(err503, part{Kind: partReasoning, Data: "thinking…"})
	tests := []struct {
		name         string
		steps        []step
		opts         []guard.RetryOption
		wantCalls    int
		wantStreamed string
		wantErr      bool
	}{
		{
			name:         "streamed then failed: not replayed",
			steps:        []step{streamThenFail(err503, part{Data: "Hel"}, part{Data: "lo"}), textStep("Hello, Paris!")},
			wantCalls:    1,
			wantStreamed: "Hello",
			wantErr:      true,
		},
		{
			name:         "failed before streaming: retried",
			steps:        []step{streamThenFail(err503), textStep("Hello, Paris!")},
			wantCalls:    2,
			wantStreamed: "Hello, Paris!",
		},
		{
			name:         "empty chunks only: retried",
			steps:        []step{streamThenFail(err503, part{}), textStep("Hello, Paris!")},
			wantCalls:    2,
			wantStreamed: "Hello, Paris!",
		},
		{
			name:         "WithRetryStreamed: replayed",
			steps:        []step{streamThenFail(err503, part{Data: "Hel"}, part{Data: "lo"}), textStep("Hello, Paris!")},
			opts:         []guard.RetryOption{guard.WithRetryStreamed()},
			wantCalls:    2,
			wantStreamed: "HelloHello, Paris!",
		},
		{
			name:         "reasoning streamed then failed: not replayed",
			steps:        []step{reasonThenFail, textStep("never")},
			wantCalls:    1,
			wantStreamed: "thinking…",
			wantErr:      true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			model := newScript(tc.steps...)
			var sink tape
			var sleeps sleepRecorder
			opts := append([]guard.RetryOption{guard.WithSleep(sleeps.sleep)}, tc.opts...)
			llm := wrap(model, modelRetry(opts...))

			req := retryQuestion()
			req.Out = sink.sink
			before := *req
			resp, err := llm(context.Background(), req)

			if got := len(model.requests()); got != tc.wantCalls {
				t.Errorf("model calls = %d, want %d", got, tc.wantCalls)
			}
			if got := sink.String(); got != tc.wantStreamed {
				t.Errorf("streamed %q, want %q", got, tc.wantStreamed)
			}
			if tc.wantErr {
				if !errors.Is(err, err503) {
					t.Errorf("error = %v, want the 503", err)
				}
				if re := asRetryError(t, err); re.Attempts != 1 {
					t.Errorf("Attempts = %d, want 1", re.Attempts)
				}
			} else if err != nil || text(t, resp) != "Hello, Paris!" {
				t.Errorf("call() = %v, %v, want %q", resp, err, "Hello, Paris!")
			}
			if !reflect.DeepEqual(req.Msgs, before.Msgs) || reflect.ValueOf(req.Out).Pointer() != reflect.ValueOf(before.Out).Pointer() {
				t.Errorf("caller's request = %+v, want it untouched", req)
			}
		})
	}
}

func retryWeatherTools() []guard.Tool {
	return []guard.Tool{{Name: "get_weather", Schema: map[string]any{
		"type":       "object",
		"properties": map[string]any{"city": map[string]any{"type": "string"}},
		"required":   []any{"city"},
	}}}
}

// A 503 in the middle of a validation re-ask is retried by ModelRetry, and
// the re-ask still succeeds: ModelRetry sits inside ToolArgValidation and
// runs once per validation attempt, with a fresh attempt count.
func TestModelRetryInsideToolArgValidation(t *testing.T) {
	t.Parallel()
	model := newScript(
		callsStep(call("get_weather", `{"city": 42}`)),
		failStep(err503),
		callsStep(call("get_weather", `{"city": "Paris"}`)),
	)
	var sleeps sleepRecorder
	var events recorder
	llm := wrap(model,
		toolArgValidation(guard.WithEventHandler(events.handle)),
		modelRetry(guard.WithSleep(sleeps.sleep), guard.WithEventHandler(events.handle)),
	)

	req := retryQuestion()
	req.Tools = retryWeatherTools()
	resp, err := llm(context.Background(), req)
	if err != nil {
		t.Fatalf("call() error = %v, want nil", err)
	}
	if got := string(resp.Calls[0].Args); got != `{"city": "Paris"}` {
		t.Errorf("tool call arguments = %s, want the corrected call", got)
	}
	reqs := model.requests()
	if len(reqs) != 3 {
		t.Fatalf("model calls = %d, want 3", len(reqs))
	}
	if len(reqs[0].Msgs) != 1 || len(reqs[1].Msgs) <= 1 {
		t.Errorf("messages per call = %d, %d, want the question, then the re-ask with feedback", len(reqs[0].Msgs), len(reqs[1].Msgs))
	}
	if !reflect.DeepEqual(reqs[1].Msgs, reqs[2].Msgs) {
		t.Error("the retried call's messages differ from the failed re-ask's, want the same re-ask sent again")
	}
	want := []string{
		"ToolArgValidation:invalid#1",
		"ToolArgValidation:reask#2",
		"ModelRetry:retry#1", // ModelRetry counts the re-ask call's attempts afresh
	}
	if got := events.trace(); !reflect.DeepEqual(got, want) {
		t.Errorf("events = %v, want %v", got, want)
	}
}

// Everything inside ModelRetry runs once per attempt; everything outside it,
// once per call (the grpc-go TestRetryChainedInterceptor pattern).
func TestModelRetryRunsInnerMiddlewaresPerAttempt(t *testing.T) {
	t.Parallel()
	var outer, inner atomic.Int32
	count := func(n *atomic.Int32) guard.Middleware[*tReq, *tResp] {
		return func(next guard.Handler[*tReq, *tResp]) guard.Handler[*tReq, *tResp] {
			return func(ctx context.Context, req *tReq) (*tResp, error) {
				n.Add(1)
				return next(ctx, req)
			}
		}
	}
	model := newScript(failStep(err503), failStep(err429), textStep("ok"))
	var sleeps sleepRecorder
	llm := wrap(model, count(&outer), modelRetry(guard.WithSleep(sleeps.sleep)), count(&inner))
	if _, err := llm(context.Background(), retryQuestion()); err != nil {
		t.Fatalf("call() error = %v, want nil", err)
	}
	if outer.Load() != 1 || inner.Load() != 3 {
		t.Errorf("outer, inner calls = %d, %d, want 1, 3", outer.Load(), inner.Load())
	}
}

func TestModelRetryRetryIf(t *testing.T) {
	t.Parallel()
	always := guard.WithRetryIf(func(error) bool { return true })
	never := guard.WithRetryIf(func(error) bool { return false })
	tests := []struct {
		name      string
		steps     func(cancel context.CancelFunc) []step
		opt       guard.RetryOption
		wantCalls int
		wantErrIs []error
	}{
		{"retries what the predicate accepts", func(context.CancelFunc) []step {
			return []step{failStep(err401), textStep("ok")}
		}, always, 2, nil},
		{"does not retry what the predicate refuses", func(context.CancelFunc) []step {
			return []step{failStep(err503), textStep("ok")}
		}, never, 1, []error{err503}},
		{"never retries once the caller's context is done", func(cancel context.CancelFunc) []step {
			return []step{func(context.Context, *script, *tReq) (*tResp, error) {
				cancel()
				return nil, errors.New("request cancelled") // what the OpenAI client says
			}, textStep("ok")}
		}, always, 1, []error{context.Canceled}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			model := newScript(tc.steps(cancel)...)
			var sleeps sleepRecorder
			llm := wrap(model, modelRetry(guard.WithSleep(sleeps.sleep), tc.opt))
			resp, err := llm(ctx, retryQuestion())
			if got := len(model.requests()); got != tc.wantCalls {
				t.Errorf("model calls = %d, want %d", got, tc.wantCalls)
			}
			if got := len(sleeps.recorded()); got != tc.wantCalls-1 {
				t.Errorf("waits = %d, want %d", got, tc.wantCalls-1)
			}
			if tc.wantErrIs == nil {
				if err != nil || text(t, resp) != "ok" {
					t.Errorf("call() = %v, %v, want ok", resp, err)
				}
				return
			}
			for _, target := range tc.wantErrIs {
				if !errors.Is(err, target) {
					t.Errorf("error = %v, want one that errors.Is %v", err, target)
				}
			}
		})
	}
}

func TestModelRetryOnFailure(t *testing.T) {
	t.Parallel()
	errCustom := errors.New("custom")
	var gotErr error
	tests := []struct {
		name      string
		steps     []step
		opt       guard.RetryOption
		wantText  string
		wantErrIs error
	}{
		{
			name:     "ContinueOnFailure after the retries",
			steps:    []step{failStep(err503), failStep(err503), failStep(err429)},
			opt:      guard.WithOnFailure(guard.ContinueOnFailure),
			wantText: "Model call failed after 3 attempts: " + err429.Error(),
		},
		{
			name:     "ContinueOnFailure after a permanent error",
			steps:    []step{failStep(err401)},
			opt:      guard.WithOnFailure(guard.ContinueOnFailure),
			wantText: "Model call failed after 1 attempt: " + err401.Error(),
		},
		{
			name:  "custom handler",
			steps: []step{failStep(err401)},
			opt: guard.WithOnFailure(func(_ context.Context, err error) (string, error) {
				gotErr = err
				return "", errCustom
			}),
			wantErrIs: errCustom,
		},
		{
			name:  "handler returning nothing",
			steps: []step{failStep(err401)},
			opt: guard.WithOnFailure(func(context.Context, error) (string, error) {
				return "", nil
			}),
			wantErrIs: err401,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Not parallel: the custom handler case writes gotErr.
			model := newScript(tc.steps...)
			var sleeps sleepRecorder
			llm := wrap(model, modelRetry(guard.WithSleep(sleeps.sleep), tc.opt))
			resp, err := llm(context.Background(), retryQuestion())
			if tc.wantErrIs != nil {
				if !errors.Is(err, tc.wantErrIs) {
					t.Errorf("error = %v, want one that errors.Is %v", err, tc.wantErrIs)
				}
				return
			}
			if err != nil {
				t.Fatalf("call() error = %v, want nil", err)
			}
			if got := text(t, resp); got != tc.wantText {
				t.Errorf("text = %q, want %q", got, tc.wantText)
			}
			if len(resp.Calls) != 0 {
				t.Errorf("tool calls = %v, want none, so that an agent loop ends", resp.Calls)
			}
		})
	}
	if re := asRetryError(t, gotErr); re.Attempts != 1 || !errors.Is(gotErr, err401) {
		t.Errorf("handler received %v, want a *retry.Error of 1 attempt reaching the 401", gotErr)
	}
}

func TestModelRetryStopPolicy(t *testing.T) {
	t.Parallel()
	model := newScript(failStep(err503), textStep("never"))
	llm := wrap(model, modelRetry(
		guard.WithBackOff(func() backoff.BackOff { return &backoff.StopBackOff{} })))
	_, err := llm(context.Background(), retryQuestion())
	if re := asRetryError(t, err); re.Attempts != 1 || !errors.Is(err, err503) {
		t.Errorf("error = %v, want a *retry.Error of 1 attempt reaching the 503", err)
	}
	if got := len(model.requests()); got != 1 {
		t.Errorf("model calls = %d, want 1", got)
	}
}

// The backoff factory is called once per logical call that fails, never
// shared between concurrent calls.
func TestModelRetryBackOffPerCall(t *testing.T) {
	t.Parallel()
	var made atomic.Int32
	var policies sync.Map // BackOff -> struct{}
	factory := func() backoff.BackOff {
		made.Add(1)
		b := retry.NewExponentialBackOff()
		policies.Store(b, struct{}{})
		return b
	}
	var sleeps sleepRecorder
	mw := modelRetry(guard.WithBackOff(factory), guard.WithSleep(sleeps.sleep))
	madeAtConstruction := made.Load()

	var seen sync.Map // question -> attempts
	h := mw(func(_ context.Context, req *tReq) (*tResp, error) {
		q := req.Msgs[0].Text
		n, _ := seen.LoadOrStore(q, new(atomic.Int32))
		if n.(*atomic.Int32).Add(1) == 1 && !strings.HasPrefix(q, "fine") {
			return nil, err503
		}
		return &tResp{Text: q}, nil
	})

	const calls = 8
	var wg sync.WaitGroup
	for i := range calls + 1 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			q := fmt.Sprintf("question %d", i)
			if i == calls {
				q = "fine question" // succeeds at once: no policy needed
			}
			req := &tReq{Msgs: []msg{{Role: roleUser, Text: q}}}
			resp, err := h(context.Background(), req)
			if err != nil || resp.Text != q {
				t.Errorf("call %q = %v, %v, want its own answer", q, resp, err)
			}
		}()
	}
	wg.Wait()
	if got := made.Load() - madeAtConstruction; got != calls {
		t.Errorf("backoff factory calls = %d, want %d (one per failing call)", got, calls)
	}
}

func TestModelRetryOptionPanics(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		fn   func()
		want string
	}{
		{"WithBackOff(nil)", func() { guard.WithBackOff(nil) }, "WithBackOff(nil)"},
		{"WithRetryIf(nil)", func() { guard.WithRetryIf(nil) }, "WithRetryIf(nil)"},
		{"WithOnFailure(nil)", func() { guard.WithOnFailure(nil) }, "WithOnFailure(nil)"},
		{"factory returning nil", func() {
			modelRetry(guard.WithBackOff(func() backoff.BackOff { return nil }))
		}, "returned a nil backoff.BackOff"},
		{"negative WithMaxRetries", func() { modelRetry(guard.WithMaxRetries(-1)) }, "ModelRetry: WithMaxRetries(-1)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			defer func() {
				r := recover()
				if msg, _ := r.(string); !strings.Contains(msg, tc.want) {
					t.Errorf("panic = %v, want a message containing %q", r, tc.want)
				}
			}()
			tc.fn()
		})
	}
}

// TestModelRetryDeadlineShorterThanRetryAfter: when the provider asks for a
// wait longer than the time left before the caller's deadline, the give-up
// error says so, with the wait and the time left, and still wraps the 429.
func TestModelRetryDeadlineShorterThanRetryAfter(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		fail   error
		hinted bool
		says   string
	}{
		{"Retry-After", retryAfterError{30 * time.Second}, true, "the provider asked to wait 30s, longer than the "},
		{"backoff", err503, false, "the backoff asked to wait 1m0s, longer than the "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			model := newScript(failStep(tc.fail), textStep("ok"))
			var sleeps sleepRecorder
			llm := wrap(model, modelRetry(constant(time.Millisecond*map[bool]time.Duration{true: 1, false: 60_000}[tc.hinted]),
				guard.WithSleep(sleeps.sleep)))
			_, err := llm(ctx, retryQuestion())
			re := asRetryError(t, err)
			if !errors.Is(err, tc.fail) || re.Hinted != tc.hinted || re.Left <= 0 || re.Left > 5*time.Second ||
				!strings.Contains(err.Error(), tc.says) || !strings.Contains(err.Error(), " left before the context's deadline; last error: ") {
				t.Errorf("error = %v (%+v), want one saying %q... left before the context's deadline, wrapping %v", err, re, tc.says, tc.fail)
			}
			if len(sleeps.recorded()) != 0 {
				t.Errorf("waited %v, want no wait", sleeps.recorded())
			}
		})
	}
}
