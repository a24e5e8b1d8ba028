package guard_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine is left running when
// they end: a stage that leaked one per call (a retry timer, a release on a
// hung store, a stream watcher) would show here.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
