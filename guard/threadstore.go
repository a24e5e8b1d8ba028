package guard

import (
	"container/list"
	"context"
	"fmt"
	"reflect"
	"sync"
	"time"
)

// ThreadKey names one count of a [ThreadStore]: what Kind counts made in
// Thread (the id given to [WithThread]): the calls of Tool, or of every tool
// when Tool is "", for [ToolCallLimit]; the model calls ([CountModelCalls],
// Tool "") for [ModelCallLimit]. Keys of different kinds never share a count,
// so both limiters may use one store. Limiters of one kind with the same tool
// name that share a store share its key, and so its count; that is sound,
// because every limiter counts exactly the calls that left the model node
// (or, for model calls, reached the model).
type ThreadKey struct {
	Thread string
	Tool   string
	Kind   CountKind
}

// CountKind names what a [ThreadKey] counts. A store that lays keys out as
// strings must keep kinds apart: "" and "model" never name the same count.
type CountKind string

const (
	// CountToolCalls ("", the zero value) counts tool calls ([ToolCallLimit]).
	CountToolCalls CountKind = ""
	// CountModelCalls counts model calls ([ModelCallLimit]).
	CountModelCalls CountKind = "model"
)

// ThreadStore keeps the thread counts of [ToolCallLimit] and [ModelCallLimit]. The default is a
// [MemoryThreadStore] of [DefaultThreadStoreCapacity] keys per limiter; a
// deployment whose replicas serve the same threads plugs in a shared store
// (a Redis or SQL counter) with [WithThreadStore].
//
// Implementations must be safe for concurrent use, and Reserve must be
// atomic: two concurrent runs of one thread must not both pass a limit of 1.
// Under faults, each Reserve and Release must take effect at most once,
// however often the store's client sends it (a retry after a read timed
// out on a stalled server), and return by ctx's deadline; a Reserve that
// returned an error must leave nothing counted once the backend answers
// again. Package storetest checks an implementation against this
// contract: call storetest.Run from its tests, with storetest.WithStall
// for a store with a backend that can stall.
//
// Stacked limiters that share a store count each call once: a limiter
// recognises a store an inner one already counted a response in when the
// two store values are equal (==), as two pointers to one store are. A store
// whose value cannot be compared (a struct holding a map, say) is never
// recognised, so each limiter stacked on it counts the call again.
type ThreadStore interface {
	// Reserve adds n to the count of key if the result is at most limit,
	// in one atomic step, and reports the count before the call and
	// whether n was added. A missing key counts 0. An error makes the
	// model call fail with a *[StoreError] wrapping it: a limiter that
	// cannot count does not let calls out (unless [WithStoreFailOpen]).
	Reserve(ctx context.Context, key ThreadKey, n, limit int) (count int, ok bool, err error)
	// Release subtracts n from the count of key (never below 0): calls it
	// reserved did not leave the model node after all, because an outer
	// limiter blocked them or a later middleware failed. Its ctx is not
	// the caller's: it is not cancelled when the caller's is, and its
	// deadline is [ReleaseTimeout] after the release began, even when the
	// caller's deadline has passed (a model call that failed at its
	// deadline still releases its count). Release should return by that
	// deadline. An error is ignored: the count stays too high, which errs
	// on the side of blocking.
	Release(ctx context.Context, key ThreadKey, n int) error
}

// ReleaseTimeout bounds how long a limiter waits for [ThreadStore.Release]
// of calls that did not go out ([ModelCallLimit] after a failed model
// call, [ToolCallLimit] after an outer limiter blocked the response): the
// release runs on a context of its own, not cancelled with the caller's,
// whose deadline is ReleaseTimeout after the release began. So a model
// call returns at most ReleaseTimeout past its own deadline (or past its
// failure), however long a store hangs; a store that cannot answer in
// time leaves its count too high, which errs on the side of blocking.
const ReleaseTimeout = 250 * time.Millisecond

// releaseContext returns the context of a release made for the call of
// ctx: ctx's values, no cancellation, a deadline ReleaseTimeout from now.
func releaseContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), ReleaseTimeout)
}

// storeCounter adapts a [ThreadStore] to the counter interface.
type storeCounter struct{ s ThreadStore }

func (c storeCounter) reserve(ctx context.Context, key ThreadKey, n, limit int) (int, bool, error) {
	return c.s.Reserve(ctx, key, n, limit)
}

func (c storeCounter) release(ctx context.Context, key ThreadKey, n int) error {
	return c.s.Release(ctx, key, n)
}

// same reports whether c counts in the same store as this one: equal
// store values of a comparable type (see [ThreadStore]).
func (c storeCounter) same(other counter) bool {
	o, ok := other.(storeCounter)
	if !ok {
		return false
	}
	a, b := reflect.ValueOf(c.s), reflect.ValueOf(o.s)
	return a.Type() == b.Type() && a.Comparable() && a.Equal(b)
}

// DefaultThreadStoreCapacity is the capacity of the [MemoryThreadStore] a
// [ToolCallLimit] uses when [WithThreadStore] is not given.
const DefaultThreadStoreCapacity = 10000

// MemoryThreadStore is an in-process [ThreadStore] bounded by the number of
// keys (thread and tool) it remembers: when a new key would exceed its
// capacity, the least recently used key is forgotten, and that thread's
// count restarts from 0 if it comes back. Keep the capacity above the number
// of threads active at once (a key costs about 100 bytes plus its strings).
// A count that falls to 0 is forgotten at once.
//
// The zero value is an empty store of [DefaultThreadStoreCapacity] keys. A
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

// NewMemoryThreadStore returns an empty [MemoryThreadStore] that remembers at
// most capacity keys. It panics if capacity is less than 1.
func NewMemoryThreadStore(capacity int) *MemoryThreadStore {
	if capacity < 1 {
		panic(fmt.Sprintf("guard: NewMemoryThreadStore(%d): the capacity must be at least 1", capacity))
	}
	return &MemoryThreadStore{capacity: capacity, keys: make(map[ThreadKey]*list.Element)}
}

// Reserve implements [ThreadStore]. It never fails.
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

// Release implements [ThreadStore]. It never fails; releasing a forgotten key
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
