package retry

import (
	"time"

	"github.com/cenkalti/backoff/v4"
)

// The default backoff policy, LangChain's ModelRetryMiddleware defaults.
const (
	DefaultInitialDelay = time.Second      // wait after the first failure
	DefaultMultiplier   = 2.0              // growth of the wait per attempt
	DefaultMaxDelay     = 60 * time.Second // no wait is longer
	DefaultJitter       = 0.25             // each wait is randomised by ±25%
)

// NewExponentialBackOff returns a fresh *backoff.ExponentialBackOff set to
// the defaults: waits of about 1s, 2s, 4s, 8s, … up to [DefaultMaxDelay], each
// randomised by ±[DefaultJitter], and no limit on the total time
// (MaxElapsedTime 0: the number of attempts and the caller's deadline bound
// it). Change its fields before first use to tune it:
//
//	guard.WithBackOff(func() backoff.BackOff {
//		b := retry.NewExponentialBackOff()
//		b.InitialInterval = 250 * time.Millisecond
//		return b
//	})
func NewExponentialBackOff() *backoff.ExponentialBackOff {
	return backoff.NewExponentialBackOff(
		backoff.WithInitialInterval(DefaultInitialDelay),
		backoff.WithMultiplier(DefaultMultiplier),
		backoff.WithMaxInterval(DefaultMaxDelay),
		backoff.WithRandomizationFactor(DefaultJitter),
		backoff.WithMaxElapsedTime(0),
	)
}

// DefaultBackOff is the default backoff factory: it returns
// NewExponentialBackOff(). A BackOff is stateful and not safe for concurrent
// use, so a retry loop calls the factory once per logical call rather than
// sharing one BackOff.
func DefaultBackOff() backoff.BackOff { return NewExponentialBackOff() }

// NextWait returns how long to wait before retrying after err, and false
// when b says to stop (backoff.Stop).
//
// The wait is b.NextBackOff(), raised to the server's hint ([After]) when the
// hint is longer, and never longer than b's maximum delay: MaxInterval for
// an *backoff.ExponentialBackOff (which also trims the jitter above it, so
// the default policy never waits more than 60s), [DefaultMaxDelay] for any
// other policy. The maximum delay only limits how far a hint raises the
// wait; a custom policy's own waits are used as they are.
func NextWait(b backoff.BackOff, err error) (time.Duration, bool) {
	d := b.NextBackOff()
	if d == backoff.Stop {
		return 0, false
	}
	limit := DefaultMaxDelay
	if eb, ok := b.(*backoff.ExponentialBackOff); ok && eb.MaxInterval > 0 {
		limit = eb.MaxInterval
		d = min(d, limit)
	}
	if hint, ok := After(err); ok && hint > d {
		d = max(d, min(hint, limit))
	}
	return max(d, 0), true
}
