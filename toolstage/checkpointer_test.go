package toolstage_test

import (
	"testing"

	"github.com/toolguard/toolguard/toolstage"
	"github.com/toolguard/toolguard/toolstage/checkpointtest"
)

// MemoryCheckpointer keeps the Checkpointer contract, and a Stage's
// interrupts kept in it are resumed once, on any Stage value.
func TestMemoryCheckpointer(t *testing.T) {
	t.Parallel()
	checkpointtest.Run(t, func(*testing.T) toolstage.Checkpointer { return new(toolstage.MemoryCheckpointer) })
}

// A Stage over MemoryCheckpointer forgets no call that ran and runs no
// approved call twice when a save fails or its reply is lost.
func TestMemoryCheckpointerFaults(t *testing.T) {
	t.Parallel()
	checkpointtest.RunFaults(t, func(*testing.T) toolstage.Checkpointer { return new(toolstage.MemoryCheckpointer) })
}
