package middleware_test

import "strconv"

// The model stage's wording, pinned: what a valid sibling of an invalid
// call reads, and what a call whose arguments are too large to replay
// reads (guard's maxReplayedArguments, 64 KiB).
const (
	notExecuted          = "Not executed because other tool calls in this batch had invalid arguments; re-issue all tool calls with corrected arguments."
	maxReplayedArguments = 64 << 10
)

func oversized(size int) string {
	return "the arguments are " + strconv.Itoa(size) + " bytes, more than the " +
		strconv.Itoa(maxReplayedArguments) + " a re-ask shows again, so they are shown as {}; send them again in full"
}
