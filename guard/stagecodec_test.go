package guard_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cenkalti/backoff/v4"
	"github.com/toolguard/toolguard/guard"
)

// This file holds the host the stages' own tests run on: a test codec over
// plain Go values, a scripted model, an agent loop and an event recorder.
// It is what package middleware's codec is for langchaingo, without
// langchaingo: a request is a transcript and the tools it offers, a
// response the model's tool calls, text, or a stand-in answer.

// role is who wrote a message of a test transcript.
type role int

const (
	roleUser  role = iota // the user's turn: it starts a run
	roleModel             // the model's turn: its text and tool calls
	roleTool              // one tool result
	roleNote              // a message a stage added as the user's (OutputValidation's feedback): no new run
)

// msg is one message of a test transcript.
type msg struct {
	Role  role
	Text  string       // user, model and note text; a tool result's content
	Calls []guard.Call // a model turn's tool calls
	// A tool result's call id and tool, and whether the call was refused.
	CallID, Tool string
	Refused      bool
}

// tReq is a test request: a transcript, the tools it offers and, when the
// caller streams, where the model's parts go.
type tReq struct {
	Msgs  []msg
	Tools []guard.Tool
	Out   sink // nil: the caller does not stream
}

// tResp is a test response: tool calls, text, or a stand-in answer
// (Codec.End) with its cause.
type tResp struct {
	Calls   []guard.Call
	Text    string
	standIn error
}

// codec is the test host's guard.Codec, with the optional interfaces the
// stages discover: TranscriptReader (the limits read runs and threads from
// Msgs) and AnswerCodec (OutputValidation). A call without an id is given
// one, salted with the request's length, and it is written back.
type codec struct{}

var (
	_ guard.AnswerCodec[*tReq, *tResp] = codec{}
	_ guard.TranscriptReader[*tReq]    = codec{}
	_ guard.Codec[*tReq, *tResp]       = requiredOnly{}
)

func (codec) Request(_ context.Context, r *tReq) guard.RequestInfo[*tReq, *tResp] {
	info := guard.RequestInfo[*tReq, *tResp]{Tools: r.Tools, Model: "test-model"}
	if r.Out != nil {
		info.Stream = stream{out: r.Out}
	}
	return info
}

func (codec) Response(r *tReq, p *tResp) guard.ResponseInfo {
	for i := range p.Calls {
		if p.Calls[i].ID == "" {
			p.Calls[i].ID = fmt.Sprintf("syn_%d_%d", len(r.Msgs), i)
		}
	}
	info := guard.ResponseInfo{Calls: slices.Clone(p.Calls), StandIn: p.standIn}
	if len(p.Calls) == 0 {
		info.Text = p.Text
	}
	return info
}

func (codec) Accept(p *tResp, vs []guard.Verdict) (*tResp, error) {
	if len(vs) != len(p.Calls) {
		return nil, fmt.Errorf("test codec: %d verdicts for %d calls", len(vs), len(p.Calls))
	}
	for i, v := range vs {
		if v.Args != nil {
			p.Calls[i].Args = v.Args
		}
	}
	return p, nil
}

// Reask appends p as one model turn, then one tool message per call.
func (codec) Reask(r *tReq, p *tResp, as []guard.Answer) (*tReq, error) {
	if len(as) != len(p.Calls) {
		return nil, fmt.Errorf("test codec: %d answers for %d calls", len(as), len(p.Calls))
	}
	turn := msg{Role: roleModel, Text: p.Text, Calls: slices.Clone(p.Calls)}
	for i, a := range as {
		if a.Args != nil {
			turn.Calls[i].Args = a.Args
		}
	}
	next := &tReq{Msgs: append(slices.Clone(r.Msgs), turn), Tools: r.Tools, Out: r.Out}
	for i, a := range as {
		next.Msgs = append(next.Msgs, msg{Role: roleTool, Text: a.Content, CallID: p.Calls[i].ID, Tool: p.Calls[i].Name, Refused: a.Refused})
	}
	return next, nil
}

func (codec) End(_ *tReq, text string, cause error) *tResp { return &tResp{Text: text, standIn: cause} }

