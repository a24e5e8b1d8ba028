// Package storetest checks that a [guard.ThreadStore] keeps its
// contract, in the spirit of testing/slogtest: the author of a store (a
// Redis, SQL or etcd counter) calls [Run] from a test, and every check runs
// as a subtest against a fresh store.
//
//	func TestStore(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) guard.ThreadStore {
//			return mystore.New(newClient(t), mystore.WithPrefix(t.Name()+":"))
//		}, storetest.WithUnreachable(func(t *testing.T) guard.ThreadStore {
//			return mystore.New(clientOfAClosedPort(t))
//		}))
//	}
//
// The checks: Reserve adds only within the limit and reports the count
// before; it is atomic under concurrency (of 64 concurrent reservations
// against a limit of 10, exactly 10 pass, each seeing a different count);
// Release never takes a count below 0, and releasing a key never reserved
// is no error; keys that differ in thread, tool or kind never share a
// count, even when their parts contain the separators a store might join
// them with; with [WithUnreachable], a store that cannot reach its
// backend reports errors rather than counts; and, with [WithStall], a
// store whose backend stalls and wakes runs each command once and returns
// by its caller's deadline:
//
//	storetest.WithStall(func(t *testing.T) (thaw func()) {
//		srv.Freeze() // SIGSTOP
//		return func() { srv.Thaw() }
//	}, 450*time.Millisecond) // the client's ReadTimeout is 300 ms
package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/toolguard/toolguard/guard"
)

// Option configures [Run].
type Option func(*config)

type config struct {
	unreachable func(t *testing.T) guard.ThreadStore
	stall       *stall // nil: no WithStall
}

// WithUnreachable gives [Run] a way to make a store whose backend cannot be
// reached (a client of a closed port, a stopped server): Run then checks
// that its Reserve returns an error and never lets calls pass, and that its
// Release returns an error. Without it that check is skipped (an in-process
// store that never fails has nothing to report).
func WithUnreachable(newStore func(t *testing.T) guard.ThreadStore) Option {
	return func(c *config) { c.unreachable = newStore }
}

// Run checks the stores newStore returns against the [guard.ThreadStore]
// contract, each check a subtest with a store of its own: in parallel,
// except [WithStall]'s, which run one at a time before the others start.
// newStore must return an empty store, or one whose keys start empty (a
// prefix of the test's name, say); it may call t.Cleanup. A failure names
// the key, the call and what the contract wants.
func Run(t *testing.T, newStore func(t *testing.T) guard.ThreadStore, opts ...Option) {
	t.Helper()
	var cfg config
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	checks := []struct {
		name string
		run  func(t *testing.T, s guard.ThreadStore)
	}{
		{"ReserveWithinLimit", reserveWithinLimit},
		{"AtomicUnderConcurrency", atomicUnderConcurrency},
		{"ReleaseNeverBelowZero", releaseNeverBelowZero},
		{"ReleaseUnderConcurrency", releaseUnderConcurrency},
		{"KeysIsolated", keysIsolated},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(t, newStore(t))
		})
	}
	t.Run("ErrorsSurfaced", func(t *testing.T) {
		if cfg.unreachable == nil {
			t.Skip("no WithUnreachable: the store's failures are not checked")
		}
		t.Parallel()
		errorsSurfaced(t, cfg.unreachable(t))
	})
	// The parallel checks above wait for Run's caller to return; these run
	// now, alone on the backend they stall.
	runStallChecks(t, cfg.stall, newStore)
}

// maxLimit reads a count with Reserve(key, 0, maxLimit), which never adds.
const maxLimit = 1 << 30

func count(t *testing.T, s guard.ThreadStore, key guard.ThreadKey) int {
	t.Helper()
	n, ok, err := s.Reserve(context.Background(), key, 0, maxLimit)
	if err != nil || !ok {
		t.Fatalf("Reserve(%+v, 0, %d) = %d, %v, %v; want the count, true, nil", key, maxLimit, n, ok, err)
	}
	return n
}

func reserve(t *testing.T, s guard.ThreadStore, key guard.ThreadKey, n, limit, wantCount int, wantOK bool) {
	t.Helper()
	got, ok, err := s.Reserve(context.Background(), key, n, limit)
	if err != nil || got != wantCount || ok != wantOK {
		t.Errorf("Reserve(%+v, %d, %d) = %d, %v, %v; want %d, %v, nil", key, n, limit, got, ok, err, wantCount, wantOK)
	}
}

func release(t *testing.T, s guard.ThreadStore, key guard.ThreadKey, n int) {
	t.Helper()
	if err := s.Release(context.Background(), key, n); err != nil {
		t.Errorf("Release(%+v, %d) = %v, want nil", key, n, err)
	}
}

// reserveWithinLimit: a missing key counts 0; n is added only when the sum
// stays within the limit; the count before is reported either way.
func reserveWithinLimit(t *testing.T, s guard.ThreadStore) {
	key := guard.ThreadKey{Thread: "reserve"}
	reserve(t, s, key, 0, 3, 0, true)
	reserve(t, s, key, 2, 3, 0, true)
	reserve(t, s, key, 2, 3, 2, false) // 4 > 3: refused, nothing added
	reserve(t, s, key, 1, 3, 2, true)  // exactly the limit
	reserve(t, s, key, 1, 3, 3, false)
	reserve(t, s, key, 1, 4, 3, true) // a higher limit for the same key
	if got := count(t, s, key); got != 4 {
		t.Errorf("count = %d after reserving 2, 1 and 1, want 4", got)
	}
}

