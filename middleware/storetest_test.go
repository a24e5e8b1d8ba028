package middleware_test

import (
	"testing"

	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/guard/storetest"
)

// TestMemoryThreadStoreConformance runs the ThreadStore conformance kit on
// the in-memory store (it never fails, so there is no unreachable case).
func TestMemoryThreadStoreConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(*testing.T) guard.ThreadStore { return guard.NewMemoryThreadStore(100) })
}
