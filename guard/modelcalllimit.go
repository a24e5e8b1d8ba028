package guard

import (
	"context"
	"fmt"
)

// ModelCallLimit returns a middleware that caps the model calls passing
// through it per run and per thread, as LangChain's ModelCallLimitMiddleware
// does: an agent that loops without end, or a per-conversation budget. Give
// it [WithRunLimit], [WithThreadLimit] or both (the run limit no larger than
// the thread limit); c reads and writes the host's requests and responses.
// [WithExitBehavior] takes [ExitEnd] (the default: a
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
// how many model calls it made before), else the model's messages after
// the last user turn are the calls already made ([TranscriptReader]: so an
// unchanged langchaingo agents.Executor works); the thread named with
// [WithThread], counted in the [ThreadStore] ([WithThreadStore],
// shareable with ToolCallLimit: model call counts have keys of their own,
// Kind [CountModelCalls]), else every message of the model. A transcript
// is an upper bound: a response with several tool calls recorded as a
// message per call (langchaingo's layout) counts as that many model calls.
//
// Placement decides what counts. Outermost (see [Chain]), it counts agent
// steps: one per call of the wrapped model. Inside [ToolArgValidation] or
// [ModelRetry], it counts every request that would reach the model, re-asks
// and retries included. Stacking one of each is fine; see the package
// documentation ("Limits") for their counts. The middleware is safe for
// concurrent use.
func ModelCallLimit[Req, Resp any](c Codec[Req, Resp], opts ...LimitOption) Middleware[Req, Resp] {
	cfg := newLimitConfig(modelLimitName, CountModelCalls, ExitEnd, opts)
	switch {
	case cfg.tool != "":
		panic(fmt.Sprintf("guard: ModelCallLimit: WithToolName(%q) does not apply: a model call names no tool (use ToolCallLimit to cap a tool's calls)", cfg.tool))
	case cfg.exit == ExitContinue:
		panic("guard: ModelCallLimit: WithExitBehavior(ExitContinue) does not apply: there is nothing to re-ask (use ExitEnd or ExitError)")
	}
	l := &modelCallLimit{cfg: cfg}
	l.cfg.runOwner = fmt.Sprintf("ModelCallLimit@%p", l)
	return func(next Handler[Req, Resp]) Handler[Req, Resp] {
		return func(ctx context.Context, req Req) (Resp, error) {
			return limitModelCall(ctx, l, c, next, req)
		}
	}
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

// limitModelCall is one model call through a ModelCallLimit.
func limitModelCall[Req, Resp any](ctx context.Context, l *modelCallLimit, c Codec[Req, Resp], next Handler[Req, Resp], req Req) (Resp, error) {
	var zero Resp
	l.wiring.checkThread(ctx, modelLimitName, &l.cfg)
	sc := l.cfg.scopes(ctx, func() (int, int) { return countModelTurns(transcript(ctx, c, req)) })
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
		return zero, err
	}
	if exceeded != nil {
		release()
		report(ctx, l.cfg.events, Event{Kind: EventLimit, Middleware: modelLimitName, Attempt: 1, Err: exceeded})
		if l.cfg.exit == ExitError {
			return zero, exceeded
		}
		return c.End(req, exceeded.reached(), exceeded), nil
	}
	resp, err := next(ctx, req)
	if err != nil {
		release()
		return zero, err
	}
	return resp, nil
}

// countModelTurns counts the model's messages of msgs: after the last user
// turn, the run's model calls, and in all, the thread's.
func countModelTurns(msgs []Message) (run, thread int) {
	for _, m := range msgs {
		switch m.Kind {
		case UserTurn:
			run = 0
		case ModelTurn:
			run++
			thread++
		}
	}
	return run, thread
}
