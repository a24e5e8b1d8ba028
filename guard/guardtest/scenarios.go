package guardtest

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/guard"
)

// A bad call is re-asked with its violations; the good one is returned.
func badThenGood[Req, Resp any](t *testing.T, h Host[Req, Resp]) {
	c := h.Codec()
	var ev events
	m, resp, err := run(context.Background(), h, []Tool{weather}, []Step{
		{Calls: []guard.Call{call("get_weather", `{"city": 42}`)}},
		{Calls: []guard.Call{call("get_weather", `{"city": "Paris"}`)}},
	}, guard.ToolArgValidation(c, guard.WithEventHandler(ev.handle)))
	if err != nil {
		t.Fatalf("error = %v, want the corrected call", err)
	}
	wantCalls(t, h, resp, call("get_weather", `{"city": "Paris"}`))
	reqs := m.requests()
	if len(reqs) != 2 {
		t.Fatalf("the model was called %d times, want 2", len(reqs))
	}
	if got := h.Replayed(reqs[0]); got != nil {
		t.Errorf("the first request replays %+v, want nothing", got)
	}
	wantReplay(t, h, reqs[1], Replay{Name: "get_weather", Args: []byte(`{"city": 42}`), Result: "/city", Refused: true})
	if !ev.has(guard.EventInvalid) || !ev.has(guard.EventReask) {
		t.Errorf("events %v, want invalid and reask", ev.kinds())
	}
}

// A valid sibling of a bad call is not run: the re-ask tells the model so,
// and the whole batch is asked for again.
func validSiblingNotRun[Req, Resp any](t *testing.T, h Host[Req, Resp]) {
	c := h.Codec()
	m, resp, err := run(context.Background(), h, []Tool{weather, clock}, []Step{
		{Calls: []guard.Call{call("get_weather", `{"city": "Paris"}`), call("get_time", `{"tz": 5}`)}},
		{Calls: []guard.Call{call("get_weather", `{"city": "Paris"}`), call("get_time", `{"tz": "Europe/Paris"}`)}},
	}, guard.ToolArgValidation(c))
	if err != nil {
		t.Fatal(err)
	}
	wantCalls(t, h, resp, call("get_weather", `{"city": "Paris"}`), call("get_time", `{"tz": "Europe/Paris"}`))
	reqs := m.requests()
	if len(reqs) != 2 {
		t.Fatalf("the model was called %d times, want 2", len(reqs))
	}
	wantReplay(t, h, reqs[1],
		Replay{Name: "get_weather", Result: "Not executed", Refused: false},
		Replay{Name: "get_time", Result: "/tz", Refused: true})
}

// A call of a tool that has no schema passes untouched by default.
func unknownToolPassed[Req, Resp any](t *testing.T, h Host[Req, Resp]) {
	var ev events
	m, resp, err := run(context.Background(), h, []Tool{weather}, []Step{
		{Calls: []guard.Call{call("launch_rockets", `{"count": "all", "extra": null}`)}},
	}, guard.ToolArgValidation(h.Codec(), guard.WithEventHandler(ev.handle)))
	if err != nil {
		t.Fatal(err)
	}
	wantCalls(t, h, resp, call("launch_rockets", `{"count": "all", "extra": null}`))
	if n := len(m.requests()); n != 1 {
		t.Errorf("the model was called %d times, want 1", n)
	}
	if !ev.has(guard.EventUnknownTool) {
		t.Errorf("events %v, want unknown_tool", ev.kinds())
	}
}

// With UnknownReject, a call of an unknown tool is re-asked with the
// tools that exist.
func unknownToolRejected[Req, Resp any](t *testing.T, h Host[Req, Resp]) {
	m, resp, err := run(context.Background(), h, []Tool{weather}, []Step{
		{Calls: []guard.Call{call("get_wether", `{"city": "Paris"}`)}},
		{Calls: []guard.Call{call("get_weather", `{"city": "Paris"}`)}},
	}, guard.ToolArgValidation(h.Codec(), guard.WithUnknownTools(guard.UnknownReject)))
	if err != nil {
		t.Fatal(err)
	}
	wantCalls(t, h, resp, call("get_weather", `{"city": "Paris"}`))
	reqs := m.requests()
	if len(reqs) != 2 {
		t.Fatalf("the model was called %d times, want 2", len(reqs))
	}
	wantReplay(t, h, reqs[1], Replay{Name: "get_wether", Result: "get_weather", Refused: true})
}

