//go:build !race

package main

// raceEnabled reports whether the race detector is on: it inflates
// allocations, so the tests that count them skip.
const raceEnabled = false
