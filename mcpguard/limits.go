package mcpguard

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/toolguard/toolguard/errfmt"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/internal/safetext"
)

// Tool call limits at the MCP wire: guard's own ToolCallLimit, driven with
// one tools/call as the response of a model call, so that the limits count
// as the model stage's do, in the same ThreadStore (a Redis store counts
// across the replicas of a proxy).

// CallScope says what a limit of [WithCallLimit] counts over.
type CallScope int

const (
	// PerSession counts the tools/calls of one MCP session: the endpoint
	// URL with the Mcp-Session-Id and Authorization headers, the key the
	// transport keeps the session's tools under. A server of the
	// stateless 2026-07-28 protocol has no session id: its "session" is
	// every call to that endpoint with the same credentials.
	PerSession CallScope = iota
	// PerThread counts the tools/calls of one conversation thread: the
	// thread the request's context names ([guard.WithThread], as
	// toolguard-proxy sets it from its X-Toolguard-Thread header), else the
	// request's [ThreadHeader]. A call that names no thread is not counted
	// by the limit (reported once, in guard's [guard.EventMisconfigured]),
	// or refused with [WithFailClosed].
	PerThread
)

// String returns the constant's name.
func (s CallScope) String() string {
	switch s {
	case PerSession:
		return "PerSession"
	case PerThread:
		return "PerThread"
	}
	return fmt.Sprintf("CallScope(%d)", int(s))
}

// ThreadHeader names the conversation thread of a request for [PerThread]
// limits when its context names none: "X-Toolguard-Thread", the header
// toolguard-proxy reads. It must be one non-empty value of at most
// [MaxThreadID] bytes; a call with another is refused. The transport passes
// it on to the server as it came.
const ThreadHeader = "X-Toolguard-Thread"

// MaxThreadID bounds the value of [ThreadHeader], as toolguard-proxy does.
const MaxThreadID = 256

// Prefixes of the thread ids the limits count under in the store, so that
// an MCP session never shares a count with a thread of the same name, and
// a thread's MCP calls never share the count of the model stage's
// ToolCallLimit (which counts the calls the model made, the same calls).
const (
	sessionPrefix = "mcpguard/session:"
	threadPrefix  = "mcpguard/thread:"
)

// WithCallLimit caps the tools/calls the transport forwards per MCP
// session or per conversation thread ([CallScope]), with guard's
// [guard.ToolCallLimit] and its options: [guard.WithThreadLimit] sets the
// cap (required, unless a [guard.WithRunLimit] alone caps the calls of the
// run the request's context carries, [guard.WithRun]);
// [guard.WithToolName] limits one tool's calls (matched regardless of
// case, as guard matches it); [guard.WithThreadStore] keeps the counts in
// a shared store (package redisstore: every replica of a proxy counts the
// same calls); [guard.WithStoreFailOpen] lets calls through when the
// store fails. Invalid options panic here, as ToolCallLimit does.
//
// A call counts when the transport forwards it: a call refused for its
// arguments, or by a policy ([WithToolPolicy]), never counts. A call past a
// limit is not forwarded: the transport answers it with an isError result
// saying which limit it reached, and guard reports a [guard.EventLimit]
// (Middleware "ToolCallLimit", Err the *[guard.LimitExceededError]). A
// store that fails refuses the call the same way (a [guard.EventStoreError]
// and the *[guard.StoreError]), or, with [guard.WithStoreFailOpen], lets it
// through uncounted. A [guard.WithExitBehavior] given here is ignored: the
// answer is always the isError result.
//
// Limits stack, in the order given, the first outermost: a call blocked by
// one limit is counted by none. WithCallLimit may be given several times.
func WithCallLimit(scope CallScope, opts ...guard.LimitOption) Option {
	if scope != PerSession && scope != PerThread {
		panic(fmt.Sprintf("mcpguard: WithCallLimit(%v): unknown scope", scope))
	}
	opts = slices.Clone(opts)
	guard.ToolCallLimit[*limitReq, *limitResp](limitCodec{}, opts...) // panics on invalid options, now
	return optionFunc(func(c *config) { c.limits = append(c.limits, limitSpec{scope, opts}) })
}

