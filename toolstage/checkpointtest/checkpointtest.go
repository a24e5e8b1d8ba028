// Package checkpointtest tests an implementation of [toolstage.Checkpointer],
// as testing/slogtest tests a slog.Handler: a store's author calls [Run],
// and [RunFaults], from a test with a function that returns an empty store.
//
//	func TestCheckpointer(t *testing.T) {
//		newStore := func(t *testing.T) toolstage.Checkpointer {
//			return mystore.New(...) // empty, private to t
//		}
//		checkpointtest.Run(t, newStore)
//		checkpointtest.RunFaults(t, newStore)
//	}
//
// Run checks the contract (versions, compare-and-set, copies, concurrent
// saves) and then the use a [toolstage.Stage] makes of it
// ([toolstage.WithCheckpointer]): an interrupt paused by one Stage value is
// resumed by another, as by another process, from the state in the store;
// its calls run exactly once; a replay is refused; of several resumes of
// one interrupt at the same time exactly one runs it. With [WithStall], it
// checks the store when its backend stalls and wakes: a save retried by
// the client never reports a conflict with itself, and every call returns
// by its caller's deadline. RunFaults wraps the store in faults — a save
// that fails, one applied whose reply is lost — at each of the Stage's
// reads and writes, and checks that a call that ran is never forgotten and
// an approved call never runs twice.
//
// It imports toolstage and guard, never langchaingo. toolguard's agent,
// which keeps its threads in the same stores, runs its own scenarios over
// them in its tests.
package checkpointtest

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/toolguard/toolguard/toolstage"
)

// Run runs the conformance tests against the stores newCheckpointer
// returns: each subtest asks for a new, empty store (one that does not
// share threads with another test's store). Subtests do not run in
// parallel with each other. opts add checks ([WithStall]).
func Run(t *testing.T, newCheckpointer func(t *testing.T) toolstage.Checkpointer, opts ...Option) {
	t.Helper()
	var cfg config
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	t.Run("Versions", func(t *testing.T) { testVersions(t, newCheckpointer(t)) })
	t.Run("Threads", func(t *testing.T) { testThreads(t, newCheckpointer(t)) })
	t.Run("Copies", func(t *testing.T) { testCopies(t, newCheckpointer(t)) })
	t.Run("ConcurrentSaves", func(t *testing.T) { testConcurrentSaves(t, newCheckpointer(t)) })
	t.Run("ResumeElsewhere", func(t *testing.T) { testResumeElsewhere(t, newCheckpointer(t)) })
	t.Run("ConcurrentResumes", func(t *testing.T) { testConcurrentResumes(t, newCheckpointer(t)) })
	runStallChecks(t, cfg.stall, newCheckpointer)
}

func load(t *testing.T, cp toolstage.Checkpointer, thread string) ([]byte, int64) {
	t.Helper()
	state, v, err := cp.Load(context.Background(), thread)
	if err != nil {
		t.Fatalf("Load(%q) error = %v", thread, err)
	}
	return state, v
}

func save(t *testing.T, cp toolstage.Checkpointer, thread string, version int64, state []byte) bool {
	t.Helper()
	ok, err := cp.Save(context.Background(), thread, version, state)
	if err != nil {
		t.Fatalf("Save(%q, %d) error = %v", thread, version, err)
	}
	return ok
}

func testVersions(t *testing.T, cp toolstage.Checkpointer) {
	if state, v := load(t, cp, "t1"); state != nil || v != 0 {
		t.Fatalf("Load of a new thread = %q, %d; want nil, 0", state, v)
	}
	if !save(t, cp, "t1", 0, []byte(`{"a":1}`)) {
		t.Fatal("Save(version 0) of a new thread = false, want true")
	}
	if state, v := load(t, cp, "t1"); string(state) != `{"a":1}` || v != 1 {
		t.Fatalf("Load after one save = %q, %d; want {\"a\":1}, 1", state, v)
	}
	for _, stale := range []int64{0, 2, 7} {
		if save(t, cp, "t1", stale, []byte(`{"stale":true}`)) {
			t.Errorf("Save(version %d) when the thread is at 1 = true, want false", stale)
		}
	}
	if !save(t, cp, "t1", 1, []byte(`{"a":2}`)) {
		t.Fatal("Save(version 1) = false, want true")
	}
	if state, v := load(t, cp, "t1"); string(state) != `{"a":2}` || v != 2 {
		t.Fatalf("Load after two saves = %q, %d; want {\"a\":2}, 2", state, v)
	}
	big := bytes.Repeat([]byte("x\x00\xff"), 1<<19) // 1.5 MiB, with bytes that are not UTF-8
	if !save(t, cp, "t1", 2, big) {
		t.Fatal("Save of 1.5 MiB = false, want true")
	}
	if state, v := load(t, cp, "t1"); !bytes.Equal(state, big) || v != 3 {
		t.Fatalf("Load of 1.5 MiB: %d bytes (equal %v), version %d; want the same bytes, 3", len(state), bytes.Equal(state, big), v)
	}
}

func testThreads(t *testing.T, cp toolstage.Checkpointer) {
	threads := []string{"chat-42", "chat-4", "a:b", "{tag}", "x}:y{", "100%", "ünïcödé", strings.Repeat("long", 300)}
	for i, th := range threads {
		if !save(t, cp, th, 0, []byte(fmt.Sprint(i))) {
			t.Fatalf("Save(%q, 0) = false, want true: threads must not share state", th)
		}
	}
	for i, th := range threads {
		if state, v := load(t, cp, th); string(state) != fmt.Sprint(i) || v != 1 {
			t.Errorf("Load(%q) = %q, %d; want %q, 1", th, state, v, fmt.Sprint(i))
		}
	}
}

func testCopies(t *testing.T, cp toolstage.Checkpointer) {
	in := []byte("original")
	if !save(t, cp, "c", 0, in) {
		t.Fatal("Save = false, want true")
	}
	copy(in, "CHANGED!")
	out, _ := load(t, cp, "c")
	if string(out) != "original" {
		t.Fatalf("Load = %q after the caller changed the saved slice, want \"original\"", out)
	}
	copy(out, "CHANGED!")
	if again, _ := load(t, cp, "c"); string(again) != "original" {
		t.Fatalf("Load = %q after the caller changed a loaded slice, want \"original\"", again)
	}
}

func testConcurrentSaves(t *testing.T, cp toolstage.Checkpointer) {
	const n = 16
	for round := range int64(3) {
		var wg sync.WaitGroup
		var mu sync.Mutex
		won := 0
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ok, err := cp.Save(context.Background(), "race", round, []byte(fmt.Sprint(round, i)))
				if err != nil {
					t.Errorf("Save error = %v", err)
				}
				if ok {
					mu.Lock()
					won++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if won != 1 {
			t.Fatalf("round %d: %d of %d concurrent saves from version %d succeeded, want exactly 1", round, won, n, round)
		}
		if _, v := load(t, cp, "race"); v != round+1 {
			t.Fatalf("round %d: version %d after the saves, want %d", round, v, round+1)
		}
	}
}
