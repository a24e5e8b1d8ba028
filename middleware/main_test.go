package middleware_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine is left running when
// they end: a middleware that leaked one per call (a retry timer, a stream
// watcher) would show here.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
