package middleware

import (
	"context"
	"fmt"
	"strconv"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/internal/safetext"
)

// ExitBehavior says what ToolCallLimit does with a model response whose tool
// calls would exceed a limit.
type ExitBehavior int

const (
	// ExitContinue calls the model again, inside the same model call, with
	// the blocked response replayed: each call over the limit is answered
	// "Tool call limit exceeded: …", each other call is told it was not
	// executed (and, for calls of the limited tool, how many remain). If
	// the new response fits, it is returned; if it still exceeds a limit,
	// ExitEnd applies. This is the default.
	ExitContinue ExitBehavior = iota
	// ExitEnd returns a response without tool calls whose text says which
	// limit was reached ("Tool call limit reached: run limit exceeded (2/2
	// calls)."), so that the agent loop ends with it as its answer.
	ExitEnd
	// ExitError returns a *LimitExceededError.
	ExitError
)

// String returns the constant's name.
func (b ExitBehavior) String() string {
	switch b {
	case ExitContinue:
		return "ExitContinue"
	case ExitEnd:
		return "ExitEnd"
	case ExitError:
		return "ExitError"
	}
	return "ExitBehavior(" + strconv.Itoa(int(b)) + ")"
}

// LimitScope names what a tool call limit counts over.
type LimitScope string

const (
	// ScopeRun counts the calls of one run (WithRun, or the transcript after
	// the last human message).
	ScopeRun LimitScope = "run"
	// ScopeThread counts the calls of one thread (WithThread, or the whole
	// transcript).
	ScopeThread LimitScope = "thread"
)

// LimitExceededError reports a model response that ToolCallLimit blocked.
// ExitError returns it; every exit behaviour reports it in an EventLimit.
type LimitExceededError struct {
	Tool      string     // the limited tool; "" when the limit covers all tools
	Scope     LimitScope // the scope whose limit the response would exceed
	Limit     int        // the limit of that scope
	Count     int        // calls made in the scope before the response
	Requested int        // calls of the response that the limit covers
}

// Error says which limit the response would exceed, e.g. "middleware: tool
// call limit exceeded: 'search' run limit of 2 calls (2 made, 1 more
// requested)".
func (e *LimitExceededError) Error() string {
	return fmt.Sprintf("middleware: tool call limit exceeded: %s%s limit of %d %s (%d made, %d more requested)",
		quotedTool(e.Tool), e.Scope, e.Limit, plural(e.Limit, "call", "calls"), e.Count, e.Requested)
}

// limitConfig holds ToolCallLimit's options.
type limitConfig struct {
	events eventOption
	run    int // 0: no run limit
	thread int // 0: no thread limit
	tool   string
	exit   ExitBehavior
	store  ThreadStore
}

type limitOption func(*limitConfig)

func (o limitOption) applyLimit(c *limitConfig) { o(c) }

// WithRunLimit caps the tool calls of one run (see WithRun) at n. n must be
// at least 1, and no larger than a thread limit given with it; WithRunLimit
// and ToolCallLimit panic otherwise. The default is no run limit.
func WithRunLimit(n int) LimitOption {
	checkLimit("WithRunLimit", n)
	return limitOption(func(c *limitConfig) { c.run = n })
}

// WithThreadLimit caps the tool calls of one thread (see WithThread) at n. n
// must be at least 1; WithThreadLimit panics otherwise. The default is no
// thread limit.
func WithThreadLimit(n int) LimitOption {
	checkLimit("WithThreadLimit", n)
	return limitOption(func(c *limitConfig) { c.thread = n })
}

func checkLimit(who string, n int) {
	if n < 1 {
		panic(fmt.Sprintf("middleware: %s(%d): the limit must be at least 1 (to forbid a tool, do not offer it to the model)", who, n))
	}
}

// WithToolName makes the limits count the calls of the named tool only;
// calls of other tools pass untouched and do not count. The default is to
// count the calls of every tool together. Names match exactly.
func WithToolName(name string) LimitOption {
	if name == "" {
		panic("middleware: WithToolName(\"\"): the tool name must not be empty (leave the option out to limit all tools)")
	}
	return limitOption(func(c *limitConfig) { c.tool = name })
}

