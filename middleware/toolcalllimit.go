package middleware

import (
	"context"
	"fmt"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/errfmt"
)

// ToolCallLimit returns a middleware that caps the tool calls leaving the
// model node per run and per thread, for every tool together or, with
// [WithToolName], for one tool. Give it [WithRunLimit], [WithThreadLimit] or
// both (the run limit no larger than the thread limit); it panics otherwise.
//
// A call counts when it leaves the model node in a response the middleware
// returns; a blocked call never counts. The run is the one started with
// [WithRun], else the tool calls in AI messages after the last human message
// (so an unchanged langchaingo agents.Executor works). The thread is the one
// named with [WithThread], counted in a [ThreadStore] ([WithThreadStore]),
// else the whole transcript. Reserving calls is atomic: concurrent runs of
// one thread never pass a limit together.
//
// A response that would exceed a limit is blocked whole and reported in an
// [EventLimit]; [WithExitBehavior] decides what comes back: [ExitContinue]
// (the default) re-asks the model once and falls back to [ExitEnd], a text
// response without tool calls; [ExitError] returns a *[LimitExceededError].
// Limiters stack (see the package documentation, "Limits"). Place them
// outermost (see [Chain]). ExitContinue reports [EventReask] before it
// re-asks, and a streamed tool call reaches the caller only once its
// response is let through (package documentation, "Streaming").
//
// The middleware is safe for concurrent use.
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
	cfg    limitConfig
	wiring wiringChecks // reports a misnamed tool or a misplaced limiter
}

const limitName = "ToolCallLimit"

func (l *toolCallLimit) WrapModelCall(next Handler) Handler {
	return func(ctx context.Context, req *Request) (*llms.ContentResponse, error) {
		l.wiring.check(ctx, l, req)
		call := callFrom(ctx)
		if call == nil { // the outermost limiter of this model call
			call = &limitCall{base: len(req.Messages)}
			ctx = context.WithValue(ctx, limitCallKey{}, call)
		}
		sc := l.scopes(ctx, req.Messages[:min(call.base, len(req.Messages))])
		attemptReq, st := req, streamOf(req)
		for attempt := 1; ; attempt++ {
			mark := call.mark()
			streamCtx, streamReq, gate := st.attempt(ctx, attemptReq)
			resp, err := next(streamCtx, streamReq)
			if err != nil {
				call.rollback(ctx, mark)
				return nil, err
			}
			calls := collectToolCalls(resp, len(req.Messages))
			n := l.countCovered(calls)
			if n == 0 {
				return gate.deliver(ctx, resp)
			}
			exceeded, err := l.admit(ctx, call, mark, sc, n)
			if err != nil {
				call.rollback(ctx, mark)
				return nil, err
			}
			if exceeded == nil {
				if resp, err = gate.deliver(ctx, resp); err != nil {
					call.rollback(ctx, mark)
				}
				return resp, err
			}
			call.rollback(ctx, mark)
			report(ctx, l.cfg.events, Event{Kind: EventLimit, Middleware: limitName, Attempt: attempt, Tool: l.cfg.tool, Err: exceeded})
			switch {
			case l.cfg.exit == ExitError:
				return nil, exceeded
			case l.cfg.exit == ExitEnd || attempt > 1:
				return endResponse(exceeded), nil
			}
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			report(ctx, l.cfg.events, Event{Kind: EventReask, Middleware: limitName, Attempt: attempt + 1, Tool: l.cfg.tool})
			attemptReq = &Request{
				Messages: withReplay(req.Messages, replay(resp, calls, l.answers(calls, exceeded))),
				Options:  req.Options,
			}
		}
	}
}

// covers reports whether the limits count c.
func (l *toolCallLimit) covers(c *toolCall) bool {
	return c.fn != nil && (l.cfg.tool == "" || sameTool(c.fn.Name, l.cfg.tool))
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
				if fn != nil && (l.cfg.tool == "" || sameTool(fn.Name, l.cfg.tool)) {
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
	text := e.text()
	fit := max(e.Limit-e.Count, 0)
	answers := make([]string, len(calls))
	for i := range calls {
		c := &calls[i]
		switch {
		case !l.covers(c):
			answers[i] = errfmt.Sibling
		case fit > 0:
			fit--
			answers[i] = text.Remaining()
		default:
			answers[i] = text.Exceeded(c.fn.Name)
		}
	}
	return answers
}

// endResponse is [ExitEnd]'s answer: a text response without tool calls.
func endResponse(e *LimitExceededError) *llms.ContentResponse {
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{{Content: e.text().Reached(), StopReason: "stop"}}}
}