func (codec) Transcript(_ context.Context, r *tReq) []guard.Message {
	out := make([]guard.Message, len(r.Msgs))
	for i, m := range r.Msgs {
		switch m.Role {
		case roleUser:
			out[i].Kind = guard.UserTurn
		case roleModel:
			out[i].Kind = guard.ModelTurn
			for _, c := range m.Calls {
				out[i].Calls = append(out[i].Calls, c.Name)
			}
		}
	}
	return out
}

func (codec) Answers(p *tResp) []string {
	if p.Text == "" {
		return nil
	}
	return []string{p.Text}
}

func (codec) SetAnswers(p *tResp, answers []string) (*tResp, error) {
	if len(answers) != 1 {
		return nil, fmt.Errorf("test codec: %d answers for one text", len(answers))
	}
	p.Text = answers[0]
	return p, nil
}

func (codec) ReaskAnswer(r *tReq, p *tResp, feedback string) (*tReq, error) {
	msgs := append(slices.Clone(r.Msgs), msg{Role: roleModel, Text: p.Text}, msg{Role: roleNote, Text: feedback})
	return &tReq{Msgs: msgs, Tools: r.Tools, Out: r.Out}, nil
}

// requiredOnly is codec with guard.Codec's five methods only.
type requiredOnly struct{}

func (requiredOnly) Request(ctx context.Context, r *tReq) guard.RequestInfo[*tReq, *tResp] {
	return codec{}.Request(ctx, r)
}
func (requiredOnly) Response(r *tReq, p *tResp) guard.ResponseInfo { return codec{}.Response(r, p) }
func (requiredOnly) Accept(p *tResp, vs []guard.Verdict) (*tResp, error) {
	return codec{}.Accept(p, vs)
}
func (requiredOnly) Reask(r *tReq, p *tResp, as []guard.Answer) (*tReq, error) {
	return codec{}.Reask(r, p, as)
}
func (requiredOnly) End(r *tReq, text string, cause error) *tResp { return codec{}.End(r, text, cause) }

// step is one answer of a scripted model to the request it is given.
type step func(ctx context.Context, s *script, r *tReq) (*tResp, error)

// script is a scripted model, the innermost handler of a test stack: each
// request gets the next step's answer; a call without an id gets the
// script's next one (call_1, call_2, …). Safe for concurrent use.
type script struct {
	mu    sync.Mutex
	steps []step
	reqs  []*tReq
	ids   int
}

var errExhausted = errors.New("script: called past its last step")

func newScript(steps ...step) *script { return &script{steps: steps} }

// add appends steps to the script.
func (s *script) add(steps ...step) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.steps = append(s.steps, steps...)
}

func (s *script) handle(ctx context.Context, r *tReq) (*tResp, error) {
	s.mu.Lock()
	n := len(s.reqs)
	s.reqs = append(s.reqs, &tReq{Msgs: slices.Clone(r.Msgs), Tools: r.Tools})
	var st step
	if n < len(s.steps) {
		st = s.steps[n]
	}
	s.mu.Unlock()
	if st == nil {
		return nil, errExhausted
	}
	return st(ctx, s, r)
}

// requests returns a copy of each request the model received, in order.
func (s *script) requests() []*tReq {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.reqs)
}

// remaining returns the number of steps no request has consumed.
func (s *script) remaining() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return max(len(s.steps)-len(s.reqs), 0)
}

func (s *script) nextID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ids++
	return "call_" + strconv.Itoa(s.ids)
}

// callsStep answers with calls, each streamed as one part when the caller
// streams; one without an id gets the script's next.
func callsStep(calls ...guard.Call) step {
	return func(ctx context.Context, s *script, r *tReq) (*tResp, error) {
		out := slices.Clone(calls)
		for i := range out {
			if out[i].ID == "" {
				out[i].ID = s.nextID()
			}
			if r.Out == nil {
				continue
			}
			if err := r.Out(ctx, callPart(out[i])); err != nil {
				return nil, err
			}
		}
		return &tResp{Calls: out}, nil
	}
}

// call is a tool call of name with args, without an id.
func call(name, args string) guard.Call { return guard.Call{Name: name, Args: []byte(args)} }

// limCalls answers with one call with arguments {} per tool name.
func limCalls(names ...string) step {
	calls := make([]guard.Call, len(names))
	for i, n := range names {
		calls[i] = call(n, `{}`)
	}
	return callsStep(calls...)
}