// limitSpec is one WithCallLimit.
type limitSpec struct {
	scope CallScope
	opts  []guard.LimitOption
}

// limiter is the transport's limits, built once in New: each a
// guard.ToolCallLimit over limitCodec, the first outermost.
type limiter struct {
	handler guard.Handler[*limitReq, *limitResp]
}

// newLimiter builds the limits of specs; events, when not nil, is the
// transport's event handler, given to each ToolCallLimit. It returns nil
// without limits.
func newLimiter(specs []limitSpec, events func(context.Context, guard.Event)) *limiter {
	if len(specs) == 0 {
		return nil
	}
	h := guard.Handler[*limitReq, *limitResp](func(_ context.Context, req *limitReq) (*limitResp, error) {
		return &limitResp{call: req.call}, nil
	})
	for i := len(specs) - 1; i >= 0; i-- {
		s := specs[i]
		opts := slices.Clone(s.opts)
		if events != nil {
			if o, ok := guard.WithEventHandler(events).(guard.LimitOption); ok {
				opts = append(opts, o)
			}
		}
		opts = append(opts, guard.WithExitBehavior(guard.ExitError))
		inner := guard.ToolCallLimit[*limitReq, *limitResp](limitCodec{}, opts...)(h)
		scope := s.scope
		h = func(ctx context.Context, req *limitReq) (*limitResp, error) {
			thread := req.session
			if scope == PerThread {
				thread = req.thread
			}
			resp, err := inner(guard.WithThread(ctx, thread), req)
			var le *guard.LimitExceededError
			var scoped *scopedLimitError
			if err != nil && errors.As(err, &le) && !errors.As(err, &scoped) {
				err = &scopedLimitError{scope: scope, err: le}
			}
			return resp, err
		}
	}
	return &limiter{handler: h}
}

// errNoThread refuses, failing closed, a call that names no thread while a
// PerThread limit is set.
var errNoThread = errors.New("mcpguard: the call names no thread (guard.WithThread or the " + ThreadHeader + " header), so its thread limit cannot count it")

// admit counts the call (tool name, id, arguments) in the limits, and
// returns the text of the isError result that refuses it and why, or a
// nil cause when it may be forwarded.
func (t *transport) admit(r *http.Request, k listKey, name, id string, args []byte) (string, error) {
	if t.limits == nil {
		return "", nil
	}
	ctx := r.Context()
	thread, err := threadOf(r)
	if err == nil && thread == "" && t.cfg.failClosed && t.hasThreadLimit {
		err = errNoThread
	}
	if err != nil {
		t.emit(ctx, guard.Event{Kind: guard.EventUnguarded, Tool: name, CallID: id, Err: err})
		return notExecutedText(name, err), err
	}
	if thread != "" {
		thread = threadPrefix + thread
	}
	req := &limitReq{
		call:    guard.Call{ID: id, Name: name, Args: args},
		session: sessionPrefix + hex.EncodeToString(k[:16]),
		thread:  thread,
	}
	if req.call.Args == nil {
		req.call.Args = []byte{}
	}
	_, err = t.limits.handler(ctx, req)
	var le *scopedLimitError
	var se *guard.StoreError
	switch {
	case err == nil:
		return "", nil
	case errors.As(err, &le):
		return le.text(name), le.err
	case errors.As(err, &se):
		// The store's error stays in the event: its text (an address, say)
		// is not the model's to read.
		return notExecutedText(name, errors.New("the call limit could not be counted, so the call was refused")), se
	}
	return notExecutedText(name, err), err
}

