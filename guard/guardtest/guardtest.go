// Package guardtest checks that a [guard.Codec] lets package guard's stages
// do their work on a host's requests and responses, as testing/slogtest
// checks a slog.Handler: an adapter's author calls [Run] from a test with a
// [Host] for the codec, and every scenario runs the real stages over it
// against a scripted model.
//
// The scenarios: a bad call re-asked and the good one returned; a valid
// sibling of a bad call not run and told so; a call of an unknown tool
// passed or rejected; broken JSON re-asked; an empty value stripped and a
// coercion made, both written back where the host's client reads them;
// retries exhausted, failing open and failing closed; a model error passed
// through; a cancelled context ending the call; a transient model error
// retried; and the limits' three exits (re-ask, stand-in answer, error).
package guardtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/cenkalti/backoff/v4"
	"github.com/toolguard/toolguard/guard"
)

// Tool is a tool a request offers, as [Host.Request] takes it.
type Tool struct {
	Name   string
	Schema string // a JSON Schema, as JSON text
}

// Step is one answer of the scripted model: tool calls (an empty ID lets
// the host give one or none, as it would), text, or an error.
type Step struct {
	Calls []guard.Call
	Text  string
	Err   error
}

// Replay is a tool call a re-ask request shows the model again, with the
// tool result it is answered with.
type Replay struct {
	Name    string
	Args    []byte
	Result  string
	Refused bool // the host's error flag on the result, when it has one
}

// Host adapts the codec under test to the scenarios. Its methods are
// called from one test's goroutine.
type Host[Req, Resp any] interface {
	// Codec returns the codec under test.
	Codec() guard.Codec[Req, Resp]
	// Request returns a request holding one user message that offers
	// tools.
	Request(tools []Tool) Req
	// Respond returns the response the host's model gives for step to
	// req.
	Respond(req Req, step Step) Resp
	// Read returns what the host's client reads of resp: its tool calls
	// (name and arguments; ids are not compared) and its text. It must
	// read resp as a client does, not through the codec.
	Read(resp Resp) (calls []guard.Call, text string)
	// Replayed returns the tool calls a re-ask request shows the model
	// again after the original request, in order, each with its result;
	// nil when req shows none.
	Replayed(req Req) []Replay
	// Refusals reports whether the host's tool results carry an error
	// flag (Anthropic's is_error), so that Replay.Refused is checked.
	Refusals() bool
}

// Run runs every scenario against h, each in a subtest, then again under
// "RequiredOnly/" with h's codec stripped to [guard.Codec]'s five methods,
// hiding every optional interface it implements: a codec that writes only
// those must work with every stage.
func Run[Req, Resp any](t *testing.T, h Host[Req, Resp]) {
	t.Helper()
	for _, s := range scenarios[Req, Resp]() {
		t.Run(s.name, func(t *testing.T) { s.run(t, h) })
	}
	bare := requiredOnlyHost[Req, Resp]{h}
	for _, s := range scenarios[Req, Resp]() {
		t.Run("RequiredOnly/"+s.name, func(t *testing.T) { s.run(t, bare) })
	}
}

// requiredOnlyHost is a Host whose codec has guard.Codec's methods only.
type requiredOnlyHost[Req, Resp any] struct{ Host[Req, Resp] }

func (h requiredOnlyHost[Req, Resp]) Codec() guard.Codec[Req, Resp] {
	return requiredOnly[Req, Resp]{h.Host.Codec()}
}

// requiredOnly forwards guard.Codec's methods, and nothing else, to c.
type requiredOnly[Req, Resp any] struct{ c guard.Codec[Req, Resp] }

func (r requiredOnly[Req, Resp]) Request(ctx context.Context, req Req) guard.RequestInfo[Req, Resp] {
	return r.c.Request(ctx, req)
}

func (r requiredOnly[Req, Resp]) Response(req Req, resp Resp) guard.ResponseInfo {
	return r.c.Response(req, resp)
}

func (r requiredOnly[Req, Resp]) Accept(resp Resp, vs []guard.Verdict) (Resp, error) {
	return r.c.Accept(resp, vs)
}

func (r requiredOnly[Req, Resp]) Reask(req Req, resp Resp, as []guard.Answer) (Req, error) {
	return r.c.Reask(req, resp, as)
}

func (r requiredOnly[Req, Resp]) End(req Req, text string, cause error) Resp {
	return r.c.End(req, text, cause)
}

type scenario[Req, Resp any] struct {
	name string
	run  func(t *testing.T, h Host[Req, Resp])
}

// The tools of every scenario.
var (
	weather = Tool{Name: "get_weather", Schema: `{"type": "object", "properties": {
		"city": {"type": "string"},
		"units": {"type": "string", "enum": ["celsius", "fahrenheit"]},
		"days": {"type": "integer"}}, "required": ["city"]}`}
	clock = Tool{Name: "get_time", Schema: `{"type": "object", "properties": {"tz": {"type": "string"}}, "required": ["tz"]}`}
)

func call(name, args string) guard.Call { return guard.Call{Name: name, Args: []byte(args)} }

// model is a scripted model: the innermost handler of a stack.
type model[Req, Resp any] struct {
	h     Host[Req, Resp]
	mu    sync.Mutex
	steps []Step
	reqs  []Req
	// before, if set, runs as a request arrives (a cancel, say).
	before func(n int)
}

