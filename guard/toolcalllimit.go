package guard

import (
	"context"
)

// ToolCallLimit returns a middleware that caps the tool calls leaving the
// model node per run and per thread, for every tool together or, with
// [WithToolName], for one tool; c reads and writes the host's requests and
// responses. Give it [WithRunLimit], [WithThreadLimit] or both (the run
// limit no larger than the thread limit); it panics otherwise.
//
// A call counts when it leaves the model node in a response the middleware
// returns; a blocked call never counts. A limit of all tools does not count
// the calls of an agent run's answer tool ([WithAnswerTool]), which run no
// tool; [WithToolName] can still limit it by name. The run is the one
// started with [WithRun], else the tool calls of the model's messages after
// the last user turn ([TranscriptReader]: so an unchanged langchaingo
// agents.Executor works). The thread is the one named with [WithThread],
// counted in a [ThreadStore] ([WithThreadStore]), else the whole
// transcript. Reserving calls is atomic: concurrent runs of one thread
// never pass a limit together. A store that fails fails the model call with
// a *[StoreError], unless [WithStoreFailOpen]. A response the codec cannot
// read ([ResponseInfo].Unreadable) cannot be counted: it passes with an
// [EventUnguarded], or with [WithFailClosed] fails with an
// *[UnguardableError].
//
// A response that would exceed a limit is blocked whole and reported in an
// [EventLimit]; [WithExitBehavior] decides what comes back: [ExitContinue]
// (the default) re-asks the model once and falls back to [ExitEnd], a text
// response without tool calls; [ExitError] returns a *[LimitExceededError].
// Limiters stack. Place them outermost. ExitContinue reports [EventReask]
// before it re-asks, and a streamed tool call reaches the caller only once
// its response is let through.
//
// The middleware is safe for concurrent use.
func ToolCallLimit[Req, Resp any](c Codec[Req, Resp], opts ...LimitOption) Middleware[Req, Resp] {
	l := &toolCallLimit{cfg: newLimitConfig(limitName, CountToolCalls, ExitContinue, opts)}
	return func(next Handler[Req, Resp]) Handler[Req, Resp] {
		return func(ctx context.Context, req Req) (Resp, error) {
			return limitCalls(ctx, l, c, next, req)
		}
	}
}

type toolCallLimit struct {
	cfg    limitConfig
	wiring wiringChecks // reports a misnamed tool or a misplaced limiter
}

const limitName = "ToolCallLimit"

