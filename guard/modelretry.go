package guard

import (
	"context"
	"errors"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/toolguard/toolguard/retry"
)

// retryConfig holds [ModelRetry]'s options.
type retryConfig struct {
	maxRetries    int
	events        eventOption
	newBackOff    func() backoff.BackOff
	retryIf       func(error) bool
	onFailure     func(ctx context.Context, err error) (string, error)
	retryStreamed bool
	// sleep waits d or until ctx is done; tests replace it so that they
	// never sleep.
	sleep func(ctx context.Context, d time.Duration) error
}

type retryOption func(*retryConfig)

func (o retryOption) applyRetry(c *retryConfig) { o(c) }

// WithBackOff sets the policy for the waits between [ModelRetry]'s attempts.
// newBackOff is a factory: a backoff.BackOff is stateful and one ModelRetry
// serves concurrent callers, so ModelRetry calls newBackOff at most once per
// logical model call (on its first failure), calls Reset on the result and
// asks it for each wait. backoff.Stop from the policy means give up.
//
// The default is [retry.DefaultBackOff]: exponential, 1s, 2s, 4s, … capped at
// 60s, each wait randomised by ±25%. A server's retry hint ([retry.After])
// raises a wait up to the policy's maximum delay (see [retry.NextWait]): the
// MaxInterval of an *backoff.ExponentialBackOff, otherwise 60s. Tests can
// pass func() backoff.BackOff { return &backoff.ZeroBackOff{} } to retry
// without waiting.
//
// ModelRetry calls newBackOff once at construction to check that it returns
// a non-nil BackOff, and panics if it does not or if newBackOff is nil.
func WithBackOff(newBackOff func() backoff.BackOff) RetryOption {
	if newBackOff == nil {
		panic("guard: WithBackOff(nil): the backoff factory must not be nil")
	}
	return retryOption(func(c *retryConfig) { c.newBackOff = newBackOff })
}

// WithRetryIf sets which errors [ModelRetry] retries (default
// [retry.IsRetryable]). Whatever fn says, ModelRetry never retries once the
// caller's context is done, nor after an attempt that already streamed
// chunks to the caller (see [WithRetryStreamed]). fn must be safe for
// concurrent use; nil panics.
func WithRetryIf(fn func(error) bool) RetryOption {
	if fn == nil {
		panic("guard: WithRetryIf(nil): the predicate must not be nil")
	}
	return retryOption(func(c *retryConfig) { c.retryIf = fn })
}

// WithOnFailure sets what [ModelRetry] returns when it gives up on a model
// call: fn receives the *[retry.Error] (errors.As reaches it; its Unwrap, the
// last attempt's error) and returns either the text of an answer that
// stands in for the model's (a response without tool calls, in the host's
// shape: [Codec.End]) or an error for the caller. The default returns the
// *retry.Error. [ContinueOnFailure] answers with a text instead, like
// LangChain's on_failure="continue".
//
// fn is not called when the caller's context is done: the *retry.Error is
// returned, so a cancelled agent does not carry on. If fn returns neither a
// text nor an error, the *retry.Error is returned. nil panics.
func WithOnFailure(fn func(ctx context.Context, err error) (string, error)) RetryOption {
	if fn == nil {
		panic("guard: WithOnFailure(nil): the failure handler must not be nil")
	}
	return retryOption(func(c *retryConfig) { c.onFailure = fn })
}

// WithRetryStreamed lets [ModelRetry] retry an attempt that failed after it
// had streamed part of its answer to the caller. The caller then sees the
// start of the answer twice, so use it only when the caller's stream can
// discard a failed attempt's output. By default such a failure is not
// retried.
func WithRetryStreamed() RetryOption {
	return retryOption(func(c *retryConfig) { c.retryStreamed = true })
}

// WithSleep sets how [ModelRetry] waits between attempts: fn waits d, or
// until ctx is done, and then returns ctx's error (nil when the wait ran
// out). The default is a timer raced against ctx.Done. Tests use it to
// record the waits ModelRetry chose, server hints included, without
// sleeping; a program can route the waits through a scheduler of its own.
// nil panics.
func WithSleep(fn func(ctx context.Context, d time.Duration) error) RetryOption {
	if fn == nil {
		panic("guard: WithSleep(nil): the wait function must not be nil")
	}
	return retryOption(func(c *retryConfig) { c.sleep = fn })
}

// ContinueOnFailure is a failure handler for [WithOnFailure] that turns a
// failed model call into an answer: a text reading "Model call failed after
// N attempts: <last error>", and a nil error. The agent loop then ends with
// that text as the model's answer instead of failing, as with LangChain's
// ModelRetryMiddleware(on_failure="continue"); the adapter's stand-in
// response carries err ([ResponseInfo].StandIn), so a loop that needs a
// structured answer can end with it instead.
func ContinueOnFailure(_ context.Context, err error) (string, error) {
	var re *retry.Error
	if errors.As(err, &re) {
		return modelFailedText(re.Attempts, re.Err), nil
	}
	return modelFailedText(0, err), nil
}

