package redisstore

import "context"

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
