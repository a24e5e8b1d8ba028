package errfmt

import (
	"fmt"

	"github.com/toolguard/toolguard/internal/safetext"
)

// Limit describes a tool call limit that a model response would exceed, for
// the texts the model reads about it.
type Limit struct {
	Tool  string // the limited tool; "" when the limit covers every tool
	Scope string // what the limit counts over: "run" or "thread"
	Limit int    // the limit
	Count int    // calls made in the scope before the response
}

// Exceeded is the tool message of a call of tool that would exceed the
// limit. tool comes from the model: it is cut to one short line.
func (l Limit) Exceeded(tool string) string {
	tool = safetext.Sanitize(tool, 64)
	if l.Tool != "" {
		return fmt.Sprintf("%s: '%s' may be called at most %s per %s; do not call it again.",
			PrefixLimitExceeded, tool, plural(l.Limit, "time"), l.Scope)
	}
	verb := "calls are"
	if l.Limit == 1 {
		verb = "call is"
	}
	return fmt.Sprintf("%s: at most %d tool %s allowed per %s; do not call '%s' again.",
		PrefixLimitExceeded, l.Limit, verb, l.Scope, tool)
}

// Remaining is the tool message of a call the limit covers that was not
// executed because its batch exceeded the limit, though it would fit: how
// many calls remain.
func (l Limit) Remaining() string {
	n := max(l.Limit-l.Count, 0)
	what := plural(n, "tool call")
	if l.Tool != "" {
		what = plural(n, "call") + " of '" + l.Tool + "'"
	}
	verb := "remain"
	if n == 1 {
		verb = "remains"
	}
	return fmt.Sprintf("%s: this batch exceeded the tool call limit; %s %s in this %s, so re-issue at most %d.",
		PrefixNotExecuted, what, verb, l.Scope, n)
}

// Sibling is the tool message of a call the limit does not cover, in a batch
// that exceeded it.
const Sibling = PrefixNotExecuted + ": another call in this batch exceeded the tool call limit; re-issue this call if you still need it."

// Reached is the answer that ends a run at the limit (ToolCallLimit's
// ExitEnd): "Tool call limit reached: 'search' run limit exceeded (2/2
// calls)."
func (l Limit) Reached() string {
	tool := ""
	if l.Tool != "" {
		tool = "'" + l.Tool + "' "
	}
	return fmt.Sprintf("%s: %s%s limit exceeded (%d/%d calls).", PrefixLimitReached, tool, l.Scope, l.Count, l.Limit)
}
