package agent_test

import (
	"context"
	"errors"
	"testing"

	"github.com/toolguard/toolguard/agent"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/middleware/fakemodel"
	"github.com/toolguard/toolguard/toolstage"
)

// What SECURITY.md states about resuming an interrupt once, within one
// process and across replicas. Two replicas share an interrupt key and a
// checkpointer. An interrupt of a run on a thread is claimed in the store
// with a compare-and-set: once, across replicas. An interrupt of a run
// without a thread carries its own state and has no checkpoint to
// compare-and-set, checkpointer or not: the agent that resumed it refuses
// it again, another replica cannot tell and runs it a second time.
func TestApprovalInterruptSingleUseWithinAndAcrossReplicas(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		thread    string
		transfers int // after a resume on each replica
	}{
		{"on a thread: once across replicas", "t-1", 1},
		{"without a thread: once within one agent only", "", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var b bank
			store := new(toolstage.MemoryCheckpointer)
			replica := func(steps ...fakemodel.Step) *agent.Agent {
				return agent.New(fakemodel.New(steps...), toolstage.New(b.tools(), toolstage.WithApprovalFor("transfer_money"), toolstage.WithInterruptKey([]byte("a secret of 16 bytes or more"))), agent.WithCheckpointer(store))
			}
			ctx := context.Background()
			if tc.thread != "" {
				ctx = guard.WithThread(ctx, tc.thread)
			}
			first := replica(fakemodel.ToolCalls(fakemodel.Call("transfer_money", `{"to": "alice", "amount": 25}`)), fakemodel.Text("Sent."), fakemodel.Text("Sent."))
			_, err := first.Run(ctx, "pay alice")
			in := viaJSON(t, interruptOf(t, err))
			if _, err := first.Resume(ctx, in, decide(in.Pending[0], toolstage.Accept, "")); err != nil {
				t.Fatalf("Resume() on the first replica = %v", err)
			}
			if _, err := first.Resume(ctx, in, decide(in.Pending[0], toolstage.Accept, "")); !errors.Is(err, toolstage.ErrInterruptRefused) {
				t.Errorf("Resume() again on the same replica = %v, want ErrInterruptRefused", err)
			}
			_, err = replica(fakemodel.Text("Sent.")).Resume(ctx, in, decide(in.Pending[0], toolstage.Accept, ""))
			if n := b.count("transfer_money"); n != tc.transfers {
				t.Errorf("after a resume on each replica: %d transfers (second replica's Resume: %v), SECURITY.md says %d", n, err, tc.transfers)
			}
		})
	}
}