// limitCalls is one logical call through a ToolCallLimit: the loop of
// attempts ([reask]), each counted and, past a limit with ExitContinue,
// re-asked once.
func limitCalls[Req, Resp any](ctx context.Context, l *toolCallLimit, c Codec[Req, Resp], next Handler[Req, Resp], req Req) (Resp, error) {
	info := c.Request(ctx, req)
	l.wiring.check(ctx, l, func() []Tool { return info.Tools })
	call := callFrom(ctx)
	if call == nil { // the outermost limiter of this model call
		outer := ctx
		call = &limitCall{read: func() []Message { return transcript(outer, c, req) }}
		ctx = context.WithValue(ctx, limitCallKey{}, call)
	}
	answer := AnswerToolFrom(ctx)
	sc := l.cfg.scopes(ctx, func() (int, int) { return l.countTranscript(call.transcript(), answer) })
	var mark int // the count the attempt found, undone when it is not handed on
	counted := func(ctx context.Context, req Req) (Resp, error) {
		mark = call.mark()
		return next(ctx, req)
	}
	return reask(ctx, info.Stream, HoldToolCalls, counted, req, func(attempt int, gate Gate[Resp], resp Resp, err error) turn[Req, Resp] {
		if err != nil {
			call.rollback(ctx, mark)
			return turn[Req, Resp]{err: err}
		}
		got := c.Response(req, resp)
		if got.Unreadable != nil {
			// Its calls cannot be counted: refused (what stages inside
			// reserved for it undone), or passed uncounted.
			resp, err := passUnreadable(ctx, limitName, l.cfg.failClosed, l.cfg.events, resp, attempt, got.Unreadable)
			if err != nil {
				call.rollback(ctx, mark)
			}
			return turn[Req, Resp]{resp: resp, err: err}
		}
		calls := got.Calls
		n := l.countCovered(calls, answer)
		if n == 0 {
			resp, err := deliver(ctx, gate, resp)
			return turn[Req, Resp]{resp: resp, err: err}
		}
		exceeded, err := l.cfg.admit(ctx, limitName, sc, n, func(ctx context.Context, ctr counter, key ThreadKey, n, limit int) (int, bool, error) {
			return call.reserve(ctx, mark, ctr, key, n, limit)
		})
		if err != nil {
			call.rollback(ctx, mark)
			return turn[Req, Resp]{err: err}
		}
		if exceeded == nil {
			resp, err := deliver(ctx, gate, resp)
			if err != nil {
				call.rollback(ctx, mark)
			}
			return turn[Req, Resp]{resp: resp, err: err}
		}
		call.rollback(ctx, mark)
		report(ctx, l.cfg.events, Event{Kind: EventLimit, Middleware: limitName, Attempt: attempt, Tool: l.cfg.tool, Err: exceeded})
		switch {
		case l.cfg.exit == ExitError:
			return turn[Req, Resp]{err: exceeded}
		case l.cfg.exit == ExitEnd || attempt > 1:
			return turn[Req, Resp]{resp: c.End(req, exceeded.reached(), exceeded)}
		}
		return turn[Req, Resp]{again: func() (Req, error) {
			report(ctx, l.cfg.events, Event{Kind: EventReask, Middleware: limitName, Attempt: attempt + 1, Tool: l.cfg.tool})
			return c.Reask(req, resp, l.answers(ctx, calls, exceeded, answer))
		}}
	})
}

// covers reports whether the limits count a call of the tool name. answer
// is the run's answer tool ([AnswerToolFrom]): a limit of all tools does not
// count its calls, which run no tool, so a run whose tools are used up can
// still answer.
func (l *toolCallLimit) covers(name, answer string) bool {
	if l.cfg.tool == "" && answer != "" && name == answer {
		return false
	}
	return l.cfg.tool == "" || sameTool(name, l.cfg.tool)
}

// coversCall is covers for a call of a response: a call without a
// function is never counted.
func (l *toolCallLimit) coversCall(c Call, answer string) bool {
	return !c.noFunction() && l.covers(c.Name, answer)
}

func (l *toolCallLimit) countCovered(calls []Call, answer string) int {
	n := 0
	for _, c := range calls {
		if l.coversCall(c, answer) {
			n++
		}
	}
	return n
}

// countTranscript counts the covered tool calls of the model's messages in
// msgs: after the last user turn (the run), and in all (the thread).
func (l *toolCallLimit) countTranscript(msgs []Message, answer string) (run, thread int) {
	for _, m := range msgs {
		switch m.Kind {
		case UserTurn:
			run = 0
		case ModelTurn:
			for _, name := range m.Calls {
				if l.covers(name, answer) {
					run++
					thread++
				}
			}
		}
	}
	return run, thread
}

// answers returns the tool result for each call of a blocked response. The
// covered calls that would still fit (the first ones) are told they were
// not executed and how many calls remain; the covered calls beyond them are
// told they exceed the limit; calls the limit does not cover are told they
// were not executed.
func (l *toolCallLimit) answers(ctx context.Context, calls []Call, e *LimitExceededError, answer string) []Answer {
	text := e.text()
	fit := max(e.Limit-e.Count, 0)
	answers := make([]Answer, len(calls))
	for i, c := range calls {
		a := Answer{Args: replayArgs(ctx, c, c.Args)}
		switch {
		case !l.coversCall(c, answer):
			a.Content = siblingText
		case fit > 0:
			fit--
			a.Content = text.Remaining()
		default:
			a.Content, a.Refused = text.Exceeded(c.Name), true
		}
		a.Content = withOversized(a.Content, oversized(c.Args))
		answers[i] = a
	}
	return answers
}
