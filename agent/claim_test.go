package agent_test

import (
	"context"
	"errors"
	"testing"

	"github.com/toolguard/toolguard/agent"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/middleware/fakemodel"
	"github.com/toolguard/toolguard/toolstage"
	"github.com/toolguard/toolguard/toolstage/checkpointtest"
)

// A Resume that claimed its thread and then lost the store (the process
// died, its saves stopped reaching the store) leaves a state another
// replica continues: the calls a person rejected or answered are known
// from the claim as rejected and answered — the model reads the person's
// words, not that their outcome is unknown — and only the accepted ones,
// which may have run, are of unknown outcome.
func TestClaimKeepsRejectionsAndAnswers(t *testing.T) {
	t.Parallel()
	var b bank
	store := new(toolstage.MemoryCheckpointer)
	ctx := guard.WithThread(context.Background(), "claim-1")
	stage := func() *toolstage.Stage {
		return toolstage.New(b.tools(), toolstage.WithApprovalFor("transfer_money", "close_account"))
	}
	model := fakemodel.New(fakemodel.ToolCalls(
		fakemodel.Call("transfer_money", `{"to": "alice", "amount": 25}`),
		fakemodel.Call("close_account", `{"reason": "moving"}`),
		fakemodel.Call("get_balance", `{}`),
	))
	_, err := agent.New(model, stage(), agent.WithCheckpointer(store)).Run(ctx, "pay, close and check")
	in := interruptOf(t, err)
	var transfer, closeAcct toolstage.PendingCall
	for _, p := range in.Pending {
		switch p.Tool {
		case "transfer_money":
			transfer = p
		case "close_account":
			closeAcct = p
		}
	}
	// This process's store answers the claim, then nothing more.
	down := &checkpointtest.Faulty{Checkpointer: store, Saves: map[int]checkpointtest.Fault{2: checkpointtest.Fail, 3: checkpointtest.Fail, 4: checkpointtest.Fail}}
	model.Append(fakemodel.Text("Done."))
	_, err = agent.New(model, stage(), agent.WithCheckpointer(down)).Resume(ctx, in,
		decide(transfer, toolstage.Accept, ""), decide(closeAcct, toolstage.Reject, "Keep the account open."))
	if !errors.Is(err, checkpointtest.ErrInjected) {
		t.Fatalf("Resume() on the failing store = %v, want its save error", err)
	}
	// Another replica continues the thread from the claim.
	model.Append(fakemodel.Text("The transfer's outcome must be checked; the account stays open."))
	res, err := agent.New(model, stage(), agent.WithCheckpointer(store)).Resume(ctx, nil)
	if err != nil {
		t.Fatalf("Resume(nil) = %v", err)
	}
	for _, s := range res.Steps {
		t.Logf("step %s %s: result %q, err %v", s.CallID, s.Tool, s.Result, s.Err)
	}
	byTool := map[string]agent.Step{}
	for _, s := range res.Steps {
		byTool[s.Tool] = s
	}
	if s := byTool["close_account"]; !errors.Is(s.Err, toolstage.ErrCallRejected) {
		t.Errorf("close_account after the claim: err %v, want the person's rejection (ErrCallRejected)", s.Err)
	}
	if s := byTool["transfer_money"]; !errors.Is(s.Err, toolstage.ErrCallInterrupted) {
		t.Errorf("transfer_money after the claim: err %v, want ErrCallInterrupted (it may have run)", s.Err)
	}
	if n := b.count("close_account"); n != 0 {
		t.Errorf("close_account ran %d times, want never", n)
	}
	if n := b.count("transfer_money"); n != 1 {
		t.Errorf("transfer_money ran %d times, want once (before the store went down)", n)
	}
}
