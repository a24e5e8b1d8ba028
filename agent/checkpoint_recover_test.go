package agent_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/agent"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/toolstage"
	"github.com/toolguard/toolguard/toolstage/checkpointtest"
)

// RunFaults runs the fault scenarios against the stores newCheckpointer
// returns, each on a new, empty store, and logs the payments each
// counted: a stop, a panic, a cancel, a failed save and a lost reply in
// the middle of a paying turn never make a thread forget the payment, and
// a thread whose interrupt's reply was lost is not wedged.
func RunFaults(t *testing.T, newCheckpointer func(t *testing.T) toolstage.Checkpointer) {
	t.Helper()
	for _, s := range []struct {
		name string
		run  func(*testing.T, toolstage.Checkpointer) int
	}{
		{"StopAfterPayment", StopAfterPayment},
		{"PanicAfterPayment", PanicAfterPayment},
		{"CancelAfterPayment", CancelAfterPayment},
		{"FailedInterruptSave", FailedInterruptSave},
		{"LostInterruptReply", LostInterruptReply},
		{"ConflictAfterOwnWrite", ConflictAfterOwnWrite},
		{"PendingAfterLostReply", PendingAfterLostReply},
		{"AbandonAfterLostReply", AbandonAfterLostReply},
	} {
		t.Run(s.name, func(t *testing.T) { s.run(t, newCheckpointer(t)) })
	}
}

// lostAndDown is the fault of the scenarios below: the interrupt's save
// (the run's second) is applied and its reply lost, and the store cannot
// be read again during the run (its first load opens the run; the next two
// are the run's attempts to find its own write), so the run cannot tell
// its interrupt was stored.
func lostAndDown() (saves, loads map[int]checkpointtest.Fault) {
	return map[int]checkpointtest.Fault{2: checkpointtest.LoseReply}, map[int]checkpointtest.Fault{2: checkpointtest.Fail, 3: checkpointtest.Fail}
}

// wedged runs the paying turn with notify_manager awaiting approval on cp
// under lostAndDown, and checks that the run returned an error, not its
// interrupt. It returns the process constructor, the payments and the
// thread's context.
func wedged(t *testing.T, cp toolstage.Checkpointer, thread string) (func() *agent.Agent, *payments, context.Context) {
	t.Helper()
	pay := newPayments()
	notify := toolstage.NewSchemaTool("notify_manager", "Tell the manager.", nil, func(context.Context, map[string]any) (string, error) {
		return "notified", nil
	})
	model := &payer{Siblings: []string{"notify_manager"}}
	process := func(cp toolstage.Checkpointer) *agent.Agent {
		return agent.New(model, toolstage.New([]toolstage.Tool{pay.Tool(), notify}, toolstage.WithApprovalFor("notify_manager")), agent.WithCheckpointer(cp))
	}
	saves, loads := lostAndDown()
	ctx := guard.WithThread(context.Background(), thread)
	_, err := process(&checkpointtest.Faulty{Checkpointer: cp, Saves: saves, Loads: loads}).Run(ctx, "Pay alice 25 and tell the manager.")
	var in *toolstage.Interrupt
	if err == nil || errors.As(err, &in) || !errors.Is(err, checkpointtest.ErrInjected) {
		t.Fatalf("Run() with the interrupt's reply lost and the store unreadable: error = %v, want the store's error", err)
	}
	if _, err := process(cp).Run(ctx, followUp); !errors.Is(err, agent.ErrRunUnfinished) {
		t.Errorf("Run() on the thread awaiting decisions: error = %v, want ErrRunUnfinished", err)
	}
	return func() *agent.Agent { return process(cp) }, pay, ctx
}

// PendingAfterLostReply: the interrupt's save is applied, its reply lost,
// and the run cannot read the store again to tell (it returns an error).
// [agent.Agent.Pending] must return the stored interrupt, which resumes
// and runs the pending call. It returns the number of payments.
func PendingAfterLostReply(t *testing.T, cp toolstage.Checkpointer) int {
	t.Helper()
	process, pay, ctx := wedged(t, cp, "fault-pending")
	in, err := process().Pending(ctx)
	if err != nil || len(in.Pending) != 1 || in.Pending[0].Tool != "notify_manager" || in.Thread != "fault-pending" {
		t.Fatalf("Pending() = %+v, %v; want the interrupt awaiting notify_manager", in, err)
	}
	res, err := carry(ctx, process(), in)
	checkCarried(t, "a lost reply, the interrupt read back with Pending", pay, res, err)
	if _, err := process().Pending(ctx); !errors.Is(err, agent.ErrNothingToResume) {
		t.Errorf("Pending() after the run finished: error = %v, want ErrNothingToResume", err)
	}
	return pay.Count()
}

// AbandonAfterLostReply: the same fault, and the program gives the
// approval up: [agent.Agent.Abandon] must reset the thread, keeping the
// payment's result and telling the model the pending call did not run; the
// interrupt can no longer be resumed. It returns the number of payments.
func AbandonAfterLostReply(t *testing.T, cp toolstage.Checkpointer) int {
	t.Helper()
	process, pay, ctx := wedged(t, cp, "fault-abandon")
	in, err := process().Pending(ctx)
	if err != nil {
		t.Fatalf("Pending() error = %v", err)
	}
	abandoned, err := process().Abandon(ctx)
	if err != nil {
		t.Fatalf("Abandon() error = %v", err)
	}
	var notify, transfer string
	for _, m := range abandoned.Messages {
		for _, part := range m.Parts {
			if r, ok := part.(llms.ToolCallResponse); ok {
				switch r.Name {
				case "notify_manager":
					notify = r.Content
				case "transfer_money":
					transfer = r.Content
				}
			}
		}
	}
	if transfer != paymentResult || !strings.Contains(notify, "did not run") {
		t.Errorf("the abandoned turn tells the model transfer_money: %q, notify_manager: %q; want the payment's result and that notify_manager did not run", transfer, notify)
	}
	if _, err := process().Resume(ctx, in, toolstage.Decision{CallID: in.Pending[0].ID, Action: toolstage.Accept, Digest: in.Pending[0].Digest}); !errors.Is(err, toolstage.ErrInterruptRefused) {
		t.Errorf("Resume() of the abandoned interrupt: error = %v, want ErrInterruptRefused", err)
	}
	res, err := carry(ctx, process(), nil)
	checkCarried(t, "a lost reply, the thread reset with Abandon", pay, res, err)
	return pay.Count()
}
