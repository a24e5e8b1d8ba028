package agent_test

import (
	"testing"

	"github.com/toolguard/toolguard/agent"
	"github.com/toolguard/toolguard/agent/checkpointtest"
)

// The fault scenarios of checkpointtest, on the in-memory store: a run
// that ends inside a batch — a stop, a panic, a cancel, a failed or
// unconfirmed save — never makes the thread forget a payment that ran.

func TestFaultStopAfterPayment(t *testing.T) {
	t.Parallel()
	checkpointtest.StopAfterPayment(t, new(agent.MemoryCheckpointer))
}

func TestFaultPanicAfterPayment(t *testing.T) {
	t.Parallel()
	checkpointtest.PanicAfterPayment(t, new(agent.MemoryCheckpointer))
}

func TestFaultCancelAfterPayment(t *testing.T) {
	t.Parallel()
	checkpointtest.CancelAfterPayment(t, new(agent.MemoryCheckpointer))
}

func TestFaultFailedInterruptSave(t *testing.T) {
	t.Parallel()
	checkpointtest.FailedInterruptSave(t, new(agent.MemoryCheckpointer))
}

func TestFaultLostInterruptReply(t *testing.T) {
	t.Parallel()
	checkpointtest.LostInterruptReply(t, new(agent.MemoryCheckpointer))
}

func TestFaultPendingAfterLostReply(t *testing.T) {
	t.Parallel()
	checkpointtest.PendingAfterLostReply(t, new(agent.MemoryCheckpointer))
}

func TestFaultAbandonAfterLostReply(t *testing.T) {
	t.Parallel()
	checkpointtest.AbandonAfterLostReply(t, new(agent.MemoryCheckpointer))
}

func TestFaultConflictAfterOwnWrite(t *testing.T) {
	t.Parallel()
	checkpointtest.ConflictAfterOwnWrite(t, new(agent.MemoryCheckpointer))
}
