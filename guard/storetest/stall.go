package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/toolguard/toolguard/guard"
)

// deadlineSlack is how long past its context's deadline [WithStall]'s
// checks let a call into a stalled store return: generous, for loaded test
// machines; a store that watches its context returns within microseconds.
const deadlineSlack = time.Second

// settleTime is how long, once a stall is over, the checks wait for the
// outcome of a call that failed during it to settle (a reservation the
// store takes back, a release it finishes).
const settleTime = 10 * time.Second

// stall is a way to stall a store's backend: see [WithStall].
type stall struct {
	freeze func(t *testing.T) (thaw func())
	d      time.Duration
}

// WithStall lets [Run] hold the store to its promises when its backend
// stalls — hangs, keeping its connections and answering nothing, as a
// redis-server stopped with SIGSTOP does — and then wakes up. freeze
// stalls the backend of the stores newStore returns until the function it
// returns is called. stallFor is how long a stall must last for the
// store's client to give up waiting for a reply and send the command
// again, without running out of retries (for go-redis: longer than
// ReadTimeout, shorter than MaxRetries+1 of them; 450 ms for a ReadTimeout
// of 300 ms).
//
// Run then checks, one check at a time and while no other check of Run
// runs (a stall stops the whole backend):
//
//   - StallReserve: a Reserve in flight across a stall of stallFor adds its
//     calls once, or fails and, once the backend is back, adds none;
//   - StallRelease: a Release in flight across the stall subtracts once;
//   - Deadline: with the backend stalled until they return, Reserve and
//     Release with a 300 ms and a 500 ms deadline return within the
//     deadline plus a second (generous, for loaded test machines), with
//     an error wrapping
//     context.DeadlineExceeded (each timing is logged); once the backend
//     is back, the failed Reserve leaves no count (within 10 s), and the
//     failed Release has subtracted once or not at all.
//
// Without WithStall these checks are skipped (an in-process store has no
// backend to stall). WithStall panics if freeze is nil or stallFor is not
// positive.
func WithStall(freeze func(t *testing.T) (thaw func()), stallFor time.Duration) Option {
	if freeze == nil || stallFor <= 0 {
		panic(fmt.Sprintf("storetest: WithStall(%p, %v): want a freeze function and a positive duration", freeze, stallFor))
	}
	return func(c *config) { c.stall = &stall{freeze: freeze, d: stallFor} }
}

// frozen stalls the backend and returns the function that ends the stall,
// which may be called any number of times; the test's cleanup calls it.
func (st *stall) frozen(t *testing.T) (thaw func()) {
	t.Helper()
	end := st.freeze(t)
	var once sync.Once
	thaw = func() { once.Do(end) }
	t.Cleanup(thaw)
	return thaw
}

// across runs call while the backend stalls for st.d from just before it
// starts, and returns once call has returned and the stall is over.
func (st *stall) across(t *testing.T, call func()) {
	t.Helper()
	thaw := st.frozen(t)
	timer := time.AfterFunc(st.d, thaw)
	defer timer.Stop()
	call()
	thaw()
}

// runStallChecks runs WithStall's checks, one at a time.
func runStallChecks(t *testing.T, st *stall, newStore func(t *testing.T) guard.ThreadStore) {
	t.Helper()
	checks := []struct {
		name string
		run  func(t *testing.T, st *stall, s guard.ThreadStore)
	}{
		{"StallReserve", stallReserve},
		{"StallRelease", stallRelease},
		{"Deadline", deadline},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			if st == nil {
				t.Skip("no WithStall: the store is not checked under a stall of its backend")
			}
			c.run(t, st, newStore(t))
		})
	}
}

