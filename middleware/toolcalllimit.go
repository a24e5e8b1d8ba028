package middleware

import (
	"context"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/internal/answertool"
	"github.com/toolguard/toolguard/internal/modeltext"
)

// ToolCallLimit returns a middleware that caps the tool calls leaving the
// model node per run and per thread, for every tool together or, with
// [WithToolName], for one tool. Give it [WithRunLimit], [WithThreadLimit] or
// both (the run limit no larger than the thread limit); it panics otherwise.
//
// A call counts when it leaves the model node in a response the middleware
// returns; a blocked call never counts. A limit of all tools does not count
// the calls of an agent run's answer tool (agent.WithOutputSchema), which
// run no tool; [WithToolName] can still limit it by name. The run is the one started with
// [WithRun], else the tool calls in AI messages after the last human message
// (so an unchanged langchaingo agents.Executor works). The thread is the one
// named with [WithThread], counted in a [ThreadStore] ([WithThreadStore]),
// else the whole transcript. Reserving calls is atomic: concurrent runs of
// one thread never pass a limit together. A store that fails fails the
// model call with a *[StoreError], unless [WithStoreFailOpen].
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
	return &toolCallLimit{cfg: newLimitConfig(limitName, CountToolCalls, ExitContinue, opts)}
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
		msgs := req.Messages[:min(call.base, len(req.Messages))]
		sc := l.cfg.scopes(ctx, func() (int, int) { return l.countTranscript(msgs, answertool.Name(ctx)) })
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
			n := l.countCovered(calls, answertool.Name(ctx))
			if n == 0 {
				return gate.deliver(ctx, resp)
			}
			exceeded, err := l.cfg.admit(ctx, limitName, sc, n, func(ctx context.Context, ctr counter, key ThreadKey, n, limit int) (int, bool, error) {
				return call.reserve(ctx, mark, ctr, key, n, limit)
			})
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
				Messages: withReplay(req.Messages, replay(ctx, resp, calls, l.answers(calls, exceeded, answertool.Name(ctx)))),
				Options:  req.Options,
			}
		}
	}
}

// covers reports whether the limits count c. answer is the run's answer
// tool (answertool.Name): a limit of all tools does not count its calls,
// which run no tool, so a run whose tools are used up can still answer.
func (l *toolCallLimit) covers(c *toolCall, answer string) bool {
	if c.fn != nil && l.cfg.tool == "" && answer != "" && c.fn.Name == answer {
		return false
	}
	return c.fn != nil && (l.cfg.tool == "" || sameTool(c.fn.Name, l.cfg.tool))
}

func (l *toolCallLimit) countCovered(calls []toolCall, answer string) int {
	n := 0
	for i := range calls {
		if l.covers(&calls[i], answer) {
			n++
		}
	}
	return n
}

// countTranscript counts the covered tool calls in the AI messages of msgs:
// after the last human message the run did not add itself (the run, see
// [addedByRun]), and in all (the thread).
func (l *toolCallLimit) countTranscript(msgs []llms.MessageContent, answer string) (run, thread int) {
	for _, m := range msgs {
		switch m.Role {
		case llms.ChatMessageTypeHuman:
			if !addedByRun(m, answer) {
				run = 0
			}
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
				if fn != nil && l.covers(&toolCall{fn: fn}, answer) {
					run++
					thread++
				}
			}
		}
	}
	return run, thread
}

// answers returns the tool message for each call of a blocked response. The
// covered calls that would still fit (the first ones) are told they were
// not executed and how many calls remain; the covered calls beyond them are
// told they exceed the limit; calls the limit does not cover are told they
// were not executed.
func (l *toolCallLimit) answers(calls []toolCall, e *LimitExceededError, answer string) []string {
	text := e.text()
	fit := max(e.Limit-e.Count, 0)
	answers := make([]string, len(calls))
	for i := range calls {
		c := &calls[i]
		switch {
		case !l.covers(c, answer):
			answers[i] = modeltext.Sibling
		case fit > 0:
			fit--
			answers[i] = text.Remaining()
		default:
			answers[i] = text.Exceeded(c.fn.Name)
		}
		answers[i] = withOversized(answers[i], oversized(c))
	}
	return answers
}

// endResponse is [ExitEnd]'s answer: a text response without tool calls.
func endResponse(e *LimitExceededError) *llms.ContentResponse {
	return standIn(e.reached(), e)
}
