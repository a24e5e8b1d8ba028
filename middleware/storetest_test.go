package middleware_test

import (
	"testing"

	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/storetest"
)

// TestMemoryThreadStoreConformance runs the ThreadStore conformance kit on
// the in-memory store (it never fails, so there is no unreachable case).
func TestMemoryThreadStoreConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(*testing.T) middleware.ThreadStore { return middleware.NewMemoryThreadStore(100) })
}
