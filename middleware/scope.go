package middleware

import (
	"container/list"
	"context"
	"fmt"
	"sync"
)

// runKey and threadKey are the context keys of WithRun and WithThread.
type (
	runKey    struct{}
	threadKey struct{}
)

// WithRun returns a copy of ctx that starts a new run: one user turn of an
// agent, however many model calls it takes. Every ToolCallLimit that sees a
// context derived from it counts its run limit (WithRunLimit) against this
// run; calls made under different WithRun contexts never share a run count.
//
// Without a run in the context, ToolCallLimit reads the run from the
// transcript instead: the tool calls in AI messages after the last human
// message. That is what an agent loop that resends its whole transcript on
// each model call (langchaingo's agents.Executor) needs; an agent loop that
// trims or summarises its transcript should call WithRun.
//
// A WithRun inside a run (a sub-agent used as a tool, say) starts a run of
// its own: the sub-agent's calls do not count against its parent's run. The
// run's counts are safe for concurrent use by the model calls of one run.
func WithRun(ctx context.Context) context.Context {
	ctx = context.WithValue(ctx, runKey{}, &runScope{})
	// A new run is a new conversation for the limiters below it: they must
	// not mistake it for a re-ask of an enclosing model call.
	return context.WithValue(ctx, limitCallKey{}, (*limitCall)(nil))
}

// WithThread returns a copy of ctx that names the conversation thread id
// (a chat session, say) the calls made with it belong to. ToolCallLimit
// counts its thread limit (WithThreadLimit) per thread id in its ThreadStore,
// so the count holds across runs and, with a shared store, across replicas.
// An empty id means no thread: ToolCallLimit then counts the thread from the
// transcript, every tool call in the AI messages passed in.
func WithThread(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, threadKey{}, id)
}

func runFrom(ctx context.Context) *runScope {
	r, _ := ctx.Value(runKey{}).(*runScope)
	return r
}

func threadFrom(ctx context.Context) string {
	id, _ := ctx.Value(threadKey{}).(string)
	return id
}

// runScope holds the counts of one run, per tool filter ("" = all tools).
type runScope struct {
	mu     sync.Mutex
	counts map[string]int
}

func (r *runScope) reserve(_ context.Context, key ThreadKey, n, limit int) (int, bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	count := r.counts[key.Tool]
	if count+n > limit {
		return count, false, nil
	}
	if r.counts == nil {
		r.counts = make(map[string]int)
	}
	r.counts[key.Tool] = count + n
	return count, true, nil
}

func (r *runScope) release(_ context.Context, key ThreadKey, n int) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.counts != nil {
		r.counts[key.Tool] = max(r.counts[key.Tool]-n, 0)
	}
	return nil
}

func (r *runScope) holder() any { return r }

// ThreadKey names one count of a ThreadStore: the tool calls made in Thread
// (the id given to WithThread) of Tool, or of every tool when Tool is "".
// Limiters with the same tool name that share a store share its key, and so
// its count; that is sound, because every limiter counts exactly the calls
// that left the model node.
type ThreadKey struct {
	Thread string
	Tool   string
}

// ThreadStore keeps ToolCallLimit's thread counts. The default is a
// MemoryThreadStore of DefaultThreadStoreCapacity keys per limiter; a
// deployment whose replicas serve the same threads plugs in a shared store
// (a Redis or SQL counter) with WithThreadStore.
//
// Implementations must be safe for concurrent use, and Reserve must be
// atomic: two concurrent runs of one thread must not both pass a limit of 1.
// Implement it with a pointer receiver, so that stacked limiters sharing a
// store recognise it and count each call once.
type ThreadStore interface {
	// Reserve adds n to the count of key if the result is at most limit,
	// in one atomic step, and reports the count before the call and
	// whether n was added. A missing key counts 0. An error makes the
	// model call fail with it: a limiter that cannot count does not let
	// calls out.
	Reserve(ctx context.Context, key ThreadKey, n, limit int) (count int, ok bool, err error)
	// Release subtracts n from the count of key (never below 0): calls it
	// reserved did not leave the model node after all, because an outer
	// limiter blocked them or a later middleware failed. Its ctx is never
	// cancelled. An error is ignored: the count stays too high, which errs
	// on the side of blocking.
	Release(ctx context.Context, key ThreadKey, n int) error
}

// storeCounter adapts a ThreadStore to the counter interface.
type storeCounter struct{ s ThreadStore }

func (c storeCounter) reserve(ctx context.Context, key ThreadKey, n, limit int) (int, bool, error) {
	return c.s.Reserve(ctx, key, n, limit)
}

func (c storeCounter) release(ctx context.Context, key ThreadKey, n int) error {
	return c.s.Release(ctx, key, n)
}

func (c storeCounter) holder() any { return c.s }

// DefaultThreadStoreCapacity is the capacity of the MemoryThreadStore a
// ToolCallLimit uses when WithThreadStore is not given.
const DefaultThreadStoreCapacity = 10000

