package guard

import (
	"context"
	"sync"
)

// counter is a count a limiter reserves calls in: a run's, or a
// [ThreadStore]'s.
type counter interface {
	reserve(ctx context.Context, key ThreadKey, n, limit int) (count int, ok bool, err error)
	release(ctx context.Context, key ThreadKey, n int) error
	// same reports whether c is this count, so that stacked limiters can
	// tell that an inner one already reserved the same calls in it.
	same(c counter) bool
}

// limitCallKey is the context key of the *limitCall of a model call.
type limitCallKey struct{}

// limitCall is the state that the [ToolCallLimit] layers of one model call
// share, created by the outermost of them.
//
// Its ledger lists the reservations made for the response on its way out.
// Each layer notes the ledger's length before it calls next; when it blocks
// the response, it releases everything reserved since (the inner layers'
// reservations included), so that blocked calls never count. Reservations
// still held when the outermost layer returns are the calls that left.
type limitCall struct {
	// read reads the transcript of the outermost layer's request, once,
	// when a layer first needs it (see transcript): an inner layer's
	// request also holds the replays of re-asks, calls that never ran.
	read func() []Message
	once sync.Once
	msgs []Message

	mu   sync.Mutex
	held []reservation
}

// transcript returns the transcript of the outermost layer's request.
func (c *limitCall) transcript() []Message {
	c.once.Do(func() { c.msgs = c.read() })
	return c.msgs
}

type reservation struct {
	c         counter
	key       ThreadKey
	n, before int
}

func callFrom(ctx context.Context) *limitCall {
	c, _ := ctx.Value(limitCallKey{}).(*limitCall)
	return c
}

func (c *limitCall) mark() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.held)
}

// reserve reserves n calls of key in ctr, unless a layer inside this one
// already reserved them for the same response (since mark), in which case
// it only checks them against limit.
func (c *limitCall) reserve(ctx context.Context, mark int, ctr counter, key ThreadKey, n, limit int) (int, bool, error) {
	c.mu.Lock()
	for _, r := range c.held[min(mark, len(c.held)):] {
		if r.key == key && r.c.same(ctr) {
			c.mu.Unlock()
			return r.before, r.before+n <= limit, nil
		}
	}
	c.mu.Unlock()

	before, ok, err := ctr.reserve(ctx, key, n, limit)
	if err != nil || !ok {
		return before, false, err
	}
	c.mu.Lock()
	c.held = append(c.held, reservation{c: ctr, key: key, n: n, before: before})
	c.mu.Unlock()
	return before, true, nil
}

// rollback releases the reservations made since mark, newest first.
func (c *limitCall) rollback(ctx context.Context, mark int) {
	c.mu.Lock()
	if mark >= len(c.held) {
		c.mu.Unlock()
		return
	}
	undo := append([]reservation(nil), c.held[mark:]...)
	c.held = c.held[:mark]
	c.mu.Unlock()

	ctx, cancel := releaseContext(ctx)
	defer cancel()
	for i := len(undo) - 1; i >= 0; i-- {
		r := undo[i]
		_ = r.c.release(ctx, r.key, r.n) // see ThreadStore.Release
	}
}
