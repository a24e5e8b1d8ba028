package redisstore

import (
	"context"
	"errors"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/redis/go-redis/v9"
)

// await runs call and returns what it returns or, as soon as ctx is done,
// ctx's error: call then goes on in its own goroutine, and its result is
// dropped. A context that can never be done waits for call.
func await[T any](ctx context.Context, call func() (T, error)) (T, error) {
	if ctx.Done() == nil {
		return call()
	}
	type result struct {
		v   T
		err error
	}
	results := make(chan result, 1)
	go func() {
		v, err := call()
		results <- result{v, err}
	}()
	select {
	case r := <-results:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// settleTimeout bounds what a call leaves running when its caller stops
// waiting, or when its outcome is unknown: a release going on, an
// abandoned reservation taken back.
const settleTimeout = time.Minute

// settle runs do in its own goroutine until it succeeds: on a context with
// ctx's values but not its cancellation, trying again after a growing
// pause (50 ms to 1 s) while it fails, for at most settleTimeout or until
// the client is closed. do must be a command that may run any number of
// times: one that carries its request's id. It is there for the attempts
// the client does not retry itself (go-redis gives up at once on a new
// connection whose handshake timed out, as it does on a frozen server).
func settle(ctx context.Context, do func(context.Context) error) {
	go func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
		defer cancel()
		b := backoff.NewExponentialBackOff(backoff.WithInitialInterval(50*time.Millisecond),
			backoff.WithMaxInterval(time.Second), backoff.WithMaxElapsedTime(0))
		_ = backoff.Retry(func() error {
			err := do(ctx)
			if errors.Is(err, redis.ErrClosed) {
				return backoff.Permanent(err)
			}
			return err
		}, backoff.WithContext(b, ctx))
	}()
}