// atomicUnderConcurrency: concurrent reservations never pass a limit
// together, and each that passes sees a different count before it.
func atomicUnderConcurrency(t *testing.T, s guard.ThreadStore) {
	const callers, limit = 64, 10
	key := guard.ThreadKey{Thread: "concurrent", Tool: "search"}
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		seen   = map[int]bool{}
		passed int
		errs   []error
	)
	start := make(chan struct{})
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			n, ok, err := s.Reserve(context.Background(), key, 1, limit)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				errs = append(errs, err)
			case ok:
				passed++
				if seen[n] {
					errs = append(errs, fmt.Errorf("two reservations passed seeing count %d", n))
				}
				seen[n] = true
			}
		}()
	}
	close(start)
	wg.Wait()
	for _, err := range errs {
		t.Error(err)
	}
	if passed != limit {
		t.Errorf("%d of %d concurrent Reserve(%+v, 1, %d) passed, want exactly %d", passed, callers, key, limit, limit)
	}
	if got := count(t, s, key); got != limit {
		t.Errorf("count = %d after %d concurrent reservations against %d, want %d", got, callers, limit, limit)
	}
}

// releaseNeverBelowZero: releasing more than was reserved leaves 0, so the
// key's full limit is available again; releasing a key never reserved is
// no error and leaves it at 0.
func releaseNeverBelowZero(t *testing.T, s guard.ThreadStore) {
	key := guard.ThreadKey{Thread: "release", Kind: guard.CountModelCalls}
	reserve(t, s, key, 2, 5, 0, true)
	release(t, s, key, 1)
	if got := count(t, s, key); got != 1 {
		t.Errorf("count = %d after reserving 2 and releasing 1, want 1", got)
	}
	release(t, s, key, 5)
	if got := count(t, s, key); got != 0 {
		t.Errorf("count = %d after releasing more than was reserved, want 0", got)
	}
	reserve(t, s, key, 5, 5, 0, true) // not -4 + 5
	reserve(t, s, key, 1, 5, 5, false)

	never := guard.ThreadKey{Thread: "never-reserved"}
	release(t, s, never, 3)
	if got := count(t, s, never); got != 0 {
		t.Errorf("count = %d after releasing a key never reserved, want 0", got)
	}
}

// releaseUnderConcurrency: concurrent reserve-and-release pairs leave the
// count where it started.
func releaseUnderConcurrency(t *testing.T, s guard.ThreadStore) {
	const callers = 32
	key := guard.ThreadKey{Thread: "pairs"}
	reserve(t, s, key, 1, 1, 0, true)
	var wg sync.WaitGroup
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, ok, err := s.Reserve(context.Background(), key, 2, maxLimit); err != nil || !ok {
				t.Errorf("Reserve(%+v, 2, %d) = %v, %v; want true, nil", key, maxLimit, ok, err)
				return
			}
			if err := s.Release(context.Background(), key, 2); err != nil {
				t.Errorf("Release(%+v, 2) = %v", key, err)
			}
		}()
	}
	wg.Wait()
	if got := count(t, s, key); got != 1 {
		t.Errorf("count = %d after %d concurrent reserve-release pairs on a count of 1, want 1", got, callers)
	}
}

// keysIsolated: keys that differ in thread, tool or kind have counts of
// their own, including keys whose parts hold the separators and brackets
// a store may join them with.
func keysIsolated(t *testing.T, s guard.ThreadStore) {
	keys := []guard.ThreadKey{
		{Thread: "a"},
		{Thread: "a", Tool: "search"},
		{Thread: "a", Kind: guard.CountModelCalls},
		{Thread: "a", Tool: "model"},
		{Thread: "b"},
		{Thread: "b", Tool: "search"},
		{Thread: "a:tool:search"},
		{Thread: "a", Tool: ":search"},
		{Thread: "a}:tool:{x"},
		{Thread: "{a}"},
		{Thread: "a%7D"},
		{Thread: ""},
		{Thread: "", Kind: "custom"},
		{Thread: "a", Kind: "tool"},
	}
	for i, k := range keys {
		reserve(t, s, k, i+1, maxLimit, 0, true)
	}
	for i, k := range keys {
		if got := count(t, s, k); got != i+1 {
			t.Errorf("count of %+v = %d, want %d: it shares a count with another key", k, got, i+1)
		}
	}
	release(t, s, keys[0], maxLimit)
	for i, k := range keys[1:] {
		if got := count(t, s, k); got != i+2 {
			t.Errorf("count of %+v = %d after releasing %+v, want %d", k, got, keys[0], i+2)
		}
	}
}

// errorsSurfaced: a store that cannot reach its backend says so; it never
// reports a reservation it could not make.
func errorsSurfaced(t *testing.T, s guard.ThreadStore) {
	key := guard.ThreadKey{Thread: "unreachable"}
	if n, ok, err := s.Reserve(context.Background(), key, 1, 10); err == nil || ok {
		t.Errorf("Reserve on an unreachable store = %d, %v, %v; want an error and false", n, ok, err)
	}
	if err := s.Release(context.Background(), key, 1); err == nil {
		t.Errorf("Release on an unreachable store = nil, want an error")
	}
}