// textStep answers with text and no tool calls, streamed first as one part
// when the caller streams.
func textStep(text string) step {
	return func(ctx context.Context, _ *script, r *tReq) (*tResp, error) {
		if err := r.emit(ctx, part{Kind: partText, Data: text}); err != nil {
			return nil, err
		}
		return &tResp{Text: text}, nil
	}
}

// streamThenFail streams parts, then fails with err.
func streamThenFail(err error, parts ...part) step {
	return func(ctx context.Context, _ *script, r *tReq) (*tResp, error) {
		for _, p := range parts {
			if err := r.emit(ctx, p); err != nil {
				return nil, err
			}
		}
		return nil, err
	}
}

// failStep fails with err.
func failStep(err error) step {
	return func(context.Context, *script, *tReq) (*tResp, error) { return nil, err }
}

// limTools are the tools the agent loop offers: two without a schema.
var limTools = []guard.Tool{{Name: "search"}, {Name: "weather"}}

// loop simulates an agent loop over a stack, the way langchaingo's Executor
// and package agent drive a model: each turn appends a user message, then
// calls the stack with the whole transcript, appends the model's turn and
// one tool result per call, and calls it again, until the model answers in
// text.
type loop struct {
	h    guard.Handler[*tReq, *tResp]
	msgs []msg
	ran  []string // the tool calls executed, by tool name
}

func newLoop(s *script, mws ...guard.Middleware[*tReq, *tResp]) *loop {
	return &loop{h: guard.Chain(mws...)(s.handle)}
}

// turn runs one user turn and returns the model's final text.
func (a *loop) turn(ctx context.Context, input string) (string, error) {
	a.msgs = append(a.msgs, msg{Role: roleUser, Text: input})
	for range 20 {
		p, err := a.h(ctx, &tReq{Msgs: slices.Clone(a.msgs), Tools: limTools})
		if err != nil {
			return "", err
		}
		if len(p.Calls) == 0 {
			a.msgs = append(a.msgs, msg{Role: roleModel, Text: p.Text})
			return p.Text, nil
		}
		a.msgs = append(a.msgs, msg{Role: roleModel, Calls: slices.Clone(p.Calls)})
		for _, c := range p.Calls {
			a.ran = append(a.ran, c.Name)
			a.msgs = append(a.msgs, msg{Role: roleTool, CallID: c.ID, Tool: c.Name, Text: "result " + strconv.Itoa(len(a.ran))})
		}
	}
	return "", errors.New("loop: too many iterations")
}

// replayed is a call a re-ask shows the model again, with the tool result
// it is answered with.
type replayed struct{ Tool, ID, Answer string }

// reasked checks that re-ask is orig followed by one model turn and one
// tool result per call of that turn, in order and matched by id, and
// returns the replayed calls.
func reasked(t *testing.T, orig, reask []msg) []replayed {
	t.Helper()
	if len(reask) < len(orig) || !reflect.DeepEqual(reask[:len(orig)], orig) {
		t.Fatalf("re-ask does not start with the original %d messages:\n%+v", len(orig), reask)
	}
	tail := reask[len(orig):]
	if len(tail) == 0 || tail[0].Role != roleModel || len(tail) != 1+len(tail[0].Calls) {
		t.Fatalf("re-ask appended %+v, want a model turn and one tool result per call", tail)
	}
	var got []replayed
	for i, c := range tail[0].Calls {
		tr := tail[1+i]
		if tr.Role != roleTool || c.ID == "" || tr.CallID != c.ID || tr.Tool != c.Name {
			t.Fatalf("re-ask call %d %q (%s) answered by %+v; want its tool result", i, c.ID, c.Name, tr)
		}
		got = append(got, replayed{Tool: c.Name, ID: c.ID, Answer: tr.Text})
	}
	return got
}

// recorder collects events.
type recorder struct {
	mu     sync.Mutex
	events []guard.Event
}