// WithExitBehavior sets what happens to a response that would exceed a limit
// (default ExitContinue).
func WithExitBehavior(b ExitBehavior) LimitOption {
	switch b {
	case ExitContinue, ExitEnd, ExitError:
	default:
		panic(fmt.Sprintf("middleware: WithExitBehavior(%v): unknown exit behaviour", b))
	}
	return limitOption(func(c *limitConfig) { c.exit = b })
}

// WithThreadStore sets where ToolCallLimit keeps its thread counts. The
// default is a MemoryThreadStore of its own, of DefaultThreadStoreCapacity
// keys. Limiters may share a store: a limiter nested in another recognises
// the store (by ==) and does not count the same calls twice.
func WithThreadStore(s ThreadStore) LimitOption {
	if s == nil {
		panic("middleware: WithThreadStore(nil)")
	}
	return limitOption(func(c *limitConfig) { c.store = s })
}

// ToolCallLimit returns a middleware that caps the tool calls leaving the
// model node per run and per thread, for every tool together or, with
// WithToolName, for one tool. Give it WithRunLimit, WithThreadLimit or both
// (the run limit no larger than the thread limit); it panics otherwise.
//
// Counting. A call counts when it leaves the model node in a response the
// middleware returns; a blocked call never counts. The run is the one the
// context started with WithRun; without one, it is read from the
// transcript: the tool calls in AI messages after the last human message,
// which is what makes an unchanged langchaingo agents.Executor work. The
// thread is the one named with WithThread, its count kept in the
// ThreadStore (WithThreadStore); without one, it is the whole transcript
// passed in. Reserving calls in a run or a ThreadStore is atomic, so
// concurrent runs of one thread never pass a limit together.
//
// When a response would exceed a limit (its calls plus those already made,
// for the limit with the fewest calls left), the whole response is blocked,
// an EventLimit reports a *LimitExceededError, and the exit behaviour
// (WithExitBehavior) decides what comes back: ExitContinue (the default)
// re-asks the model once, in the layout ToolArgValidation uses, and falls
// back to ExitEnd if the model still exceeds; ExitEnd returns a text
// response "Tool call limit reached: …" without tool calls; ExitError
// returns the *LimitExceededError. Model errors pass through unchanged, and
// so do responses without tool calls. Tool calls without an id get a
// deterministic one, written back into the response.
//
// Limiters stack: Wrap(model, ToolCallLimit(WithRunLimit(10)),
// ToolCallLimit(WithToolName("search"), WithRunLimit(3))) caps all calls at
// 10 and searches at 3 per run. Each layer sees the response the layers
// inside it let out and re-asks through them; when an outer layer blocks a
// response, the inner layers' counts of it are taken back. Place
// ToolCallLimit outside re-invoking middlewares (before ToolArgValidation
// and ModelRetry in Wrap), so that it counts only calls that will run: a
// middleware outside it that discards its response would leave counted
// calls that never ran.
//
// The middleware is safe for concurrent use; one value may serve any number
// of concurrent runs and threads.
func ToolCallLimit(opts ...LimitOption) Middleware {
	var cfg limitConfig
	for _, o := range opts {
		if o != nil {
			o.applyLimit(&cfg)
		}
	}
	switch {
	case cfg.run == 0 && cfg.thread == 0:
		panic("middleware: ToolCallLimit: set WithRunLimit, WithThreadLimit or both")
	case cfg.run != 0 && cfg.thread != 0 && cfg.run > cfg.thread:
		panic(fmt.Sprintf("middleware: ToolCallLimit: the run limit (%d) exceeds the thread limit (%d); a run is part of a thread, so it can never be reached",
			cfg.run, cfg.thread))
	}
	if cfg.store == nil {
		cfg.store = NewMemoryThreadStore(DefaultThreadStoreCapacity)
	}
	return &toolCallLimit{cfg: cfg}
}