// Arguments that are not JSON are a violation at the root; the re-ask
// says so.
func brokenJSON[Req, Resp any](t *testing.T, h Host[Req, Resp]) {
	m, resp, err := run(context.Background(), h, []Tool{weather}, []Step{
		{Calls: []guard.Call{call("get_weather", `{"city": "Paris"`)}},
		{Calls: []guard.Call{call("get_weather", `{"city": "Paris"}`)}},
	}, guard.ToolArgValidation(h.Codec()))
	if err != nil {
		t.Fatal(err)
	}
	wantCalls(t, h, resp, call("get_weather", `{"city": "Paris"}`))
	reqs := m.requests()
	if len(reqs) != 2 {
		t.Fatalf("the model was called %d times, want 2", len(reqs))
	}
	wantReplay(t, h, reqs[1], Replay{Name: "get_weather", Result: "not valid JSON", Refused: true})
}

// A null on an optional key that breaks the schema is stripped without a
// re-ask, and the client reads the call without it.
func stripWrittenBack[Req, Resp any](t *testing.T, h Host[Req, Resp]) {
	var ev events
	m, resp, err := run(context.Background(), h, []Tool{weather}, []Step{
		{Calls: []guard.Call{call("get_weather", `{"city": "Paris", "units": null}`)}},
	}, guard.ToolArgValidation(h.Codec(), guard.WithEventHandler(ev.handle)))
	if err != nil {
		t.Fatal(err)
	}
	wantCalls(t, h, resp, call("get_weather", `{"city": "Paris"}`))
	if n := len(m.requests()); n != 1 {
		t.Errorf("the model was called %d times, want 1", n)
	}
	if !ev.has(guard.EventStripped) {
		t.Errorf("events %v, want stripped", ev.kinds())
	}
}

// "3" for an integer is coerced without a re-ask, and the client reads 3.
func coercionWrittenBack[Req, Resp any](t *testing.T, h Host[Req, Resp]) {
	var ev events
	m, resp, err := run(context.Background(), h, []Tool{weather}, []Step{
		{Calls: []guard.Call{call("get_weather", `{"city": "Paris", "days": "3"}`)}},
	}, guard.ToolArgValidation(h.Codec(), guard.WithEventHandler(ev.handle)))
	if err != nil {
		t.Fatal(err)
	}
	wantCalls(t, h, resp, call("get_weather", `{"city": "Paris", "days": 3}`))
	if n := len(m.requests()); n != 1 {
		t.Errorf("the model was called %d times, want 1", n)
	}
	if !ev.has(guard.EventRepaired) {
		t.Errorf("events %v, want repaired", ev.kinds())
	}
}

// alwaysBad is a script whose every answer is invalid.
func alwaysBad(n int) []Step {
	steps := make([]Step, n)
	for i := range steps {
		steps[i] = Step{Calls: []guard.Call{call("get_weather", `{"city": 42}`)}}
	}
	return steps
}

// Retries exhausted, failing open: the last response is handed on, and
// give_up is reported.
func exhaustedOpen[Req, Resp any](t *testing.T, h Host[Req, Resp]) {
	var ev events
	m, resp, err := run(context.Background(), h, []Tool{weather}, alwaysBad(3),
		guard.ToolArgValidation(h.Codec(), guard.WithMaxRetries(2), guard.WithEventHandler(ev.handle)))
	if err != nil {
		t.Fatalf("error = %v, want the last response (fail open)", err)
	}
	wantCalls(t, h, resp, call("get_weather", `{"city": 42}`))
	if n := len(m.requests()); n != 3 {
		t.Errorf("the model was called %d times, want 3", n)
	}
	if !ev.has(guard.EventGiveUp) {
		t.Errorf("events %v, want give_up", ev.kinds())
	}
}

