package agent_test

import (
	"testing"

	"github.com/toolguard/toolguard/agent/checkpointtest"
	"github.com/toolguard/toolguard/toolstage"
)

// The fault scenarios of checkpointtest, on the in-memory store: a run
// that ends inside a batch — a stop, a panic, a cancel, a failed or
// unconfirmed save — never makes the thread forget a payment that ran.

func TestFaultStopAfterPayment(t *testing.T) {
	t.Parallel()
	checkpointtest.StopAfterPayment(t, new(toolstage.MemoryCheckpointer))
}

func TestFaultPanicAfterPayment(t *testing.T) {
	t.Parallel()
	checkpointtest.PanicAfterPayment(t, new(toolstage.MemoryCheckpointer))
}

func TestFaultCancelAfterPayment(t *testing.T) {
	t.Parallel()
	checkpointtest.CancelAfterPayment(t, new(toolstage.MemoryCheckpointer))
}

func TestFaultFailedInterruptSave(t *testing.T) {
	t.Parallel()
	checkpointtest.FailedInterruptSave(t, new(toolstage.MemoryCheckpointer))
}

func TestFaultLostInterruptReply(t *testing.T) {
	t.Parallel()
	checkpointtest.LostInterruptReply(t, new(toolstage.MemoryCheckpointer))
}

func TestFaultPendingAfterLostReply(t *testing.T) {
	t.Parallel()
	checkpointtest.PendingAfterLostReply(t, new(toolstage.MemoryCheckpointer))
}

func TestFaultAbandonAfterLostReply(t *testing.T) {
	t.Parallel()
	checkpointtest.AbandonAfterLostReply(t, new(toolstage.MemoryCheckpointer))
}

func TestFaultConflictAfterOwnWrite(t *testing.T) {
	t.Parallel()
	checkpointtest.ConflictAfterOwnWrite(t, new(toolstage.MemoryCheckpointer))
}
