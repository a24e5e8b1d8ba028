package checkpointtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/toolstage"
)

// The stage scenarios share one batch: get_balance runs at once and
// transfer_money waits for a person ([toolstage.WithApprovalFor]), on a
// Stage that keeps its interrupts in the store under test. Each Stage
// value stands for a process: they share the tools, the key and the
// store, nothing else.

// interruptKey signs the scenarios' interrupts, as a deployment's
// processes share one key.
var interruptKey = []byte("checkpointtest: the interrupts' key")

// Results of the scenarios' tools.
const (
	balanceResult = "1000.00"
	paymentResult = "paid 25 to alice (ref P-1)"
)

// batchCalls is the model turn of the scenarios.
func batchCalls() []guard.Call {
	return []guard.Call{
		{ID: "call_1", Name: "get_balance", Args: []byte(`{}`)},
		{ID: "call_2", Name: "transfer_money", Args: []byte(`{"to":"alice","amount":25}`)},
	}
}

// bank holds the scenarios' tools and counts their runs; the events of
// its stages go to t's log (a refusal would otherwise be logged at Warn).
// It is safe for concurrent use.
type bank struct {
	t    *testing.T
	mu   sync.Mutex
	runs map[string]int
}

func (b *bank) tool(name, result string) toolstage.Tool {
	return toolstage.NewSchemaTool(name, "A tool that counts its runs.", map[string]any{"type": "object"},
		func(context.Context, map[string]any) (string, error) {
			b.mu.Lock()
			defer b.mu.Unlock()
			if b.runs == nil {
				b.runs = make(map[string]int)
			}
			b.runs[name]++
			return result, nil
		})
}

// count returns how many times the tool name ran.
func (b *bank) count(name string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.runs[name]
}

// stage returns the Stage of one process of a scenario, its interrupts
// kept in cp.
func (b *bank) stage(cp toolstage.Checkpointer) *toolstage.Stage {
	return toolstage.New(
		[]toolstage.Tool{b.tool("get_balance", balanceResult), b.tool("transfer_money", paymentResult)},
		toolstage.WithApprovalFor("transfer_money"),
		toolstage.WithInterruptKey(interruptKey),
		toolstage.WithCheckpointer(cp),
		toolstage.WithEventHandler(func(_ context.Context, e guard.Event) {
			b.t.Logf("event %s: call %q, %v", e.Kind, e.CallID, e.Err)
		}),
	)
}

// pause runs the scenario's batch on a Stage over cp and checks that it
// paused with the transfer pending, its state in the store, get_balance's
// outcome returned. It returns the interrupt as a client sends it back
// (through JSON).
func pause(t *testing.T, ctx context.Context, b *bank, cp toolstage.Checkpointer) *toolstage.Interrupt {
	t.Helper()
	batch, err := b.stage(cp).Run(ctx, batchCalls())
	if err != nil {
		t.Fatalf("Run() error = %v, want the batch paused for the transfer", err)
	}
	in := batch.Interrupt
	if in == nil || len(in.Pending) != 1 || in.Pending[0].ID != "call_2" {
		t.Fatalf("Run() interrupt = %+v, want one pending call, call_2", in)
	}
	if len(in.State) != 0 {
		t.Errorf("with a Checkpointer the interrupt carries %d bytes of state, want none (the store has it)", len(in.State))
	}
	if got := outcomeIDs(batch); got != "call_1=1000.00" {
		t.Errorf("Run() outcomes = %s, want call_1=1000.00", got)
	}
	return travel(t, in)
}

// travel returns in as it comes back from a client: encoded to JSON and
// decoded.
func travel(t *testing.T, in *toolstage.Interrupt) *toolstage.Interrupt {
	t.Helper()
	raw, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var back toolstage.Interrupt
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	return &back
}

// accept returns the decision accepting every pending call of in.
func accept(in *toolstage.Interrupt) []toolstage.Decision {
	ds := make([]toolstage.Decision, len(in.Pending))
	for i, p := range in.Pending {
		ds[i] = toolstage.Decision{CallID: p.ID, Action: toolstage.Accept, Digest: p.Digest}
	}
	return ds
}

// outcomeIDs renders a batch's outcomes as "id=content", in order.
func outcomeIDs(b *toolstage.Batch) string {
	if b == nil {
		return "no batch"
	}
	s := ""
	for i, o := range b.Outcomes {
		if i > 0 {
			s += " "
		}
		s += fmt.Sprintf("%s=%s", o.Call.ID, o.Content)
	}
	return s
}

