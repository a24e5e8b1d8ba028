package agent_test

import (
	"testing"

	"github.com/toolguard/toolguard/toolstage"
)

// The agent's fault scenarios (internal/agentcheckpoint), on the
// in-memory store: a run that ends inside a batch — a stop, a panic, a
// cancel, a failed or unconfirmed save — never makes the thread forget a
// payment that ran.

func TestFaultStopAfterPayment(t *testing.T) {
	t.Parallel()
	StopAfterPayment(t, new(toolstage.MemoryCheckpointer))
}

func TestFaultPanicAfterPayment(t *testing.T) {
	t.Parallel()
	PanicAfterPayment(t, new(toolstage.MemoryCheckpointer))
}

func TestFaultCancelAfterPayment(t *testing.T) {
	t.Parallel()
	CancelAfterPayment(t, new(toolstage.MemoryCheckpointer))
}

func TestFaultFailedInterruptSave(t *testing.T) {
	t.Parallel()
	FailedInterruptSave(t, new(toolstage.MemoryCheckpointer))
}

func TestFaultLostInterruptReply(t *testing.T) {
	t.Parallel()
	LostInterruptReply(t, new(toolstage.MemoryCheckpointer))
}

func TestFaultPendingAfterLostReply(t *testing.T) {
	t.Parallel()
	PendingAfterLostReply(t, new(toolstage.MemoryCheckpointer))
}

func TestFaultAbandonAfterLostReply(t *testing.T) {
	t.Parallel()
	AbandonAfterLostReply(t, new(toolstage.MemoryCheckpointer))
}

func TestFaultConflictAfterOwnWrite(t *testing.T) {
	t.Parallel()
	ConflictAfterOwnWrite(t, new(toolstage.MemoryCheckpointer))
}