func (m *model[Req, Resp]) handle(_ context.Context, req Req) (Resp, error) {
	m.mu.Lock()
	n := len(m.reqs)
	m.reqs = append(m.reqs, req)
	var step Step
	ok := n < len(m.steps)
	if ok {
		step = m.steps[n]
	}
	before := m.before
	m.mu.Unlock()
	if before != nil {
		before(n)
	}
	var zero Resp
	if !ok {
		return zero, errExhausted
	}
	if step.Err != nil {
		return zero, step.Err
	}
	return m.h.Respond(req, step), nil
}

func (m *model[Req, Resp]) requests() []Req {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Req(nil), m.reqs...)
}

var errExhausted = errors.New("guardtest: the scripted model was called more times than it has steps")

// events collects what the stages report.
type events struct {
	mu   sync.Mutex
	list []guard.Event
}

func (e *events) handle(_ context.Context, ev guard.Event) {
	e.mu.Lock()
	e.list = append(e.list, ev)
	e.mu.Unlock()
}

func (e *events) kinds() []guard.EventKind {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]guard.EventKind, len(e.list))
	for i, ev := range e.list {
		out[i] = ev.Kind
	}
	return out
}

func (e *events) has(k guard.EventKind) bool {
	for _, got := range e.kinds() {
		if got == k {
			return true
		}
	}
	return false
}

// run sends one logical call through mws over h's codec, to a model
// answering steps, with the tools offered.
func run[Req, Resp any](ctx context.Context, h Host[Req, Resp], tools []Tool, steps []Step, mws ...guard.Middleware[Req, Resp]) (*model[Req, Resp], Resp, error) {
	m := &model[Req, Resp]{h: h, steps: steps}
	resp, err := guard.Chain(mws...)(m.handle)(ctx, h.Request(tools))
	return m, resp, err
}

// wantCalls checks that the client reads exactly want from resp.
func wantCalls[Req, Resp any](t *testing.T, h Host[Req, Resp], resp Resp, want ...guard.Call) {
	t.Helper()
	got, _ := h.Read(resp)
	if len(got) != len(want) {
		t.Fatalf("the client reads %d tool calls %s, want %d %s", len(got), show(got), len(want), show(want))
	}
	for i := range want {
		if got[i].Name != want[i].Name || !sameJSON(got[i].Args, want[i].Args) {
			t.Errorf("the client reads call %d as %s, want %s", i, show(got[i:i+1]), show(want[i:i+1]))
		}
	}
}

// sameJSON reports whether a and b are the same JSON value, or the same
// text when either is not JSON.
func sameJSON(a, b []byte) bool {
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return string(a) == string(b)
	}
	ja, _ := json.Marshal(va)
	jb, _ := json.Marshal(vb)
	return string(ja) == string(jb)
}

func show(calls []guard.Call) string {
	parts := make([]string, len(calls))
	for i, c := range calls {
		parts[i] = fmt.Sprintf("%s(%s)", c.Name, c.Args)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// wantReplay checks the re-ask request req: it replays len(want) calls,
// each named as want's and answered with a result holding want's Result
// text, flagged as want's Refused where the host has the flag.
func wantReplay[Req, Resp any](t *testing.T, h Host[Req, Resp], req Req, want ...Replay) {
	t.Helper()
	got := h.Replayed(req)
	if len(got) != len(want) {
		t.Fatalf("the re-ask replays %d calls %+v, want %d", len(got), got, len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.Name != w.Name {
			t.Errorf("replayed call %d is %q, want %q", i, g.Name, w.Name)
		}
		if w.Args != nil && !sameJSON(g.Args, w.Args) {
			t.Errorf("replayed call %d shows arguments %s, want %s", i, g.Args, w.Args)
		}
		if !strings.Contains(g.Result, w.Result) {
			t.Errorf("replayed call %d is answered %q, want it to say %q", i, g.Result, w.Result)
		}
		if h.Refusals() && g.Refused != w.Refused {
			t.Errorf("replayed call %d has the error flag %v, want %v", i, g.Refused, w.Refused)
		}
	}
}

// noWait is a backoff without waits, so that no scenario sleeps.
func noWait() backoff.BackOff { return &backoff.ZeroBackOff{} }

// status503 is a transient model error, as a host's client reports one.
type status503 struct{}

func (status503) Error() string   { return "guardtest: 503 Service Unavailable" }
func (status503) StatusCode() int { return 503 }

func scenarios[Req, Resp any]() []scenario[Req, Resp] {
	return []scenario[Req, Resp]{
		{"BadThenGood", badThenGood[Req, Resp]},
		{"ValidSiblingNotRun", validSiblingNotRun[Req, Resp]},
		{"UnknownToolPassed", unknownToolPassed[Req, Resp]},
		{"UnknownToolRejected", unknownToolRejected[Req, Resp]},
		{"BrokenJSON", brokenJSON[Req, Resp]},
		{"StripWrittenBack", stripWrittenBack[Req, Resp]},
		{"CoercionWrittenBack", coercionWrittenBack[Req, Resp]},
		{"ExhaustedOpen", exhaustedOpen[Req, Resp]},
		{"ExhaustedClosed", exhaustedClosed[Req, Resp]},
		{"ModelErrorPassedThrough", modelErrorPassedThrough[Req, Resp]},
		{"Cancelled", cancelled[Req, Resp]},
		{"TransientErrorRetried", transientErrorRetried[Req, Resp]},
		{"LimitExitContinue", limitExitContinue[Req, Resp]},
		{"LimitExitEnd", limitExitEnd[Req, Resp]},
		{"LimitExitError", limitExitError[Req, Resp]},
		{"ModelCallLimit", modelCallLimit[Req, Resp]},
		{"TextAnswerUntouched", textAnswerUntouched[Req, Resp]},
	}
}
