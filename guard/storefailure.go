package guard

import (
	"context"
	"fmt"
)

// StoreError reports a [ThreadStore] that failed to reserve calls: a
// counter that cannot be reached. By default the limiter fails the model
// call with it, so that nothing leaves unlimited; with [WithStoreFailOpen]
// the call passes instead. Either way it is reported in an
// [EventStoreError]. errors.Is and errors.As reach the store's error.
type StoreError struct {
	Middleware string    // "ToolCallLimit" or "ModelCallLimit"
	Key        ThreadKey // the count that could not be reserved
	Err        error     // the store's error
}

// Error says which limiter could not reach its store and why.
func (e *StoreError) Error() string {
	return fmt.Sprintf("guard: %s: thread store: %v", e.Middleware, e.Err)
}

// Unwrap returns the store's error.
func (e *StoreError) Unwrap() error { return e.Err }

// WithStoreFailOpen makes a limiter let calls through when its [ThreadStore]
// fails (the thread limit is then not enforced for that call, and the call
// is not counted in the thread), reporting each failure in an
// [EventStoreError]. The default is to fail the model call with a
// *[StoreError]: a limiter that cannot count lets nothing out. Run limits
// never depend on the store and hold either way.
func WithStoreFailOpen() LimitOption {
	return limitOption(func(c *limitConfig) { c.failOpen = true })
}

// storeFailed reports a store's error err for key and returns the error
// that fails the model call, or nil if the call may pass (fail open).
func (c *limitConfig) storeFailed(ctx context.Context, who string, key ThreadKey, err error) error {
	se := &StoreError{Middleware: who, Key: key, Err: err}
	e := Event{Kind: EventStoreError, Middleware: who, Tool: key.Tool, Err: se}
	if c.failOpen {
		reportLoud(ctx, c.events, e)
		return nil
	}
	report(ctx, c.events, e)
	return se
}
