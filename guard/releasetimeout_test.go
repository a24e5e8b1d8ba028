package guard_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/toolguard/toolguard/guard"
)

// hungStore reserves in memory but hangs on Release, as a store whose
// server froze after the reservation does: Release returns only when its
// context is done (or the test ends). It records the context of each
// Release.
type hungStore struct {
	*guard.MemoryThreadStore
	stop chan struct{} // closed when the test ends

	mu       sync.Mutex
	releases []releaseCall
}

type releaseCall struct {
	deadline    time.Duration // from the call to its ctx's deadline; 0: none
	doneAtEntry error         // ctx.Err() when Release was called
	returned    error         // what it returned
}

func newHungStore(t *testing.T) *hungStore {
	s := &hungStore{MemoryThreadStore: guard.NewMemoryThreadStore(10), stop: make(chan struct{})}
	t.Cleanup(func() { close(s.stop) })
	return s
}

func (s *hungStore) Release(ctx context.Context, key guard.ThreadKey, n int) error {
	c := releaseCall{doneAtEntry: ctx.Err()}
	if d, ok := ctx.Deadline(); ok {
		c.deadline = time.Until(d)
	}
	select {
	case <-ctx.Done():
		c.returned = ctx.Err()
	case <-s.stop:
		c.returned = errors.New("still hung when the test ended")
	}
	s.mu.Lock()
	s.releases = append(s.releases, c)
	s.mu.Unlock()
	return c.returned
}

// check fails t unless exactly one Release was made, on a context the
// caller's cancellation did not end, with a deadline at most
// ReleaseTimeout away, which ended it.
func (s *hungStore) check(t *testing.T) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.releases) != 1 {
		t.Fatalf("%d releases, want 1", len(s.releases))
	}
	c := s.releases[0]
	if c.doneAtEntry != nil {
		t.Errorf("Release's ctx was done when it was called (%v): the caller's cancellation must not stop the release", c.doneAtEntry)
	}
	if c.deadline <= 0 || c.deadline > guard.ReleaseTimeout {
		t.Errorf("Release's ctx deadline was %v away, want within (0, ReleaseTimeout=%v]", c.deadline, guard.ReleaseTimeout)
	}
	if !errors.Is(c.returned, context.DeadlineExceeded) {
		t.Errorf("the hung Release returned %v, want its own deadline", c.returned)
	}
}

// returnsWithin runs call and fails t if it has not returned after a
// minute: a guard against waiting on a hung store forever, not a
// measurement.
func returnsWithin(t *testing.T, call func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); call() }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("the model call has not returned after a minute: the release waits on a hung store without a deadline")
	}
}

// A model call cancelled by its caller fails; ModelCallLimit releases its
// reservation on a context of its own, which a hung store cannot hold past
// ReleaseTimeout.
func TestModelCallLimitReleaseIsBounded(t *testing.T) {
	t.Parallel()
	store := newHungStore(t)
	ctx, cancel := context.WithCancel(guard.WithThread(context.Background(), "hung"))
	model := newScript(func(ctx context.Context, _ *script, _ *tReq) (*tResp, error) {
		cancel() // the caller gives up while the model runs
		return nil, ctx.Err()
	})
	llm := wrap(model, modelCallLimit(guard.WithThreadLimit(5), guard.WithThreadStore(store)))
	var err error
	returnsWithin(t, func() {
		_, err = llm(ctx, &tReq{Msgs: []msg{{Role: roleUser, Text: "hi"}}})
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("call error = %v, want context.Canceled", err)
	}
	store.check(t)
}

// An outer ToolCallLimit blocks a response an inner one counted in a hung
// store: the inner reservation is released on a context of its own,
// bounded by ReleaseTimeout.
func TestToolCallLimitRollbackIsBounded(t *testing.T) {
	t.Parallel()
	store := newHungStore(t)
	model := newScript(limCalls("search", "search"))
	llm := wrap(model,
		toolCallLimit(guard.WithRunLimit(1), guard.WithExitBehavior(guard.ExitError)),
		toolCallLimit(guard.WithThreadLimit(5), guard.WithThreadStore(store)),
	)
	var err error
	returnsWithin(t, func() {
		_, err = llm(guard.WithThread(context.Background(), "hung"),
			&tReq{Msgs: []msg{{Role: roleUser, Text: "search twice"}}})
	})
	var le *guard.LimitExceededError
	if !errors.As(err, &le) || le.Scope != guard.ScopeRun {
		t.Errorf("call error = %v, want the run limit exceeded", err)
	}
	store.check(t)
}