// Retries exhausted, failing closed: an *InvalidToolCallsError.
func exhaustedClosed[Req, Resp any](t *testing.T, h Host[Req, Resp]) {
	m, _, err := run(context.Background(), h, []Tool{weather}, alwaysBad(2),
		guard.ToolArgValidation(h.Codec(), guard.WithMaxRetries(1), guard.WithFailClosed()))
	var ie *guard.InvalidToolCallsError
	if !errors.As(err, &ie) || ie.Attempts != 2 || len(ie.Errors) != 1 || ie.Errors[0].Tool != "get_weather" {
		t.Fatalf("error = %v, want an *InvalidToolCallsError of 2 attempts naming get_weather", err)
	}
	if n := len(m.requests()); n != 2 {
		t.Errorf("the model was called %d times, want 2", n)
	}
}

// A model error passes through every stage unchanged (a permanent one is
// not retried).
func modelErrorPassedThrough[Req, Resp any](t *testing.T, h Host[Req, Resp]) {
	boom := errors.New("guardtest: invalid API key")
	c := h.Codec()
	m, _, err := run(context.Background(), h, []Tool{weather}, []Step{{Err: boom}},
		guard.ToolCallLimit(c, guard.WithRunLimit(5)), guard.ToolArgValidation(c), guard.ModelRetry(c, guard.WithBackOff(noWait)))
	if !errors.Is(err, boom) {
		t.Fatalf("error = %v, want one wrapping the model's", err)
	}
	if n := len(m.requests()); n != 1 {
		t.Errorf("the model was called %d times, want 1", n)
	}
}

// A context cancelled while the model answers badly ends the call with the
// context's error: no re-ask is made.
func cancelled[Req, Resp any](t *testing.T, h Host[Req, Resp]) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := &model[Req, Resp]{h: h, steps: alwaysBad(3), before: func(int) { cancel() }}
	_, err := guard.ToolArgValidation(h.Codec())(m.handle)(ctx, h.Request([]Tool{weather}))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error = %v, want context.Canceled", err)
	}
	if n := len(m.requests()); n != 1 {
		t.Errorf("the model was called %d times after the cancel, want 1", n)
	}
}

// A transient model error (a 503) is retried; the answer after it is
// returned.
func transientErrorRetried[Req, Resp any](t *testing.T, h Host[Req, Resp]) {
	var ev events
	m, resp, err := run(context.Background(), h, []Tool{weather}, []Step{
		{Err: status503{}},
		{Calls: []guard.Call{call("get_weather", `{"city": "Paris"}`)}},
	}, guard.ModelRetry(h.Codec(), guard.WithBackOff(noWait), guard.WithEventHandler(ev.handle)))
	if err != nil {
		t.Fatal(err)
	}
	wantCalls(t, h, resp, call("get_weather", `{"city": "Paris"}`))
	if n := len(m.requests()); n != 2 {
		t.Errorf("the model was called %d times, want 2", n)
	}
	if !ev.has(guard.EventRetry) {
		t.Errorf("events %v, want retry", ev.kinds())
	}
}

// twoCalls is a response asking for two calls of get_weather.
var twoCalls = Step{Calls: []guard.Call{call("get_weather", `{"city": "Paris"}`), call("get_weather", `{"city": "Rome"}`)}}

// ExitContinue: a response over the run limit is re-asked, its calls told
// of the limit; the response that fits is returned.
func limitExitContinue[Req, Resp any](t *testing.T, h Host[Req, Resp]) {
	ctx := guard.WithRun(context.Background())
	m, resp, err := run(ctx, h, []Tool{weather}, []Step{
		twoCalls,
		{Calls: []guard.Call{call("get_weather", `{"city": "Paris"}`)}},
	}, guard.ToolCallLimit(h.Codec(), guard.WithRunLimit(1)))
	if err != nil {
		t.Fatal(err)
	}
	wantCalls(t, h, resp, call("get_weather", `{"city": "Paris"}`))
	reqs := m.requests()
	if len(reqs) != 2 {
		t.Fatalf("the model was called %d times, want 2", len(reqs))
	}
	wantReplay(t, h, reqs[1],
		Replay{Name: "get_weather", Result: "limit", Refused: false},
		Replay{Name: "get_weather", Result: "limit", Refused: true})
}

