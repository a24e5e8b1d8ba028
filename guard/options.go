package guard

import (
	"context"
	"fmt"
)

// ValidationOption configures [ToolArgValidation].
type ValidationOption interface{ applyValidation(*validationConfig) }

// RetryOption configures [ModelRetry].
type RetryOption interface{ applyRetry(*retryConfig) }

// LimitOption configures [ToolCallLimit] and [ModelCallLimit].
type LimitOption interface{ applyLimit(*limitConfig) }

// Option is accepted by every built-in middleware.
type Option interface {
	ValidationOption
	RetryOption
	LimitOption
}

// WithMaxRetries sets how many times a middleware may call the model again
// after the first call: [ToolArgValidation] re-asks after invalid tool calls,
// [ModelRetry] retries after transient errors. The default is 2 for both, so at
// most 3 model calls per layer. n must not be negative; the constructor
// panics otherwise.
func WithMaxRetries(n int) RetriesOption {
	return maxRetriesOption(n)
}

// RetriesOption is the option both [ToolArgValidation] (its re-asks) and
// [ModelRetry] (its retries) take: [WithMaxRetries].
type RetriesOption interface {
	ValidationOption
	RetryOption
}

type maxRetriesOption int

func (o maxRetriesOption) check(who string) int {
	if o < 0 {
		panic(fmt.Sprintf("guard: %s: WithMaxRetries(%d): the number of retries must not be negative", who, int(o)))
	}
	return int(o)
}

func (o maxRetriesOption) applyValidation(c *validationConfig) {
	c.maxRetries = o.check("ToolArgValidation")
}

func (o maxRetriesOption) applyRetry(c *retryConfig) {
	c.maxRetries = o.check("ModelRetry")
}

// WithEventHandler sets a function that the middleware calls, on the
// caller's goroutine, for each notable thing it does (see [EventKind]),
// instead of the context's handler ([WithEvents]). It is called
// concurrently when the stack is used concurrently and must not block;
// [LogEvents] adapts a *slog.Logger. To see every middleware's events and
// an agent's tool stage's in one place, give the handler once, to the
// context ([WithEvents], or package agent's WithEventHandler), rather than
// to each middleware.
//
// Without any handler (the default, or a nil fn, and none in the
// context), the events that mean a protection did not hold are logged to
// [slog.Default] at Warn, so that failing open is never silent: an
// [EventGiveUp] of a ToolArgValidation that returns calls still invalid
// after its last re-ask, an [EventSchemaError] whose tool's calls then pass
// unvalidated, an [EventUnguarded] for a response that passes unread, an
// [EventStoreError] under [WithStoreFailOpen], and every
// [EventForgedArgument], [EventApprovalRefused] and [EventMisconfigured].
// With [WithFailClosed] the first three are errors the caller gets, and
// are not logged. The rest go nowhere. To silence them too, pass a handler
// that does nothing.
func WithEventHandler(fn func(ctx context.Context, e Event)) Option {
	return eventOption(fn)
}

type eventOption func(ctx context.Context, e Event)

func (o eventOption) applyValidation(c *validationConfig) { c.events = o }
func (o eventOption) applyRetry(c *retryConfig)           { c.events = o }
func (o eventOption) applyLimit(c *limitConfig)           { c.events = o }

// emit calls fn with e if fn is set.
func (o eventOption) emit(ctx context.Context, e Event) {
	if o != nil {
		o(ctx, e)
	}
}