// MemoryThreadStore is an in-process ThreadStore bounded by the number of
// keys (thread and tool) it remembers: when a new key would exceed its
// capacity, the least recently used key is forgotten, and that thread's
// count restarts from 0 if it comes back. Keep the capacity above the number
// of threads active at once (a key costs about 100 bytes plus its strings).
// A count that falls to 0 is forgotten at once.
//
// The zero value is an empty store of DefaultThreadStoreCapacity keys. A
// MemoryThreadStore is safe for concurrent use and must not be copied after
// first use. Its counts live in one process: replicas serving the same
// threads need a shared ThreadStore.
type MemoryThreadStore struct {
	mu       sync.Mutex
	capacity int
	keys     map[ThreadKey]*list.Element // of *memoryCount
	lru      list.List                   // front: most recently used
}

type memoryCount struct {
	key   ThreadKey
	count int
}

// NewMemoryThreadStore returns an empty MemoryThreadStore that remembers at
// most capacity keys. It panics if capacity is less than 1.
func NewMemoryThreadStore(capacity int) *MemoryThreadStore {
	if capacity < 1 {
		panic(fmt.Sprintf("middleware: NewMemoryThreadStore(%d): the capacity must be at least 1", capacity))
	}
	return &MemoryThreadStore{capacity: capacity, keys: make(map[ThreadKey]*list.Element)}
}

// Reserve implements ThreadStore. It never fails.
func (s *MemoryThreadStore) Reserve(_ context.Context, key ThreadKey, n, limit int) (int, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.keys == nil {
		s.keys = make(map[ThreadKey]*list.Element)
	}
	if s.capacity == 0 {
		s.capacity = DefaultThreadStoreCapacity
	}
	e := s.keys[key]
	count := 0
	if e != nil {
		count = e.Value.(*memoryCount).count
	}
	if count+n > limit {
		return count, false, nil
	}
	if n <= 0 {
		return count, true, nil
	}
	if e == nil {
		s.keys[key] = s.lru.PushFront(&memoryCount{key: key, count: n})
		for s.lru.Len() > s.capacity {
			oldest := s.lru.Back()
			s.lru.Remove(oldest)
			delete(s.keys, oldest.Value.(*memoryCount).key)
		}
		return count, true, nil
	}
	e.Value.(*memoryCount).count += n
	s.lru.MoveToFront(e)
	return count, true, nil
}

// Release implements ThreadStore. It never fails; releasing a forgotten key
// does nothing.
func (s *MemoryThreadStore) Release(_ context.Context, key ThreadKey, n int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.keys[key]
	if e == nil {
		return nil
	}
	mc := e.Value.(*memoryCount)
	mc.count -= n
	if mc.count <= 0 {
		s.lru.Remove(e)
		delete(s.keys, key)
	}
	return nil
}

// Count returns the count of key: 0 if the store does not remember it.
func (s *MemoryThreadStore) Count(key ThreadKey) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.keys[key]; e != nil {
		return e.Value.(*memoryCount).count
	}
	return 0
}

// Len returns the number of keys the store remembers, at most its capacity.
func (s *MemoryThreadStore) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lru.Len()
}

// counter is a count a limiter reserves calls in: a run's, or a
// ThreadStore's.
type counter interface {
	reserve(ctx context.Context, key ThreadKey, n, limit int) (count int, ok bool, err error)
	release(ctx context.Context, key ThreadKey, n int) error
	// holder identifies the count's owner, so that stacked limiters can tell
	// that an inner one already reserved the same calls in it.
	holder() any
}

// limitCallKey is the context key of the *limitCall of a model call.
type limitCallKey struct{}

// limitCall is the state that the ToolCallLimit layers of one model call
// share, created by the outermost of them.
//
// Its ledger lists the reservations made for the response on its way out.
// Each layer notes the ledger's length before it calls next; when it blocks
// the response, it releases everything reserved since (the inner layers'
// reservations included), so that blocked calls never count. Reservations
// still held when the outermost layer returns are the calls that left.
type limitCall struct {
	// base is the number of messages of the outermost layer's request. The
	// messages after it are re-ask replays of calls that never ran, so
	// transcript counts stop there.
	base int

	mu   sync.Mutex
	held []reservation
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
		if r.key == key && sameHolder(r.c.holder(), ctr.holder()) {
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

	ctx = context.WithoutCancel(ctx)
	for i := len(undo) - 1; i >= 0; i-- {
		r := undo[i]
		_ = r.c.release(ctx, r.key, r.n) // see ThreadStore.Release
	}
}

// sameHolder reports whether a and b are the same counter owner. Owners of
// a type that cannot be compared are never the same.
func sameHolder(a, b any) (same bool) {
	defer func() {
		if recover() != nil {
			same = false
		}
	}()
	return a == b
}