// threadOf returns the thread the request names: its context's, else its
// ThreadHeader's ("" for none), or an error for a header that is not one
// id of at most MaxThreadID bytes.
func threadOf(r *http.Request) (string, error) {
	if id := guard.ThreadFrom(r.Context()); id != "" {
		return id, nil
	}
	ids := r.Header.Values(ThreadHeader)
	if len(ids) == 0 {
		return "", nil
	}
	if len(ids) > 1 || ids[0] == "" || len(ids[0]) > MaxThreadID {
		return "", fmt.Errorf("mcpguard: %s must be one non-empty id of at most %d bytes", ThreadHeader, MaxThreadID)
	}
	return ids[0], nil
}

// scopedLimitError is a *guard.LimitExceededError with the CallScope of
// the limit that returned it (guard's Scope says "thread" for both).
type scopedLimitError struct {
	scope CallScope
	err   *guard.LimitExceededError
}

func (e *scopedLimitError) Error() string { return e.err.Error() }
func (e *scopedLimitError) Unwrap() error { return e.err }

// text is the text of the isError result of a call of tool past the
// limit, in the words of the model stage's: "Tool call limit exceeded:
// at most 2 tool calls are allowed per MCP session (2 made); do not call
// "forecast" again."
func (e *scopedLimitError) text(tool string) string {
	scope := "MCP session"
	switch {
	case e.err.Scope == guard.ScopeRun:
		scope = "run"
	case e.scope == PerThread:
		scope = "thread"
	}
	calls := "calls are"
	if e.err.Limit == 1 {
		calls = "call is"
	}
	if e.err.Tool != "" {
		times := "times"
		if e.err.Limit == 1 {
			times = "time"
		}
		return fmt.Sprintf("%s: %s may be called at most %d %s per %s (%d made); do not call it again.",
			errfmt.PrefixLimitExceeded, safetext.Quote(tool, 80), e.err.Limit, times, scope, e.err.Count)
	}
	return fmt.Sprintf("%s: at most %d tool %s allowed per %s (%d made); do not call %s again.",
		errfmt.PrefixLimitExceeded, e.err.Limit, calls, scope, e.err.Count, safetext.Quote(tool, 80))
}

// notExecutedText is the text of the isError result of a call of tool
// that was not forwarded, for reason.
func notExecutedText(tool string, reason error) string {
	return safetext.Truncate(fmt.Sprintf("%s: tool %s was not called: %v", errfmt.PrefixNotExecuted, safetext.Quote(tool, 80), reason),
		errfmt.MaxToolErrorBytes)
}

// limitReq is one tools/call as ToolCallLimit reads it: the request of a
// model call whose response holds that call.
type limitReq struct {
	call    guard.Call
	session string // the thread id PerSession counts under
	thread  string // the thread id PerThread counts under ("" for none)
}

// limitResp is the response holding the call.
type limitResp struct{ call guard.Call }

// limitCodec is the guard.Codec of limitReq and limitResp: a response
// holds its one call; there is no transcript (the counts are the store's,
// by thread, or the context's run's), and no re-ask (the exit behaviour is
// ExitError).
type limitCodec struct{}

func (limitCodec) Request(context.Context, *limitReq) guard.RequestInfo[*limitReq, *limitResp] {
	return guard.RequestInfo[*limitReq, *limitResp]{}
}

func (limitCodec) Response(_ *limitReq, resp *limitResp) guard.ResponseInfo {
	if resp == nil {
		return guard.ResponseInfo{}
	}
	return guard.ResponseInfo{Calls: []guard.Call{resp.call}}
}

func (limitCodec) Accept(resp *limitResp, _ []guard.Verdict) (*limitResp, error) { return resp, nil }

func (limitCodec) Reask(*limitReq, *limitResp, []guard.Answer) (*limitReq, error) {
	return nil, errors.New("mcpguard: a tools/call is not re-asked")
}

func (limitCodec) End(*limitReq, string, error) *limitResp { return nil }
