package middleware

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/internal/modeltext"
	"github.com/toolguard/toolguard/internal/retrywait"
	"github.com/toolguard/toolguard/retry"
)

// retryConfig holds [ModelRetry]'s options.
type retryConfig struct {
	maxRetries    int
	events        eventOption
	newBackOff    func() backoff.BackOff
	retryIf       func(error) bool
	onFailure     func(ctx context.Context, err error) (*llms.ContentResponse, error)
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
		panic("middleware: WithBackOff(nil): the backoff factory must not be nil")
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
		panic("middleware: WithRetryIf(nil): the predicate must not be nil")
	}
	return retryOption(func(c *retryConfig) { c.retryIf = fn })
}

// WithOnFailure sets what [ModelRetry] returns when it gives up on a model
// call: fn receives the *[retry.Error] (errors.As reaches it; its Unwrap, the
// last attempt's error) and its result is returned to the caller. The
// default returns the *retry.Error. [ContinueOnFailure] answers with an AI
// message instead, like LangChain's on_failure="continue".
//
// fn is not called when the caller's context is done: the *retry.Error is
// returned, so a cancelled agent does not carry on. If fn returns neither a
// response nor an error, the *retry.Error is returned. nil panics.
func WithOnFailure(fn func(ctx context.Context, err error) (*llms.ContentResponse, error)) RetryOption {
	if fn == nil {
		panic("middleware: WithOnFailure(nil): the failure handler must not be nil")
	}
	return retryOption(func(c *retryConfig) { c.onFailure = fn })
}

// WithRetryStreamed lets [ModelRetry] retry an attempt that failed after it
// had streamed chunks to the caller's llms.WithStreamingFunc (or
// WithStreamingReasoningFunc). The caller then sees the start of the answer
// twice, so use it only when the streaming function can discard a failed
// attempt's output. By default such a failure is not retried.
func WithRetryStreamed() RetryOption {
	return retryOption(func(c *retryConfig) { c.retryStreamed = true })
}

// ContinueOnFailure is a failure handler for [WithOnFailure] that turns a
// failed model call into an answer: a single AI text choice reading "Model
// call failed after N attempts: <last error>", and a nil error. The agent
// loop then ends with that text as the model's answer instead of failing,
// as with LangChain's ModelRetryMiddleware(on_failure="continue"); a loop
// that needs a structured answer reads err back with [StandInError].
func ContinueOnFailure(_ context.Context, err error) (*llms.ContentResponse, error) {
	var re *retry.Error
	if errors.As(err, &re) {
		return standIn(modeltext.ModelFailed(re.Attempts, re.Err), err), nil
	}
	return standIn(modeltext.ModelFailed(0, err), err), nil
}

// ModelRetry returns a middleware that calls the model again when a call
// fails with a transient error: a rate limit, an overloaded or failing
// server, a timeout, a broken connection ([retry.IsRetryable], or
// [WithRetryIf]).
//
// It makes at most 1 + [WithMaxRetries] (default 2) attempts per call and
// waits between them as the backoff policy says ([WithBackOff]; default 1s,
// 2s, … capped at 60s, ±25% jitter), longer when the server asked for it
// ([retry.NextWait]: the error's hint, or the Retry-After header recorded
// by a [retry.HTTPClient] given to the provider client). It gives up at
// once on an error that is not retryable, when the policy says
// backoff.Stop, and when the wait would end after the context's deadline;
// a cancelled context stops a wait at once. An attempt that already
// streamed chunks to the caller is not retried ([WithRetryStreamed]);
// tool-call chunks that [ToolArgValidation] or [ToolCallLimit] outside holds
// back never reached it and do not count.
//
// When it gives up it returns a *[retry.Error] (the attempts made; its
// Unwrap is the last attempt's error), or what [WithOnFailure] makes of it.
// It reports [EventRetry] before each wait and [EventGiveUp] when it returns
// a failure. Each attempt gets a new [Request]; the caller's options are
// never modified.
//
// Place it innermost (see [Chain]). Provider clients that retry on their own
// multiply with it: see the README, "Retries multiply across layers". The
// middleware is safe for concurrent use.
func ModelRetry(opts ...RetryOption) Middleware {
	cfg := retryConfig{
		maxRetries: 2,
		newBackOff: retry.DefaultBackOff,
		retryIf:    func(err error) bool { return retry.IsRetryableWith(err, llmsStatus) },
		onFailure:  returnRetryError,
		sleep:      retrywait.Sleep,
	}
	for _, o := range opts {
		if o != nil {
			o.applyRetry(&cfg)
		}
	}
	if cfg.newBackOff() == nil {
		panic("middleware: ModelRetry: the WithBackOff factory returned a nil backoff.BackOff")
	}
	return &modelRetry{cfg: cfg}
}

const retryName = "ModelRetry"

type modelRetry struct {
	cfg retryConfig
}

func returnRetryError(_ context.Context, err error) (*llms.ContentResponse, error) {
	return nil, err
}

func (m *modelRetry) emit(ctx context.Context, e Event) {
	e.Middleware = retryName
	report(ctx, m.cfg.events, e)
}

