package agent_test

import (
	"testing"

	"github.com/toolguard/toolguard/internal/agentcheckpoint"
	"github.com/toolguard/toolguard/toolstage"
)

// The agent's fault scenarios (internal/agentcheckpoint), on the
// in-memory store: a run that ends inside a batch — a stop, a panic, a
// cancel, a failed or unconfirmed save — never makes the thread forget a
// payment that ran.

func TestFaultStopAfterPayment(t *testing.T) {
	t.Parallel()
	agentcheckpoint.StopAfterPayment(t, new(toolstage.MemoryCheckpointer))
}

func TestFaultPanicAfterPayment(t *testing.T) {
	t.Parallel()
	agentcheckpoint.PanicAfterPayment(t, new(toolstage.MemoryCheckpointer))
}

func TestFaultCancelAfterPayment(t *testing.T) {
	t.Parallel()
	agentcheckpoint.CancelAfterPayment(t, new(toolstage.MemoryCheckpointer))
}

func TestFaultFailedInterruptSave(t *testing.T) {
	t.Parallel()
	agentcheckpoint.FailedInterruptSave(t, new(toolstage.MemoryCheckpointer))
}

func TestFaultLostInterruptReply(t *testing.T) {
	t.Parallel()
	agentcheckpoint.LostInterruptReply(t, new(toolstage.MemoryCheckpointer))
}

func TestFaultPendingAfterLostReply(t *testing.T) {
	t.Parallel()
	agentcheckpoint.PendingAfterLostReply(t, new(toolstage.MemoryCheckpointer))
}

func TestFaultAbandonAfterLostReply(t *testing.T) {
	t.Parallel()
	agentcheckpoint.AbandonAfterLostReply(t, new(toolstage.MemoryCheckpointer))
}

func TestFaultConflictAfterOwnWrite(t *testing.T) {
	t.Parallel()
	agentcheckpoint.ConflictAfterOwnWrite(t, new(toolstage.MemoryCheckpointer))
}
