//go:build !linux

package mcpguard_test

import "time"

// processCPU reports that the process's CPU time cannot be read here: the
// benchmarks report wall time only.
func processCPU() (time.Duration, bool) { return 0, false }
