package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/toolguard/toolguard/agent"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/middleware/fakemodel"
	"github.com/toolguard/toolguard/toolstage"
)

// Pending returns the interrupt Run returned, signed; it resumes like it.
// Without an unfinished run, or a checkpointer, or a thread, it says so.
func TestPending(t *testing.T) {
	t.Parallel()
	var b bank
	cp := new(toolstage.MemoryCheckpointer)
	model := fakemodel.New(
		fakemodel.ToolCalls(fakemodel.Call("get_balance", `{}`), fakemodel.Call("transfer_money", `{"to":"alice","amount":25}`)),
		fakemodel.Text("Sent."),
	)
	key := []byte("0123456789abcdef")
	a := agent.New(model, toolstage.New(b.tools(), toolstage.WithApprovalFor("transfer_money"), toolstage.WithInterruptKey(key)), agent.WithCheckpointer(cp))
	ctx := guard.WithThread(context.Background(), "pending")
	if _, err := a.Pending(ctx); !errors.Is(err, agent.ErrNothingToResume) {
		t.Errorf("Pending() of a new thread: error = %v, want ErrNothingToResume", err)
	}
	_, err := a.Run(ctx, "pay alice")
	in := interruptOf(t, err)
	got, err := a.Pending(ctx)
	if err != nil {
		t.Fatalf("Pending() error = %v", err)
	}
	ran, _ := json.Marshal(in)
	read, _ := json.Marshal(got)
	if string(ran) != string(read) {
		t.Errorf("Pending() = %s\nwant Run's interrupt %s", read, ran)
	}
	if _, err := agent.New(model, toolstage.New(b.tools(), toolstage.WithApprovalFor("transfer_money"), toolstage.WithInterruptKey([]byte("another key, 16b"))), agent.WithCheckpointer(cp)).Resume(ctx, got, decide(got.Pending[0], toolstage.Accept, "")); !errors.Is(err, toolstage.ErrInterruptRefused) {
		t.Errorf("Resume() of Pending's interrupt under another key: error = %v, want ErrInterruptRefused (it is signed)", err)
	}
	res, err := a.Resume(ctx, got, decide(got.Pending[0], toolstage.Accept, ""))
	if err != nil || res.Output != "Sent." || b.count("transfer_money") != 1 || b.count("get_balance") != 1 {
		t.Fatalf("Resume(Pending()) = %q, %v; transfer_money ran %d, get_balance %d; want Sent., nil, 1, 1", res.Output, err, b.count("transfer_money"), b.count("get_balance"))
	}
	if _, err := a.Pending(ctx); !errors.Is(err, agent.ErrNothingToResume) {
		t.Errorf("Pending() of a finished thread: error = %v, want ErrNothingToResume", err)
	}
	if _, err := agent.New(model, toolstage.New(b.tools(), toolstage.WithApprovalFor("transfer_money"))).Pending(ctx); !errors.Is(err, agent.ErrNothingToResume) {
		t.Errorf("Pending() without a checkpointer: error = %v, want ErrNothingToResume", err)
	}
	if _, err := a.Pending(context.Background()); !errors.Is(err, agent.ErrNothingToResume) {
		t.Errorf("Pending() without a thread: error = %v, want ErrNothingToResume", err)
	}
}

// Abandon of a run cut off while the payment ran: the model is told the
// payment's outcome is unknown (never that it did not run), and the next
// Run continues the thread.
//
// The payment returns only once Run has returned, so the run always sees
// its context end first; TestToolReturningAfterCancelIsCutOff plays the
// other order, the payment's return seen first.
func TestAbandonCutOffRun(t *testing.T) {
	t.Parallel()
	cp := new(toolstage.MemoryCheckpointer)
	ctx, cancel := context.WithCancel(guard.WithThread(context.Background(), "abandon"))
	defer cancel()
	var payments atomic.Int32
	release := make(chan struct{})
	pay := toolstage.NewSchemaTool("transfer_money", "Pay.", nil, func(ctx context.Context, _ map[string]any) (string, error) {
		payments.Add(1)
		cancel()
		<-release // the bank's reply never comes
		return "", ctx.Err()
	})
	model := fakemodel.New(fakemodel.ToolCalls(fakemodel.Call("transfer_money", `{}`)), fakemodel.Text("I will check the payment first."))
	a := agent.New(model, toolstage.New([]toolstage.Tool{pay}), agent.WithCheckpointer(cp))
	_, err := a.Run(ctx, "pay")
	close(release)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run() error = %v, want context.Canceled", err)
	}
	thread := guard.WithThread(context.Background(), "abandon")
	res, err := a.Abandon(thread)
	if err != nil {
		t.Fatalf("Abandon() error = %v", err)
	}
	if len(res.Steps) != 1 || !errors.Is(res.Steps[0].Err, toolstage.ErrCallInterrupted) || res.Steps[0].Message != 1 {
		t.Errorf("Abandon() steps = %+v, want the payment with ErrCallInterrupted, recorded at message 1", res.Steps)
	}
	if _, err := a.Abandon(thread); !errors.Is(err, agent.ErrNothingToResume) {
		t.Errorf("a second Abandon(): error = %v, want ErrNothingToResume", err)
	}
	if _, err := a.Resume(thread, nil); !errors.Is(err, agent.ErrNothingToResume) {
		t.Errorf("Resume(nil) after Abandon: error = %v, want ErrNothingToResume", err)
	}
	if _, err := a.Run(thread, "did it go through?"); err != nil {
		t.Fatalf("Run() after Abandon: error = %v", err)
	}
	reqs := model.Requests()
	want := []string{"human: pay", "ai: call_1 transfer_money({})",
		"tool: call_1 transfer_money -> The run stopped while this call was running, so whether it took effect is unknown. Check before calling it again.",
		"human: did it go through?"}
	diffLines(t, "the model's request after Abandon", render(reqs[len(reqs)-1].Messages), want)
	if payments.Load() != 1 {
		t.Errorf("transfer_money ran %d times, want 1", payments.Load())
	}
}