func (r *recorder) handle(_ context.Context, e guard.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

func (r *recorder) all() []guard.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

// trace renders the events as "Middleware:kind#attempt".
func (r *recorder) trace() []string {
	var ts []string
	for _, e := range r.all() {
		ts = append(ts, fmt.Sprintf("%s:%s#%d", e.Middleware, e.Kind, e.Attempt))
	}
	return ts
}

func (r *recorder) kinds() []guard.EventKind {
	var ks []guard.EventKind
	for _, e := range r.all() {
		ks = append(ks, e.Kind)
	}
	return ks
}

func (r *recorder) find(k guard.EventKind) (guard.Event, bool) {
	for _, e := range r.all() {
		if e.Kind == k {
			return e, true
		}
	}
	return guard.Event{}, false
}

// The stages over the test codec.

func toolCallLimit(opts ...guard.LimitOption) guard.Middleware[*tReq, *tResp] {
	return guard.ToolCallLimit[*tReq, *tResp](codec{}, opts...)
}

func modelCallLimit(opts ...guard.LimitOption) guard.Middleware[*tReq, *tResp] {
	return guard.ModelCallLimit[*tReq, *tResp](codec{}, opts...)
}

func toolArgValidation(opts ...guard.ValidationOption) guard.Middleware[*tReq, *tResp] {
	return guard.ToolArgValidation[*tReq, *tResp](codec{}, opts...)
}

func modelRetry(opts ...guard.RetryOption) guard.Middleware[*tReq, *tResp] {
	return guard.ModelRetry[*tReq, *tResp](codec{}, opts...)
}

// wrap returns the handler of a stack over the scripted model s.
func wrap(s *script, mws ...guard.Middleware[*tReq, *tResp]) guard.Handler[*tReq, *tResp] {
	return guard.Chain(mws...)(s.handle)
}

// weatherSchema is the schema of the get_weather tool of the stages' tests.
const weatherSchema = `{
	"type": "object",
	"properties": {
		"city":  {"type": "string"},
		"units": {"type": "string", "enum": ["celsius", "fahrenheit"]},
		"days":  {"type": "integer", "minimum": 1},
		"note":  {"type": ["string", "null"]},
		"tags":  {"type": "array", "items": {"type": "string"}}
	},
	"required": ["city"],
	"additionalProperties": false
}`

var weatherTool = guard.Tool{Name: "get_weather", Schema: weatherSchema}

// question is a request of one user message offering tools.
func question(tools ...guard.Tool) *tReq {
	return &tReq{Msgs: []msg{{Role: roleUser, Text: "Weather in Paris?"}}, Tools: tools}
}

// Streaming. A caller that streams gives a sink in its request; the model
// emits parts to it (text, reasoning, tool calls) before it answers. The
// codec's Stream gives each attempt a gate of its own.

// partKind is what a streamed part is.
type partKind int

const (
	partText partKind = iota
	partReasoning
	partCall
)

// part is one streamed piece of an answer.
type part struct {
	Kind partKind
	Data string
}

// callPart is the part that streams c.
func callPart(c guard.Call) part { return part{Kind: partCall, Data: c.Name + string(c.Args)} }

// sink receives the parts of a streamed answer.
type sink func(ctx context.Context, p part) error

// emit streams p to r's sink, if any.
func (r *tReq) emit(ctx context.Context, p part) error {
	if r.Out == nil {
		return nil
	}
	return r.Out(ctx, p)
}

// with returns a copy of r whose parts go to out.
func (r *tReq) with(out sink) *tReq {
	c := *r
	c.Out = out
	return &c
}

// tape is a caller's sink that records what reached it, in order: text
// and reasoning as they came, each tool call as [name args], and, through
// observe, the re-asks and retries announced to the caller as <kind>.
type tape struct {
	mu  sync.Mutex
	seq []string
}

func (t *tape) add(s string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.seq = append(t.seq, s)
}

func (t *tape) sink(_ context.Context, p part) error {
	if p.Kind == partCall {
		t.add("[" + p.Data + "]")
	} else {
		t.add(p.Data)
	}
	return nil
}

// observe returns ctx with an observer that records EventReask and
// EventRetry on the tape, where the caller would see them.
func (t *tape) observe(ctx context.Context) context.Context {
	return guard.WithObserver(ctx, guard.ObserverFunc(func(_ context.Context, e guard.Event) {
		if e.Kind == guard.EventReask || e.Kind == guard.EventRetry {
			t.add("<" + string(e.Kind) + ">")
		}
	}))
}

func (t *tape) all() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.seq)
}