// settles waits until the count of key is want, for at most settleTime,
// and returns the count it last read.
func settles(t *testing.T, s guard.ThreadStore, key guard.ThreadKey, want int) int {
	t.Helper()
	deadline := time.Now().Add(settleTime)
	for {
		got := countAfterStall(t, s, key)
		if got == want || time.Now().After(deadline) {
			return got
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// countAfterStall is count for a backend that was just thawed: a backend
// waking from a stall may still time out the first reads (its client's
// own timeouts, a backlog of requests), so an error is tried again until
// settleTime has passed.
func countAfterStall(t *testing.T, s guard.ThreadStore, key guard.ThreadKey) int {
	t.Helper()
	deadline := time.Now().Add(settleTime)
	for {
		n, ok, err := s.Reserve(context.Background(), key, 0, maxLimit)
		if err == nil && ok {
			return n
		}
		if time.Now().After(deadline) {
			t.Fatalf("Reserve(%+v, 0, %d) = %d, %v, %v %v after the stall; want the count, true, nil", key, maxLimit, n, ok, err, settleTime)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// stallReserve: a Reserve in flight across a stall adds its calls once.
// The limit is high, so a second run would add them again.
func stallReserve(t *testing.T, st *stall, s guard.ThreadStore) {
	key := guard.ThreadKey{Thread: "stall-reserve"}
	reserve(t, s, key, 2, 10, 0, true)
	var (
		before int
		ok     bool
		err    error
	)
	st.across(t, func() { before, ok, err = s.Reserve(context.Background(), key, 1, 10) })
	t.Logf("Reserve(1) from 2 across a stall of %v = %d, %v, %v", st.d, before, ok, err)
	if err != nil {
		if got := settles(t, s, key, 2); got != 2 {
			t.Errorf("count = %d %v after a Reserve(1) from 2 that failed across a stall (%v), want 2: a failed reservation must not count",
				got, settleTime, err)
		}
		return
	}
	if before != 2 || !ok {
		t.Errorf("Reserve(1) from 2 across a stall = %d, %v; want 2, true", before, ok)
	}
	if got := countAfterStall(t, s, key); got != 3 {
		t.Errorf("count = %d after one Reserve(1) from 2 across a stall, want 3", got)
	}
}

// stallRelease: a Release in flight across a stall subtracts once.
func stallRelease(t *testing.T, st *stall, s guard.ThreadStore) {
	key := guard.ThreadKey{Thread: "stall-release", Kind: guard.CountModelCalls}
	reserve(t, s, key, 4, 10, 0, true)
	var err error
	st.across(t, func() { err = s.Release(context.Background(), key, 1) })
	t.Logf("Release(1) from 4 across a stall of %v = %v", st.d, err)
	if err != nil {
		if got := settles(t, s, key, 3); got != 3 && got != 4 {
			t.Errorf("count = %d after a Release(1) from 4 that failed across a stall (%v), want 3, or 4 if the release was lost", got, err)
		}
		return
	}
	if got := countAfterStall(t, s, key); got != 3 {
		t.Errorf("count = %d after one Release(1) from 4 across a stall, want 3", got)
	}
}

// deadline: with the backend stalled until they return, Reserve and
// Release return by their deadline; once it is back, what they did is
// consistent with their errors.
func deadline(t *testing.T, st *stall, s guard.ThreadStore) {
	for _, d := range []time.Duration{300 * time.Millisecond, 500 * time.Millisecond} {
		for _, op := range []string{"reserve", "release"} {
			t.Run(fmt.Sprintf("%s/%v", op, d), func(t *testing.T) {
				key := guard.ThreadKey{Thread: fmt.Sprintf("deadline-%s-%v", op, d)}
				reserve(t, s, key, 2, 10, 0, true)
				thaw := st.frozen(t)
				start := time.Now()
				ctx, cancel := context.WithTimeout(context.Background(), d)
				var err error
				if op == "reserve" {
					_, _, err = s.Reserve(ctx, key, 1, 10)
				} else {
					err = s.Release(ctx, key, 1)
				}
				took := time.Since(start)
				cancel()
				thaw()
				t.Logf("%s with %v deadline returned after %v: %v", op, d, took.Round(time.Millisecond), err)
				if took > d+deadlineSlack {
					t.Errorf("%s with a %v deadline returned after %v with its backend stalled, want within %v",
						op, d, took.Round(time.Millisecond), d+deadlineSlack)
				}
				switch {
				case err != nil && !errors.Is(err, context.DeadlineExceeded):
					t.Errorf("%s with its backend stalled past its deadline: error = %v, want one wrapping context.DeadlineExceeded", op, err)
				case op == "reserve" && err != nil:
					if got := settles(t, s, key, 2); got != 2 {
						t.Errorf("count = %d %v after a Reserve(1) from 2 failed at its deadline, want 2: a failed reservation must not count", got, settleTime)
					}
				case op == "reserve":
					if got := countAfterStall(t, s, key); got != 3 {
						t.Errorf("count = %d after Reserve(1) from 2 succeeded, want 3", got)
					}
				case err != nil: // release
					if got := settles(t, s, key, 1); got != 1 && got != 2 {
						t.Errorf("count = %d after a Release(1) from 2 failed at its deadline, want 1, or 2 if the release was lost", got)
					}
				default:
					if got := countAfterStall(t, s, key); got != 1 {
						t.Errorf("count = %d after Release(1) from 2 succeeded, want 1", got)
					}
				}
			})
		}
	}
}