// ExitEnd: a response over the limit is replaced by an answer without tool
// calls whose text names the limit, which the codec reads back as a
// stand-in.
func limitExitEnd[Req, Resp any](t *testing.T, h Host[Req, Resp]) {
	ctx := guard.WithRun(context.Background())
	_, resp, err := run(ctx, h, []Tool{weather}, []Step{twoCalls},
		guard.ToolCallLimit(h.Codec(), guard.WithRunLimit(1), guard.WithExitBehavior(guard.ExitEnd)))
	if err != nil {
		t.Fatal(err)
	}
	calls, text := h.Read(resp)
	if len(calls) != 0 || !strings.Contains(text, "limit") {
		t.Errorf("the client reads %s and %q, want no call and a text about the limit", show(calls), text)
	}
	var le *guard.LimitExceededError
	standIn := h.Codec().Response(h.Request([]Tool{weather}), resp).StandIn
	if !errors.As(standIn, &le) || le.Limit != 1 {
		t.Errorf("StandIn = %v, want the *LimitExceededError", standIn)
	}
}

// ExitError: a *LimitExceededError.
func limitExitError[Req, Resp any](t *testing.T, h Host[Req, Resp]) {
	ctx := guard.WithRun(context.Background())
	_, _, err := run(ctx, h, []Tool{weather}, []Step{twoCalls},
		guard.ToolCallLimit(h.Codec(), guard.WithRunLimit(1), guard.WithExitBehavior(guard.ExitError)))
	var le *guard.LimitExceededError
	if !errors.As(err, &le) || le.Scope != guard.ScopeRun || le.Limit != 1 || le.Requested != 2 {
		t.Fatalf("error = %v, want a *LimitExceededError of the run limit 1 with 2 requested", err)
	}
}

// ModelCallLimit: the second model call of a run over a limit of 1 never
// reaches the model; the caller reads the stand-in answer.
func modelCallLimit[Req, Resp any](t *testing.T, h Host[Req, Resp]) {
	ctx := guard.WithRun(context.Background())
	m := &model[Req, Resp]{h: h, steps: []Step{{Text: "one"}, {Text: "two"}}}
	handler := guard.ModelCallLimit(h.Codec(), guard.WithRunLimit(1))(m.handle)
	if _, err := handler(ctx, h.Request(nil)); err != nil {
		t.Fatal(err)
	}
	resp, err := handler(ctx, h.Request(nil))
	if err != nil {
		t.Fatal(err)
	}
	if calls, text := h.Read(resp); len(calls) != 0 || !strings.Contains(text, "limit") {
		t.Errorf("the second call read %s and %q, want a text about the limit", show(calls), text)
	}
	if n := len(m.requests()); n != 1 {
		t.Errorf("the model was called %d times, want 1", n)
	}
}

// A text answer passes every stage untouched.
func textAnswerUntouched[Req, Resp any](t *testing.T, h Host[Req, Resp]) {
	c := h.Codec()
	m, resp, err := run(guard.WithRun(context.Background()), h, []Tool{weather}, []Step{{Text: "It is sunny in Paris."}},
		guard.ToolCallLimit(c, guard.WithRunLimit(1)), guard.ToolArgValidation(c), guard.ModelRetry(c))
	if err != nil {
		t.Fatal(err)
	}
	if calls, text := h.Read(resp); len(calls) != 0 || text != "It is sunny in Paris." {
		t.Errorf("the client reads %s and %q, want the text alone", show(calls), text)
	}
	if n := len(m.requests()); n != 1 {
		t.Errorf("the model was called %d times, want 1", n)
	}
}