// String is what reached the caller, joined.
func (t *tape) String() string { return strings.Join(t.all(), "") }

// stream is the test codec's guard.Stream.
type stream struct{ out sink }

// callsHeldKey marks a context whose tool-call parts a gate outside holds.
type callsHeldKey struct{}

func (s stream) Attempt(ctx context.Context, r *tReq, hold guard.Hold) (context.Context, *tReq, guard.Gate[*tResp]) {
	g := &gate{out: s.out, all: hold == guard.HoldAll}
	if !g.all {
		ctx = context.WithValue(ctx, callsHeldKey{}, true)
	}
	return ctx, r.with(g.on), g
}

// Watch counts the parts that reach the caller: not tool-call parts a gate
// outside holds, nor empty ones.
func (s stream) Watch(ctx context.Context, r *tReq) (*tReq, func() bool) {
	held := ctx.Value(callsHeldKey{}) != nil
	var seen atomic.Bool
	out := r.Out
	return r.with(func(ctx context.Context, p part) error {
		if p.Data != "" && !(held && p.Kind == partCall) {
			seen.Store(true)
		}
		return out(ctx, p)
	}), seen.Load
}

// gate is one attempt's guard.Gate: with all unset it passes text and
// reasoning on and holds tool-call parts, streaming the accepted calls on
// Deliver; with all set it holds everything but reasoning, and on Deliver
// streams the accepted answer once, or what it held as it came when the
// response calls tools.
type gate struct {
	out  sink
	all  bool
	mu   sync.Mutex
	held []part
}

func (g *gate) on(ctx context.Context, p part) error {
	if p.Kind == partReasoning || (!g.all && p.Kind == partText) {
		return g.out(ctx, p)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.held = append(g.held, p)
	return nil
}

func (g *gate) Deliver(ctx context.Context, p *tResp) (*tResp, error) {
	g.mu.Lock()
	held := g.held
	g.held = nil
	g.mu.Unlock()
	if len(held) == 0 {
		return p, nil
	}
	var out []part
	switch {
	case g.all && len(p.Calls) > 0:
		out = held
	case g.all:
		out = []part{{Kind: partText, Data: p.Text}}
	default:
		for _, c := range p.Calls {
			out = append(out, callPart(c))
		}
	}
	for _, q := range out {
		if err := g.out(ctx, q); err != nil {
			return nil, err
		}
	}
	return p, nil
}

func outputValidation(schema any, opts ...guard.ValidationOption) guard.Middleware[*tReq, *tResp] {
	return guard.OutputValidation[*tReq, *tResp](codec{}, schema, opts...)
}

// noWait is a backoff policy that retries at once.
func noWait() guard.RetryOption {
	return guard.WithBackOff(func() backoff.BackOff { return &backoff.ZeroBackOff{} })
}

// run makes one call with req through mws over the scripted model s.
func run(s *script, req *tReq, mws ...guard.Middleware[*tReq, *tResp]) (*tResp, error) {
	return wrap(s, mws...)(context.Background(), req)
}

// args returns the arguments of resp's call i.
func args(resp *tResp, i int) string { return string(resp.Calls[i].Args) }

// notExecuted is what a valid sibling of an invalid call reads, pinned.
const notExecuted = "Not executed because other tool calls in this batch had invalid arguments; re-issue all tool calls with corrected arguments."

// tool is a tool named name whose parameters schema is schema.
func tool(name string, schema any) guard.Tool { return guard.Tool{Name: name, Schema: schema} }

// searchTool takes a required query.
var searchTool = tool("search", map[string]any{
	"type":       "object",
	"properties": map[string]any{"query": map[string]any{"type": "string"}},
	"required":   []any{"query"},
})

// dump renders msgs as text, one message a line, arguments as JSON text.
func dump(msgs []msg) string {
	var b strings.Builder
	for _, m := range msgs {
		fmt.Fprintf(&b, "%d %q", m.Role, m.Text)
		for _, c := range m.Calls {
			fmt.Fprintf(&b, " [%s %s %s]", c.ID, c.Name, c.Args)
		}
		if m.Role == roleTool {
			fmt.Fprintf(&b, " (result of %s %s, refused %v)", m.CallID, m.Tool, m.Refused)
		}
		b.WriteByte('\n')
	}
	return b.String()
}