func (m *modelRetry) WrapModelCall(next Handler) Handler {
	return func(ctx context.Context, req *Request) (*llms.ContentResponse, error) {
		var watch *streamWatch
		if !m.cfg.retryStreamed {
			watch = watchStream(ctx, req)
		}
		var policy backoff.BackOff // made on the first failure
		for attempt := 1; ; attempt++ {
			attemptReq := &Request{Messages: req.Messages, Options: req.Options}
			var chunks *atomic.Int64
			if watch != nil {
				attemptReq.Options, chunks = watch.options(req.Options)
			}
			attemptCtx, hint := retry.WithHeaderHint(ctx) // filled by a retry.HTTPClient
			resp, err := next(attemptCtx, attemptReq)
			if err == nil {
				return resp, nil
			}
			if ctxErr := ctx.Err(); ctxErr != nil {
				return m.interrupted(ctx, &retry.Error{Attempts: attempt, Err: err, ContextErr: ctxErr})
			}
			if attempt > m.cfg.maxRetries || !m.cfg.retryIf(err) || (chunks != nil && chunks.Load() > 0) {
				return m.giveUp(ctx, attempt, err)
			}
			if policy == nil {
				policy = m.cfg.newBackOff()
				policy.Reset()
			}
			annotated := hint.Annotate(err)
			wait, ok := retry.NextWait(policy, annotated)
			if !ok {
				return m.giveUp(ctx, attempt, err)
			}
			if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) <= wait {
				// The next attempt could not start before the deadline:
				// the error says so, and whether the provider asked for
				// the wait.
				hinted, ok := retry.After(annotated)
				return m.fail(ctx, &retry.Error{Attempts: attempt, Err: err,
					Wait: wait, Left: time.Until(deadline), Hinted: ok && hinted >= wait})
			}
			m.emit(ctx, Event{Kind: EventRetry, Attempt: attempt, Err: err, Wait: wait})
			if serr := m.cfg.sleep(ctx, wait); serr != nil {
				ctxErr := ctx.Err()
				if ctxErr == nil {
					ctxErr = serr
				}
				return m.interrupted(ctx, &retry.Error{Attempts: attempt, Err: err, ContextErr: ctxErr})
			}
		}
	}
}

// giveUp ends a call that failed for good, through the failure handler.
func (m *modelRetry) giveUp(ctx context.Context, attempts int, err error) (*llms.ContentResponse, error) {
	return m.fail(ctx, &retry.Error{Attempts: attempts, Err: err})
}

// fail ends a call that failed for good with rerr, through the failure
// handler.
func (m *modelRetry) fail(ctx context.Context, rerr *retry.Error) (*llms.ContentResponse, error) {
	m.emit(ctx, Event{Kind: EventGiveUp, Attempt: rerr.Attempts, Err: rerr.Err})
	resp, ferr := m.cfg.onFailure(ctx, rerr)
	if resp == nil && ferr == nil {
		return nil, rerr
	}
	return resp, ferr
}

// interrupted ends a call whose context is done, bypassing the failure
// handler.
func (m *modelRetry) interrupted(ctx context.Context, rerr *retry.Error) (*llms.ContentResponse, error) {
	m.emit(ctx, Event{Kind: EventGiveUp, Attempt: rerr.Attempts, Err: rerr.Err})
	return nil, rerr
}

// streamWatch holds the caller's streaming functions, so that each attempt
// can count the chunks it delivers to them.
type streamWatch struct {
	text      func(ctx context.Context, chunk []byte) error
	reasoning func(ctx context.Context, reasoningChunk, chunk []byte) error
	held      bool // tool-call chunks are held back from the caller (stream.go)
}

// watchStream returns nil when the request streams nothing to the caller.
func watchStream(ctx context.Context, req *Request) *streamWatch {
	o := req.CallOptions()
	if o.StreamingFunc == nil && o.StreamingReasoningFunc == nil {
		return nil
	}
	return &streamWatch{text: o.StreamingFunc, reasoning: o.StreamingReasoningFunc, held: toolChunksHeld(ctx)}
}

// reaches reports whether chunk reaches the caller.
func (w *streamWatch) reaches(chunk []byte) bool {
	return len(chunk) > 0 && !(w.held && isToolCallChunk(chunk))
}

// options returns a copy of opts followed by streaming functions that count
// the non-empty chunks of one attempt and forward them to the caller's.
func (w *streamWatch) options(opts []llms.CallOption) ([]llms.CallOption, *atomic.Int64) {
	chunks := new(atomic.Int64)
	out := make([]llms.CallOption, len(opts), len(opts)+2)
	copy(out, opts)
	if f := w.text; f != nil {
		out = append(out, llms.WithStreamingFunc(func(ctx context.Context, chunk []byte) error {
			if w.reaches(chunk) {
				chunks.Add(1)
			}
			return f(ctx, chunk)
		}))
	}
	if f := w.reasoning; f != nil {
		out = append(out, llms.WithStreamingReasoningFunc(func(ctx context.Context, reasoningChunk, chunk []byte) error {
			if len(reasoningChunk) > 0 || w.reaches(chunk) {
				chunks.Add(1)
			}
			return f(ctx, reasoningChunk, chunk)
		}))
	}
	return out, chunks
}