type toolCallLimit struct {
	cfg limitConfig
}

const limitName = "ToolCallLimit"

func (l *toolCallLimit) WrapModelCall(next Handler) Handler {
	return func(ctx context.Context, req *Request) (*llms.ContentResponse, error) {
		call := callFrom(ctx)
		if call == nil { // the outermost limiter of this model call
			call = &limitCall{base: len(req.Messages)}
			ctx = context.WithValue(ctx, limitCallKey{}, call)
		}
		sc := l.scopes(ctx, req.Messages[:min(call.base, len(req.Messages))])
		attemptReq := req
		for attempt := 1; ; attempt++ {
			mark := call.mark()
			resp, err := next(ctx, attemptReq)
			if err != nil {
				call.rollback(ctx, mark)
				return nil, err
			}
			calls := collectToolCalls(resp, len(req.Messages))
			n := l.countCovered(calls)
			if n == 0 {
				return resp, nil
			}
			exceeded, err := l.admit(ctx, call, mark, sc, n)
			if err != nil {
				call.rollback(ctx, mark)
				return nil, err
			}
			if exceeded == nil {
				return resp, nil
			}
			call.rollback(ctx, mark)
			l.cfg.events.emit(ctx, Event{Kind: EventLimit, Middleware: limitName, Attempt: attempt, Tool: l.cfg.tool, Err: exceeded})
			switch {
			case l.cfg.exit == ExitError:
				return nil, exceeded
			case l.cfg.exit == ExitEnd || attempt > 1:
				return endResponse(exceeded), nil
			}
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			attemptReq = &Request{
				Messages: withReplay(req.Messages, replay(resp, calls, l.answers(calls, exceeded))),
				Options:  req.Options,
			}
		}
	}
}

// covers reports whether the limits count c.
func (l *toolCallLimit) covers(c *toolCall) bool {
	return c.fn != nil && (l.cfg.tool == "" || c.fn.Name == l.cfg.tool)
}

func (l *toolCallLimit) countCovered(calls []toolCall) int {
	n := 0
	for i := range calls {
		if l.covers(&calls[i]) {
			n++
		}
	}
	return n
}

// scopes says where the counts of one model call come from.
type scopes struct {
	run    counter // nil: the run is read from the transcript
	thread counter // nil: the thread is the whole transcript
	// The transcript counts, used where the counter is nil.
	transcriptRun, transcriptThread int
}

func (l *toolCallLimit) scopes(ctx context.Context, msgs []llms.MessageContent) scopes {
	var sc scopes
	if r := runFrom(ctx); r != nil {
		sc.run = r
	}
	if id := threadFrom(ctx); id != "" {
		sc.thread = storeCounter{l.cfg.store}
	}
	if sc.run == nil || sc.thread == nil {
		sc.transcriptRun, sc.transcriptThread = l.countTranscript(msgs)
	}
	return sc
}

// countTranscript counts the covered tool calls in the AI messages of msgs:
// after the last human message (the run), and in all (the thread).
func (l *toolCallLimit) countTranscript(msgs []llms.MessageContent) (run, thread int) {
	for _, m := range msgs {
		switch m.Role {
		case llms.ChatMessageTypeHuman:
			run = 0
		case llms.ChatMessageTypeAI:
			for _, p := range m.Parts {
				var fn *llms.FunctionCall
				switch tc := p.(type) {
				case llms.ToolCall:
					fn = tc.FunctionCall
				case *llms.ToolCall:
					if tc != nil {
						fn = tc.FunctionCall
					}
				}
				if fn != nil && (l.cfg.tool == "" || fn.Name == l.cfg.tool) {
					run++
					thread++
				}
			}
		}
	}
	return run, thread
}

