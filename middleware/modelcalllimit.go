package middleware

import (
	"context"
	"fmt"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/internal/answertool"
)

// ModelCallLimit returns a middleware that caps the model calls passing
// through it per run and per thread, as LangChain's ModelCallLimitMiddleware
// does: an agent that loops without end, or a per-conversation budget. Give
// it [WithRunLimit], [WithThreadLimit] or both (the run limit no larger than
// the thread limit). [WithExitBehavior] takes [ExitEnd] (the default: an AI
// response without tool calls whose text says which limit was reached, so
// any agent loop ends) or [ExitError] (a *[LimitExceededError] with Kind
// [CountModelCalls]). It panics on no limit, on [WithToolName] (there is no
// tool to name) and on [ExitContinue] (there is nothing to re-ask).
//
// A call over a limit never reaches the model; it is reported in an
// [EventLimit]. A call that fails with an error is not counted (its
// reservation is released, waiting at most [ReleaseTimeout] for the
// store), so a transient failure retried by [ModelRetry] does not burn
// the budget. Scopes work as for [ToolCallLimit]: the run
// started with [WithRun] (or continued with [WithResumedRun], which says
// how many model calls it made before), else the AI messages after the
// last human message are the calls already made (so an unchanged
// langchaingo agents.Executor works); the thread named with [WithThread],
// counted in the [ThreadStore] ([WithThreadStore], shareable with
// ToolCallLimit: model call counts have keys of their own, Kind
// [CountModelCalls]), else every AI message. A transcript is an upper
// bound: a response with several tool calls recorded as an AI message per
// call (the layout of [ToolCallMessages]) counts as that many model calls.
//
// Placement decides what counts. Outermost (see [Chain]), it counts agent
// steps: one per call of the wrapped model. Inside [ToolArgValidation] or
// [ModelRetry], it counts every request that would reach the model, re-asks
// and retries included. Stacking one of each is fine; see the package
// documentation ("Limits") for their counts. The middleware is safe for
// concurrent use.
func ModelCallLimit(opts ...LimitOption) Middleware {
	cfg := newLimitConfig(modelLimitName, CountModelCalls, ExitEnd, opts)
	switch {
	case cfg.tool != "":
		panic(fmt.Sprintf("middleware: ModelCallLimit: WithToolName(%q) does not apply: a model call names no tool (use ToolCallLimit to cap a tool's calls)", cfg.tool))
	case cfg.exit == ExitContinue:
		panic("middleware: ModelCallLimit: WithExitBehavior(ExitContinue) does not apply: there is nothing to re-ask (use ExitEnd or ExitError)")
	}
	l := &modelCallLimit{cfg: cfg}
	l.cfg.runOwner = fmt.Sprintf("ModelCallLimit@%p", l)
	return l
}

const modelLimitName = "ModelCallLimit"

type modelCallLimit struct {
	cfg    limitConfig
	wiring wiringChecks // reports a thread limit without a thread
}

// modelReservation is one count a model call holds.
type modelReservation struct {
	c   counter
	key ThreadKey
}

func (l *modelCallLimit) WrapModelCall(next Handler) Handler {
	return func(ctx context.Context, req *Request) (*llms.ContentResponse, error) {
		l.wiring.checkThread(ctx, modelLimitName, &l.cfg)
		sc := l.cfg.scopes(ctx, func() (int, int) { return countAIMessages(req.Messages, answertool.Name(ctx)) })
		var held []modelReservation
		release := func() {
			rctx, cancel := releaseContext(ctx)
			defer cancel()
			for _, r := range held {
				_ = r.c.release(rctx, r.key, 1) // see ThreadStore.Release
			}
		}
		exceeded, err := l.cfg.admit(ctx, modelLimitName, sc, 1, func(ctx context.Context, ctr counter, key ThreadKey, n, limit int) (int, bool, error) {
			count, ok, err := ctr.reserve(ctx, key, n, limit)
			if ok && err == nil {
				held = append(held, modelReservation{c: ctr, key: key})
			}
			return count, ok, err
		})
		if err != nil {
			release()
			return nil, err
		}
		if exceeded != nil {
			release()
			report(ctx, l.cfg.events, Event{Kind: EventLimit, Middleware: modelLimitName, Attempt: 1, Err: exceeded})
			if l.cfg.exit == ExitError {
				return nil, exceeded
			}
			return endResponse(exceeded), nil
		}
		resp, err := next(ctx, req)
		if err != nil {
			release()
			return nil, err
		}
		return resp, nil
	}
}

// countAIMessages counts the AI messages of msgs: after the last human
// message the run did not add itself (see [addedByRun]; answerTool is the
// run's answer tool), the run's model calls, and in all, the thread's.
func countAIMessages(msgs []llms.MessageContent, answerTool string) (run, thread int) {
	for _, m := range msgs {
		switch m.Role {
		case llms.ChatMessageTypeHuman:
			if !addedByRun(m, answerTool) {
				run = 0
			}
		case llms.ChatMessageTypeAI:
			run++
			thread++
		}
	}
	return run, thread
}
