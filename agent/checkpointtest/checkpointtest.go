// Package checkpointtest tests an implementation of [toolstage.Checkpointer],
// as testing/slogtest tests a slog.Handler: a store's author calls [Run]
// from a test with a function that returns an empty store.
//
//	func TestCheckpointer(t *testing.T) {
//		checkpointtest.Run(t, func(t *testing.T) toolstage.Checkpointer {
//			return mystore.New(...) // empty, private to t
//		})
//	}
//
// It checks the contract (versions, compare-and-set, copies, concurrent
// saves) and then the use an agent makes of it: a run cut off between a
// tool batch and the next model call, and again while it waits for
// approval, is finished by new Agent values on the same store, and each
// tool runs exactly once. With [WithStall], it checks the store when its
// backend stalls and wakes: a save retried by the client never reports a
// conflict with itself, and every call returns by its caller's deadline.
package checkpointtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/agent"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/middleware/fakemodel"
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
	t.Run("ResumeAfterCrash", func(t *testing.T) {
		counts := ResumeAfterCrash(t, newCheckpointer(t))
		t.Logf("calls run per tool across the crashes: %s", counts)
	})
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

// Counts is how many times each tool ran.
type Counts map[string]int

// String lists the counts by tool, sorted: "a=1 b=2".
func (c Counts) String() string {
	names := make([]string, 0, len(c))
	for n := range c {
		names = append(names, n)
	}
	slices.Sort(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s=%d", n, c[n])
	}
	return strings.Join(parts, " ")
}

// crashing cancels the run's context right after its n-th save: the
// process "dies" at that point, with the state saved.
type crashing struct {
	toolstage.Checkpointer
	mu     sync.Mutex
	saves  int
	n      int
	cancel context.CancelFunc
}

func (c *crashing) Save(ctx context.Context, thread string, version int64, state []byte) (bool, error) {
	ok, err := c.Checkpointer.Save(ctx, thread, version, state)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.saves++
	if c.saves == c.n && c.cancel != nil {
		c.cancel()
	}
	return ok, err
}

// ResumeAfterCrash runs a three-turn conversation on cp through four Agent
// values, as four processes would: the first is cut off between its first
// tool batch and the next model call (its context is cancelled right after
// the batch is saved); the second resumes it from the store and pauses for
// approval of a transfer; the third takes the decision from the interrupt
// as a client sent it back (JSON) and finishes the run; the fourth's
// attempt to resume it again is refused. It fails the test unless every
// tool ran exactly once, and returns how many times each ran.
func ResumeAfterCrash(t *testing.T, cp toolstage.Checkpointer) Counts {
	t.Helper()
	var mu sync.Mutex
	counts := Counts{}
	tool := func(name, result string) toolstage.Tool {
		return toolstage.NewSchemaTool(name, "A tool that counts its runs.", map[string]any{"type": "object"},
			func(context.Context, map[string]any) (string, error) {
				mu.Lock()
				defer mu.Unlock()
				counts[name]++
				return result, nil
			})
	}
	tools := []toolstage.Tool{tool("get_balance", "1000.00"), tool("get_rate", "1.08"), tool("transfer_money", "sent"), tool("send_receipt", "mailed")}
	model := fakemodel.New( // the provider, outliving the processes
		fakemodel.ToolCalls(fakemodel.Call("get_balance", `{}`), fakemodel.Call("get_rate", `{}`)),
		fakemodel.ToolCalls(fakemodel.Call("transfer_money", `{"to":"alice","amount":25}`)),
		fakemodel.ToolCalls(fakemodel.Call("send_receipt", `{}`)),
		fakemodel.Text("Sent 25 to alice; receipt mailed."),
	)
	process := func(c toolstage.Checkpointer) *agent.Agent {
		return agent.New(model, toolstage.New(tools, toolstage.WithApprovalFor("transfer_money")), agent.WithCheckpointer(c))
	}
	thread := guard.WithThread(context.Background(), "checkpointtest-crash")

	// Process 1 dies after saving its first batch (saves: the turn, then
	// the batch).
	ctx, cancel := context.WithCancel(thread)
	defer cancel()
	crash := &crashing{Checkpointer: cp, n: 2, cancel: cancel}
	_, err := process(crash).Run(ctx, "pay alice 25 and mail me a receipt")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("process 1: Run() error = %v, want context.Canceled", err)
	}
	if _, err := process(cp).Run(thread, "hello?"); !errors.Is(err, agent.ErrRunUnfinished) {
		t.Errorf("a new Run on the cut-off thread: error = %v, want ErrRunUnfinished", err)
	}

	// Process 2 resumes from the store: the next model call, then the
	// transfer waits for approval.
	_, err = process(cp).Resume(thread, nil)
	var in *toolstage.Interrupt
	if !errors.As(err, &in) || len(in.Pending) != 1 {
		t.Fatalf("process 2: Resume(nil) error = %v, want an *Interrupt with the transfer", err)
	}
	if len(in.State) != 0 {
		t.Errorf("with a checkpointer the interrupt carries %d bytes of state, want none (the store has it)", len(in.State))
	}
	raw, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}

	// Process 3 gets the interrupt back from the client, with the decision.
	var back toolstage.Interrupt
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	p := back.Pending[0]
	res, err := process(cp).Resume(thread, &back, toolstage.Decision{CallID: p.ID, Action: toolstage.Accept, Digest: p.Digest})
	if err != nil {
		t.Fatalf("process 3: Resume() error = %v", err)
	}
	if res.Output != "Sent 25 to alice; receipt mailed." {
		t.Errorf("process 3: Output = %q", res.Output)
	}

	// Process 4 replays the same decision: refused, nothing runs.
	if _, err := process(cp).Resume(thread, &back, toolstage.Decision{CallID: p.ID, Action: toolstage.Accept, Digest: p.Digest}); !errors.Is(err, toolstage.ErrInterruptRefused) {
		t.Errorf("process 4: replayed Resume() error = %v, want ErrInterruptRefused", err)
	}

	// The model's second request carries the first batch's results: the
	// conversation went on where process 1 stopped.
	reqs := model.Requests()
	if len(reqs) != 4 {
		t.Fatalf("the model was called %d times, want 4 (one per turn)", len(reqs))
	}
	var results []string
	for _, m := range reqs[1].Messages {
		for _, part := range m.Parts {
			if r, ok := part.(llms.ToolCallResponse); ok {
				results = append(results, r.Name+"="+r.Content)
			}
		}
	}
	if !slices.Equal(results, []string{"get_balance=1000.00", "get_rate=1.08"}) {
		t.Errorf("the model's second request held the tool results %q, want the first batch's", results)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, name := range []string{"get_balance", "get_rate", "transfer_money", "send_receipt"} {
		if counts[name] != 1 {
			t.Errorf("%s ran %d times, want exactly 1", name, counts[name])
		}
	}
	return maps.Clone(counts)
}