// ModelRetry returns a middleware that calls the model again when a call
// fails with a transient error: a rate limit, an overloaded or failing
// server, a timeout, a broken connection ([retry.IsRetryable], or
// [WithRetryIf]); c reads and writes the host's requests and responses.
//
// It makes at most 1 + [WithMaxRetries] (default 2) attempts per call and
// waits between them as the backoff policy says ([WithBackOff]; default 1s,
// 2s, … capped at 60s, ±25% jitter), longer when the server asked for it
// ([retry.NextWait]: the error's hint, or a Retry-After header recorded by
// a [retry.HTTPClient] or read from the response by the adapter). It gives
// up at once on an error that is not retryable, when the policy says
// backoff.Stop, and when the wait would end after the context's deadline;
// a cancelled context stops a wait at once. An attempt that already
// streamed part of its answer to the caller is not retried
// ([WithRetryStreamed]); tool-call parts that [ToolArgValidation] or
// [ToolCallLimit] outside holds back never reached it and do not count.
//
// When it gives up it returns a *[retry.Error] (the attempts made; its
// Unwrap is the last attempt's error), or what [WithOnFailure] makes of it.
// It reports [EventRetry] before each wait and [EventGiveUp] when it returns
// a failure. The caller's request is never modified.
//
// Place it innermost. Provider clients that retry on their own multiply
// with it. The middleware is safe for concurrent use.
func ModelRetry[Req, Resp any](c Codec[Req, Resp], opts ...RetryOption) Middleware[Req, Resp] {
	cfg := retryConfig{
		maxRetries: 2,
		newBackOff: retry.DefaultBackOff,
		retryIf:    retry.IsRetryable,
		onFailure:  returnRetryError,
		sleep:      retry.Sleep,
	}
	for _, o := range opts {
		if o != nil {
			o.applyRetry(&cfg)
		}
	}
	if cfg.newBackOff() == nil {
		panic("guard: ModelRetry: the WithBackOff factory returned a nil backoff.BackOff")
	}
	m := &modelRetry{cfg: cfg}
	return func(next Handler[Req, Resp]) Handler[Req, Resp] {
		return func(ctx context.Context, req Req) (Resp, error) {
			return retryCall(ctx, m, c, next, req)
		}
	}
}

const retryName = "ModelRetry"

type modelRetry struct {
	cfg retryConfig
}

func returnRetryError(_ context.Context, err error) (string, error) {
	return "", err
}

func (m *modelRetry) emit(ctx context.Context, e Event) {
	e.Middleware = retryName
	report(ctx, m.cfg.events, e)
}

// retryCall is one logical call through a ModelRetry.
func retryCall[Req, Resp any](ctx context.Context, m *modelRetry, c Codec[Req, Resp], next Handler[Req, Resp], req Req) (Resp, error) {
	var zero Resp
	var st Stream[Req, Resp]
	if !m.cfg.retryStreamed {
		st = c.Request(ctx, req).Stream
	}
	var policy backoff.BackOff // made on the first failure
	for attempt := 1; ; attempt++ {
		attemptReq, streamed := req, func() bool { return false }
		if st != nil {
			attemptReq, streamed = st.Watch(ctx, req)
		}
		attemptCtx, hint := retry.WithHeaderHint(ctx) // filled by a retry.HTTPClient
		resp, err := next(attemptCtx, attemptReq)
		if err == nil {
			return resp, nil
		}
		if ctxErr := ctx.Err(); ctxErr != nil {
			return zero, m.interrupted(ctx, &retry.Error{Attempts: attempt, Err: err, ContextErr: ctxErr})
		}
		if attempt > m.cfg.maxRetries || !m.cfg.retryIf(err) || streamed() {
			return failRetry(ctx, m, c, req, &retry.Error{Attempts: attempt, Err: err})
		}
		if policy == nil {
			policy = m.cfg.newBackOff()
			policy.Reset()
		}
		annotated := hint.Annotate(err)
		wait, ok := retry.NextWait(policy, annotated)
		if !ok {
			return failRetry(ctx, m, c, req, &retry.Error{Attempts: attempt, Err: err})
		}
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) <= wait {
			// The next attempt could not start before the deadline:
			// the error says so, and whether the provider asked for
			// the wait.
			hinted, ok := retry.After(annotated)
			return failRetry(ctx, m, c, req, &retry.Error{Attempts: attempt, Err: err,
				Wait: wait, Left: time.Until(deadline), Hinted: ok && hinted >= wait})
		}
		m.emit(ctx, Event{Kind: EventRetry, Attempt: attempt, Err: err, Wait: wait})
		if serr := m.cfg.sleep(ctx, wait); serr != nil {
			ctxErr := ctx.Err()
			if ctxErr == nil {
				ctxErr = serr
			}
			return zero, m.interrupted(ctx, &retry.Error{Attempts: attempt, Err: err, ContextErr: ctxErr})
		}
	}
}

// failRetry ends a call that failed for good with rerr, through the failure
// handler: its text becomes the codec's stand-in answer.
func failRetry[Req, Resp any](ctx context.Context, m *modelRetry, c Codec[Req, Resp], req Req, rerr *retry.Error) (Resp, error) {
	var zero Resp
	m.emit(ctx, Event{Kind: EventGiveUp, Attempt: rerr.Attempts, Err: rerr.Err})
	text, ferr := m.cfg.onFailure(ctx, rerr)
	switch {
	case ferr != nil:
		return zero, ferr
	case text == "":
		return zero, rerr
	}
	return c.End(req, text, rerr), nil
}

// interrupted ends a call whose context is done, bypassing the failure
// handler.
func (m *modelRetry) interrupted(ctx context.Context, rerr *retry.Error) error {
	m.emit(ctx, Event{Kind: EventGiveUp, Attempt: rerr.Attempts, Err: rerr.Err})
	return rerr
}