// resumed checks the batch of the resume that ran the transfer: both
// calls' outcomes, in call order, and each tool run exactly once.
func resumed(t *testing.T, b *bank, batch *toolstage.Batch, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("Resume() error = %v", err)
	}
	if got, want := outcomeIDs(batch), "call_1=1000.00 call_2="+paymentResult; got != want {
		t.Errorf("Resume() outcomes = %s, want %s (every call of the batch, in call order)", got, want)
	}
	ranOnce(t, b)
}

// ranOnce fails t unless each tool ran exactly once.
func ranOnce(t *testing.T, b *bank) {
	t.Helper()
	for _, name := range []string{"get_balance", "transfer_money"} {
		if n := b.count(name); n != 1 {
			t.Errorf("%s ran %d times, want exactly 1", name, n)
		}
	}
}

// testResumeElsewhere: a Stage pauses; a new Stage value, as another
// process, resumes the interrupt from the store and runs the transfer; a
// third one's replay is refused and runs nothing.
func testResumeElsewhere(t *testing.T, cp toolstage.Checkpointer) {
	b := bank{t: t}
	ctx := guard.WithThread(context.Background(), "checkpointtest-resume")
	in := pause(t, ctx, &b, cp)
	if n := b.count("transfer_money"); n != 0 {
		t.Fatalf("transfer_money ran %d times before a decision, want 0", n)
	}
	batch, err := b.stage(cp).Resume(ctx, in, accept(in)...)
	resumed(t, &b, batch, err)
	if _, err := b.stage(cp).Resume(ctx, travel(t, in), accept(in)...); !errors.Is(err, toolstage.ErrInterruptRefused) {
		t.Errorf("a replayed Resume() on a third Stage: error = %v, want ErrInterruptRefused", err)
	}
	ranOnce(t, &b)
}

// testConcurrentResumes: several Stage values resume one interrupt at the
// same time, each having read the unclaimed state before any claims it;
// the store's compare-and-set lets exactly one claim it.
func testConcurrentResumes(t *testing.T, cp toolstage.Checkpointer) {
	const n = 8
	b := bank{t: t}
	ctx := guard.WithThread(context.Background(), "checkpointtest-concurrent")
	in := pause(t, ctx, &b, cp)
	together := &barrier{Checkpointer: cp, n: n, all: make(chan struct{})}
	stages := make([]*toolstage.Stage, n)
	ins := make([]*toolstage.Interrupt, n)
	for i := range stages {
		stages[i], ins[i] = b.stage(together), travel(t, in)
	}
	type result struct {
		batch *toolstage.Batch
		err   error
	}
	results := make([]result, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			loaded := new(atomic.Bool)
			batch, err := stages[i].Resume(context.WithValue(ctx, loadedKey{}, loaded), ins[i], accept(ins[i])...)
			if !loaded.Load() {
				together.arrive() // it failed before reading the store
			}
			results[i] = result{batch, err}
		}()
	}
	close(start)
	wg.Wait()
	won := 0
	for i, r := range results {
		switch {
		case r.err == nil:
			won++
			resumed(t, &b, r.batch, nil)
		case !errors.Is(r.err, toolstage.ErrInterruptRefused):
			t.Errorf("resume %d: error = %v, want ErrInterruptRefused for every resume but one", i, r.err)
		}
	}
	if won != 1 {
		t.Errorf("%d of %d concurrent resumes of one interrupt ran it, want exactly 1", won, n)
	}
	ranOnce(t, &b)
}

// barrier holds the reply of the first Load of each of n resumes until
// all n have read, so that they all read the interrupt's state at one
// version before any of them saves its claim. A resume's context carries its
// marker (loadedKey); one that returns without a Load arrives then
// ([barrier.arrive]), so that no other waits for it for ever.
type barrier struct {
	toolstage.Checkpointer
	n       int32
	arrived atomic.Int32
	all     chan struct{} // closed when n have arrived
}

// loadedKey is the context key of a resume's marker: set at its first
// Load.
type loadedKey struct{}

func (b *barrier) arrive() {
	if b.arrived.Add(1) == b.n {
		close(b.all)
	}
}

// Load implements [toolstage.Checkpointer].
func (b *barrier) Load(ctx context.Context, thread string) ([]byte, int64, error) {
	state, version, err := b.Checkpointer.Load(ctx, thread)
	if loaded, ok := ctx.Value(loadedKey{}).(*atomic.Bool); ok && !loaded.Swap(true) {
		b.arrive()
		<-b.all // every resume has read the state: now they may claim it
	}
	return state, version, err
}
