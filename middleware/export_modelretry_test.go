package middleware

import (
	"context"
	"time"
)

// WithSleep replaces ModelRetry's wait (a timer raced against ctx.Done) so
// that tests never sleep for real. fn must honour ctx like the real wait.
func WithSleep(fn func(ctx context.Context, d time.Duration) error) RetryOption {
	return retryOption(func(c *retryConfig) { c.sleep = fn })
}