// admit reserves n covered calls in every limited scope. It returns nil if
// they all fit, else the exceeded limit with the fewest calls left (the
// thread's on a tie); the caller then rolls the reservations back.
func (l *toolCallLimit) admit(ctx context.Context, call *limitCall, mark int, sc scopes, n int) (*LimitExceededError, error) {
	var worst *LimitExceededError
	exceed := func(scope LimitScope, limit, count int) {
		e := &LimitExceededError{Tool: l.cfg.tool, Scope: scope, Limit: limit, Count: count, Requested: n}
		if worst == nil || e.Limit-e.Count <= worst.Limit-worst.Count {
			worst = e
		}
	}
	if limit := l.cfg.run; limit > 0 {
		count, ok := sc.transcriptRun, sc.transcriptRun+n <= limit
		if sc.run != nil {
			count, ok, _ = call.reserve(ctx, mark, sc.run, ThreadKey{Tool: l.cfg.tool}, n, limit) // a run never fails
		}
		if !ok {
			exceed(ScopeRun, limit, count)
		}
	}
	if limit := l.cfg.thread; limit > 0 {
		count, ok := sc.transcriptThread, sc.transcriptThread+n <= limit
		if sc.thread != nil {
			var err error
			count, ok, err = call.reserve(ctx, mark, sc.thread, ThreadKey{Thread: threadFrom(ctx), Tool: l.cfg.tool}, n, limit)
			if err != nil {
				return nil, fmt.Errorf("middleware: %s: thread store: %w", limitName, err)
			}
		}
		if !ok {
			exceed(ScopeThread, limit, count)
		}
	}
	return worst, nil
}

// answers returns the tool message for each call of a blocked response. The
// covered calls that would still fit (the first ones) are told they were
// not executed and how many calls remain; the covered calls beyond them are
// told they exceed the limit; calls the limit does not cover are told they
// were not executed.
func (l *toolCallLimit) answers(calls []toolCall, e *LimitExceededError) []string {
	remaining := max(e.Limit-e.Count, 0)
	fit := remaining
	answers := make([]string, len(calls))
	for i := range calls {
		c := &calls[i]
		switch {
		case !l.covers(c):
			answers[i] = "Not executed: another call in this batch exceeded the tool call limit; re-issue this call if you still need it."
		case fit > 0:
			fit--
			answers[i] = fmt.Sprintf("Not executed: this batch exceeded the tool call limit; %s remain%s in this %s, so re-issue at most %d.",
				l.callsOf(remaining), plural(remaining, "s", ""), e.Scope, remaining)
		default:
			// The name comes from the model: keep it to one short line.
			answers[i] = blockedText(safetext.Sanitize(c.fn.Name, 64), e)
		}
	}
	return answers
}

// blockedText is the tool message of a call over the limit.
func blockedText(tool string, e *LimitExceededError) string {
	if e.Tool == "" {
		return fmt.Sprintf("Tool call limit exceeded: at most %d tool %s allowed per %s; do not call '%s' again.",
			e.Limit, plural(e.Limit, "call is", "calls are"), e.Scope, tool)
	}
	return fmt.Sprintf("Tool call limit exceeded: '%s' may be called at most %d %s per %s; do not call it again.",
		tool, e.Limit, plural(e.Limit, "time", "times"), e.Scope)
}

// callsOf says "1 call of 'search'", "2 tool calls", and so on.
func (l *toolCallLimit) callsOf(n int) string {
	if l.cfg.tool == "" {
		return fmt.Sprintf("%d tool %s", n, plural(n, "call", "calls"))
	}
	return fmt.Sprintf("%d %s of '%s'", n, plural(n, "call", "calls"), l.cfg.tool)
}

// endResponse is ExitEnd's answer: a text response without tool calls.
func endResponse(e *LimitExceededError) *llms.ContentResponse {
	text := fmt.Sprintf("Tool call limit reached: %s%s limit exceeded (%d/%d calls).", quotedTool(e.Tool), e.Scope, e.Count, e.Limit)
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{{Content: text, StopReason: "stop"}}}
}

// quotedTool returns "'search' " for a tool, "" for all tools.
func quotedTool(tool string) string {
	if tool == "" {
		return ""
	}
	return "'" + tool + "' "
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
