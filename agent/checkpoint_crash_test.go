package agent_test

import (
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
