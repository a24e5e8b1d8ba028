//go:build race

package guard_test

// raceEnabled reports whether the race detector is on: it slows code down
// and inflates allocations, so the heaviest tests shrink or skip.
const raceEnabled = true
