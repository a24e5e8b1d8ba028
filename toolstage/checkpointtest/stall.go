package checkpointtest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/toolguard/toolguard/toolstage"
)

// Option configures [Run].
type Option func(*config)

type config struct {
	stall *stall // nil: no WithStall
}

// deadlineSlack is how long past its context's deadline [WithStall]'s
// checks let a call into a stalled store return: generous, for loaded test
// machines; a store that watches its context returns within microseconds.
const deadlineSlack = time.Second

// stall is a way to stall a store's backend: see [WithStall].
type stall struct {
	freeze func(t *testing.T) (thaw func())
	d      time.Duration
}

// WithStall lets [Run] hold the store to its promises when its backend
// stalls — hangs, keeping its connections and answering nothing, as a
// redis-server stopped with SIGSTOP does — and then wakes up. freeze
// stalls the backend of the stores newCheckpointer returns until the
// function it returns is called. stallFor is how long a stall must last
// for the store's client to give up waiting for a reply and send the
// command again, without running out of retries (for go-redis: longer
// than ReadTimeout, shorter than MaxRetries+1 of them; 450 ms for a
// ReadTimeout of 300 ms).
//
// Run then checks, one at a time:
//
//   - StallSave: a Save in flight across a stall of stallFor, with no
//     other save made, reports its own write as saved — never as a
//     conflict — or fails; Load then reads back what was stored, and the
//     thread goes on from there;
//   - Deadline: with the backend stalled until they return, Load and Save
//     with a 300 ms and a 500 ms deadline return within the deadline plus
//     a second (generous, for loaded test machines), with an error
//     wrapping context.DeadlineExceeded (each timing is logged); once the
//     backend is back, Load reads either the state before the failed Save
//     or the one it saved, and the thread goes on from there.
//
// Without WithStall these checks are skipped (an in-process store has no
// backend to stall). WithStall panics if freeze is nil or stallFor is not
// positive.
func WithStall(freeze func(t *testing.T) (thaw func()), stallFor time.Duration) Option {
	if freeze == nil || stallFor <= 0 {
		panic(fmt.Sprintf("checkpointtest: WithStall(%p, %v): want a freeze function and a positive duration", freeze, stallFor))
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
func runStallChecks(t *testing.T, st *stall, newCheckpointer func(t *testing.T) toolstage.Checkpointer) {
	t.Helper()
	checks := []struct {
		name string
		run  func(t *testing.T, st *stall, cp toolstage.Checkpointer)
	}{
		{"StallSave", stallSave},
		{"Deadline", deadline},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			if st == nil {
				t.Skip("no WithStall: the store is not checked under a stall of its backend")
			}
			c.run(t, st, newCheckpointer(t))
		})
	}
}

// afterFailedSave checks thread once a Save of next from version 1 (state
// prev) failed: Load reads prev at 1 or next at 2, and a Save from the
// version it read succeeds, unless the failed save's late copy lands
// first, which Load then shows.
func afterFailedSave(t *testing.T, cp toolstage.Checkpointer, thread, prev, next string) {
	t.Helper()
	state, v := loadAfterStall(t, cp, thread)
	if !(v == 1 && string(state) == prev) && !(v == 2 && string(state) == next) {
		t.Fatalf("Load after a failed Save(1, %q) = %q, %d; want %q, 1 or %q, 2", next, state, v, prev, next)
	}
	if save(t, cp, thread, v, []byte("after")) {
		return
	}
	if state, again := load(t, cp, thread); again != 2 || string(state) != next || v != 1 {
		t.Fatalf("Save(%d) after the failed save = false, and Load = %q, %d; want the thread to go on from what Load read", v, state, again)
	}
	if !save(t, cp, thread, 2, []byte("after")) {
		t.Fatal("Save(2) once the failed save's copy landed = false, want true")
	}
}

// loadAfterStall is load for a backend that was just thawed: a backend
// waking from a stall may still time out the first reads (its client's
// own timeouts, a backlog of requests), so an error is tried again for up
// to a minute.
func loadAfterStall(t *testing.T, cp toolstage.Checkpointer, thread string) ([]byte, int64) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		state, v, err := cp.Load(context.Background(), thread)
		if err == nil {
			return state, v
		}
		if time.Now().After(deadline) {
			t.Fatalf("Load(%q) a minute after the stall: %v", thread, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// stallSave: a Save in flight across a stall, the only save made, never
// reports a conflict.
func stallSave(t *testing.T, st *stall, cp toolstage.Checkpointer) {
	const thread = "stall-save"
	if !save(t, cp, thread, 0, []byte("v1")) {
		t.Fatal("Save(0) of a new thread = false, want true")
	}
	var (
		saved bool
		err   error
	)
	st.across(t, func() { saved, err = cp.Save(context.Background(), thread, 1, []byte("v2")) })
	state, v := loadAfterStall(t, cp, thread)
	t.Logf("Save(1) across a stall of %v = %v, %v; Load after: %q, version %d", st.d, saved, err, state, v)
	switch {
	case err != nil:
		afterFailedSave(t, cp, thread, "v1", "v2")
	case !saved:
		t.Errorf("Save(1) across a stall = false, but no other save was made (Load: %q, version %d): a false conflict", state, v)
	case string(state) != "v2" || v != 2:
		t.Errorf("Load after Save(1) across a stall = %q, %d; want \"v2\", 2", state, v)
	}
}

// deadline: with the backend stalled until they return, Load and Save
// return by their deadline; once it is back, the thread is consistent.
func deadline(t *testing.T, st *stall, cp toolstage.Checkpointer) {
	for _, d := range []time.Duration{300 * time.Millisecond, 500 * time.Millisecond} {
		for _, op := range []string{"load", "save"} {
			t.Run(fmt.Sprintf("%s/%v", op, d), func(t *testing.T) {
				thread := fmt.Sprintf("deadline-%s-%v", op, d)
				if !save(t, cp, thread, 0, []byte("v1")) {
					t.Fatal("Save(0) of a new thread = false, want true")
				}
				thaw := st.frozen(t)
				start := time.Now()
				ctx, cancel := context.WithTimeout(context.Background(), d)
				var err error
				if op == "load" {
					_, _, err = cp.Load(ctx, thread)
				} else {
					_, err = cp.Save(ctx, thread, 1, []byte("v2"))
				}
				took := time.Since(start)
				cancel()
				thaw()
				t.Logf("%s with %v deadline returned after %v: %v", op, d, took.Round(time.Millisecond), err)
				if took > d+deadlineSlack {
					t.Errorf("%s with a %v deadline returned after %v with its backend stalled, want within %v",
						op, d, took.Round(time.Millisecond), d+deadlineSlack)
				}
				if err != nil && !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("%s with its backend stalled past its deadline: error = %v, want one wrapping context.DeadlineExceeded", op, err)
				}
				switch {
				case op == "save" && err != nil:
					afterFailedSave(t, cp, thread, "v1", "v2")
				case op == "save":
					if state, v := loadAfterStall(t, cp, thread); string(state) != "v2" || v != 2 {
						t.Errorf("Load after Save(1) succeeded = %q, %d; want \"v2\", 2", state, v)
					}
				default:
					if state, v := loadAfterStall(t, cp, thread); string(state) != "v1" || v != 1 {
						t.Errorf("Load after the stall = %q, %d; want \"v1\", 1", state, v)
					}
				}
			})
		}
	}
}
