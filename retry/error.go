package retry

import (
	"errors"
	"fmt"
	"time"
)

// Error is returned by a retry loop that stopped without a result: the last
// attempt failed with an error that is not retryable, the retries or the
// backoff policy ran out, the caller's deadline would pass during the next
// wait, or the caller's context ended.
//
// Unwrap returns the last attempt's error, so errors.Is and errors.As reach
// it. When the caller's context ended the loop, ContextErr holds the
// context's error and errors.Is matches it too: errors.Is(err,
// context.Canceled) holds after a cancellation even though the last attempt
// failed with, say, a 503.
type Error struct {
	// Attempts is the number of attempts made, at least 1.
	Attempts int
	// Err is the last attempt's error. It is never nil.
	Err error
	// ContextErr is ctx.Err() of the caller's context when that context
	// ended the loop (during a wait, or by failing the last attempt); nil
	// otherwise.
	ContextErr error
	// Wait is set when the loop gave up because the next attempt could not
	// start before the caller's deadline: it is the wait the next attempt
	// needed, and Left the time that was left before the deadline. Hinted
	// reports that the provider asked for the wait (Retry-After, "try again
	// in"), not the backoff. The error's text says so.
	Wait, Left time.Duration
	Hinted     bool
}

// Error returns "retry: failed after N attempts: <last error>", with the
// context's error first when the context ended the loop, and the wait and
// the time left when the deadline was too near for the next attempt.
func (e *Error) Error() string {
	attempts := "attempts"
	if e.Attempts == 1 {
		attempts = "attempt"
	}
	if e.ContextErr != nil && !errors.Is(e.Err, e.ContextErr) {
		return fmt.Sprintf("retry: %v after %d %s; last error: %v", e.ContextErr, e.Attempts, attempts, e.Err)
	}
	if e.Wait > 0 {
		who := "the backoff"
		if e.Hinted {
			who = "the provider"
		}
		return fmt.Sprintf("retry: gave up after %d %s: %s asked to wait %v, longer than the %v left before the context's deadline; last error: %v",
			e.Attempts, attempts, who, e.Wait, e.Left.Round(time.Millisecond), e.Err)
	}
	return fmt.Sprintf("retry: failed after %d %s: %v", e.Attempts, attempts, e.Err)
}

// Unwrap returns the last attempt's error.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target matches ContextErr, so that a cancellation or an
// expired deadline of the caller's context is recognised with errors.Is.
// errors.Is goes on to the last attempt's error through Unwrap.
func (e *Error) Is(target error) bool {
	return e.ContextErr != nil && errors.Is(e.ContextErr, target)
}
