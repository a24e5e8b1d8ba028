package middleware

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/errfmt"
	"github.com/toolguard/toolguard/retry"
)

// retryConfig holds ModelRetry's options.
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

// WithBackOff sets the policy for the waits between ModelRetry's attempts.
// newBackOff is a factory: a backoff.BackOff is stateful and one ModelRetry
// serves concurrent callers, so ModelRetry calls newBackOff at most once per
// logical model call (on its first failure), calls Reset on the result and
// asks it for each wait. backoff.Stop from the policy means give up.
//
// The default is retry.DefaultBackOff: exponential, 1s, 2s, 4s, … capped at
// 60s, each wait randomised by ±25%. A server's retry hint (retry.After)
// raises a wait up to the policy's maximum delay (see retry.NextWait): the
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

// WithRetryIf sets which errors ModelRetry retries (default
// retry.IsRetryable). Whatever fn says, ModelRetry never retries once the
// caller's context is done, nor after an attempt that already streamed
// chunks to the caller (see WithRetryStreamed). fn must be safe for
// concurrent use; nil panics.
func WithRetryIf(fn func(error) bool) RetryOption {
	if fn == nil {
		panic("middleware: WithRetryIf(nil): the predicate must not be nil")
	}
	return retryOption(func(c *retryConfig) { c.retryIf = fn })
}

// WithOnFailure sets what ModelRetry returns when it gives up on a model
// call: fn receives the *retry.Error (errors.As reaches it; its Unwrap, the
// last attempt's error) and its result is returned to the caller. The
// default returns the *retry.Error. ContinueOnFailure answers with an AI
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

// WithRetryStreamed lets ModelRetry retry an attempt that failed after it
// had streamed chunks to the caller's llms.WithStreamingFunc (or
// WithStreamingReasoningFunc). The caller then sees the start of the answer
// twice, so use it only when the streaming function can discard a failed
// attempt's output. By default such a failure is not retried.
func WithRetryStreamed() RetryOption {
	return retryOption(func(c *retryConfig) { c.retryStreamed = true })
}

// ContinueOnFailure is a failure handler for WithOnFailure that turns a
// failed model call into an answer: a single AI text choice reading "Model
// call failed after N attempts: <last error>", and a nil error. The agent
// loop then ends with that text as the model's answer instead of failing,
// as with LangChain's ModelRetryMiddleware(on_failure="continue").
func ContinueOnFailure(_ context.Context, err error) (*llms.ContentResponse, error) {
	var re *retry.Error
	if errors.As(err, &re) {
		return &llms.ContentResponse{Choices: []*llms.ContentChoice{{Content: errfmt.ModelFailed(re.Attempts, re.Err)}}}, nil
	}
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{{Content: errfmt.ModelFailed(0, err)}}}, nil
}

// ModelRetry returns a middleware that calls the model again when a call
// fails with a transient error: a rate limit, an overloaded or failing
// server, a timeout, a broken connection (retry.IsRetryable; WithRetryIf).
//
// It makes at most 1 + WithMaxRetries (default 2) attempts per call and
// waits between them as the backoff policy says (WithBackOff; default 1s,
// 2s, … capped at 60s, ±25% jitter), longer when the server asked for it
// ("Please try again in 20s"), never longer than the policy's maximum delay.
// It gives up at once, without waiting, on an error that is not retryable,
// when the policy says backoff.Stop, and when the caller's context has a
// deadline that would pass before the wait ends. A cancelled context stops
// a wait at once. An attempt that failed after streaming chunks to the
// caller's llms.WithStreamingFunc is not retried, so the caller never sees
// text twice (WithRetryStreamed).
//
// When it gives up, ModelRetry returns a *retry.Error holding the number of
// attempts, whose Unwrap is the last attempt's error (errors.Is reaches it,
// and context.Canceled or context.DeadlineExceeded when the caller's context
// ended the call), or what WithOnFailure makes of it. Every failure it
// returns is a *retry.Error, a non-retryable error after one attempt
// included.
//
// Each attempt gets a new Request with the caller's messages and options
// (plus, when it watches a stream, a streaming function that counts chunks
// and forwards them to the caller's); the caller's options are never
// modified. WithEventHandler receives EventRetry before each wait (the
// failed attempt, its error, the wait) and EventGiveUp when ModelRetry
// returns a failure (the attempts made, the last error).
//
// # Retries multiply across layers
//
// Everything inside a re-invoking middleware runs once per attempt, and so
// does every retry below it. Some langchaingo providers' clients retry on
// their own: the AWS SDK behind Bedrock makes up to 3 attempts on
// throttling and 5xx, Google's genai client retries 503 with its own backoff
// for up to 10 minutes, the Mistral client makes up to 5 attempts on 429 and
// 5xx; the OpenAI, Anthropic and Ollama clients make one. With the defaults,
//
//	Wrap(bedrockModel, ToolArgValidation(), ModelRetry())
//
// may send one GenerateContent call to Bedrock 3 × 3 × 3 = 27 times:
// ToolArgValidation makes up to 3 model calls (the first and 2 re-asks),
// ModelRetry up to 3 attempts of each, the AWS SDK up to 3 HTTP requests of
// each, with up to about 3.75s of ModelRetry's waits per model call on top
// of the SDK's. Lower WithMaxRetries (or the client's own retries) where a
// client already retries, and bound the whole call with a context deadline.
//
// The recommended order is
//
//	Wrap(model, ToolCallLimit(...), ToolArgValidation(...), ModelRetry(...))
//
// so that the limiter counts only tool calls that will run, validation sees
// every raw response, and each of validation's model calls (re-asks
// included) is retried on its own, with a fresh backoff. ModelRetry outside
// ToolArgValidation would repeat a whole validation sequence for one
// transient error.
//
// The middleware is safe for concurrent use; the state of a call (attempts,
// backoff, stream counters) lives in the call.
func ModelRetry(opts ...RetryOption) Middleware {
	cfg := retryConfig{
		maxRetries: 2,
		newBackOff: retry.DefaultBackOff,
		retryIf:    retry.IsRetryable,
		onFailure:  returnRetryError,
		sleep:      sleepContext,
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
	m.cfg.events.emit(ctx, e)
}

func (m *modelRetry) WrapModelCall(next Handler) Handler {
	return func(ctx context.Context, req *Request) (*llms.ContentResponse, error) {
		var watch *streamWatch
		if !m.cfg.retryStreamed {
			watch = watchStream(req)
		}
		var policy backoff.BackOff // made on the first failure
		for attempt := 1; ; attempt++ {
			attemptReq := &Request{Messages: req.Messages, Options: req.Options}
			var chunks *atomic.Int64
			if watch != nil {
				attemptReq.Options, chunks = watch.options(req.Options)
			}
			resp, err := next(ctx, attemptReq)
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
			wait, ok := retry.NextWait(policy, err)
			if !ok {
				return m.giveUp(ctx, attempt, err)
			}
			if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) <= wait {
				// The next attempt could not start before the deadline.
				return m.giveUp(ctx, attempt, err)
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
	m.emit(ctx, Event{Kind: EventGiveUp, Attempt: attempts, Err: err})
	rerr := &retry.Error{Attempts: attempts, Err: err}
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

// sleepContext waits d, or until ctx is done, whichever comes first.
func sleepContext(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// streamWatch holds the caller's streaming functions, so that each attempt
// can count the chunks it delivers to them.
type streamWatch struct {
	text      func(ctx context.Context, chunk []byte) error
	reasoning func(ctx context.Context, reasoningChunk, chunk []byte) error
}

// watchStream returns nil when the request streams nothing to the caller.
func watchStream(req *Request) *streamWatch {
	o := req.CallOptions()
	if o.StreamingFunc == nil && o.StreamingReasoningFunc == nil {
		return nil
	}
	return &streamWatch{text: o.StreamingFunc, reasoning: o.StreamingReasoningFunc}
}

// options returns a copy of opts followed by streaming functions that count
// the non-empty chunks of one attempt and forward them to the caller's.
func (w *streamWatch) options(opts []llms.CallOption) ([]llms.CallOption, *atomic.Int64) {
	chunks := new(atomic.Int64)
	out := make([]llms.CallOption, len(opts), len(opts)+2)
	copy(out, opts)
	if f := w.text; f != nil {
		out = append(out, llms.WithStreamingFunc(func(ctx context.Context, chunk []byte) error {
			if len(chunk) > 0 {
				chunks.Add(1)
			}
			return f(ctx, chunk)
		}))
	}
	if f := w.reasoning; f != nil {
		out = append(out, llms.WithStreamingReasoningFunc(func(ctx context.Context, reasoningChunk, chunk []byte) error {
			if len(reasoningChunk) > 0 || len(chunk) > 0 {
				chunks.Add(1)
			}
			return f(ctx, reasoningChunk, chunk)
		}))
	}
	return out, chunks
}
