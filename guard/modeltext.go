package guard

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/toolguard/toolguard/errfmt"
	"github.com/toolguard/toolguard/internal/safetext"
)

// The texts the model stage answers the model with, besides the feedback on
// invalid arguments (package errfmt): what a call over a limit, a sibling
// not executed, a call without a function, an oversized replay and a failed
// model call read. The whole tool messages begin with one of errfmt's
// Prefix constants, so that code can recognise them. They are wording, not
// API: users read them through the events.

// limitText describes a tool call limit that a model response would exceed, for
// the texts the model reads about it.
type limitText struct {
	Tool  string // the limited tool; "" when the limit covers every tool
	Scope string // what the limit counts over: "run" or "thread"
	Limit int    // the limit
	Count int    // calls made in the scope before the response
}

// Exceeded is the tool message of a call of tool that would exceed the
// limit. tool comes from the model: it is cut to one short line.
func (l limitText) Exceeded(tool string) string {
	tool = safetext.Sanitize(tool, 64)
	if l.Tool != "" {
		return fmt.Sprintf("%s: '%s' may be called at most %s per %s; do not call it again.",
			errfmt.PrefixLimitExceeded, tool, plural(l.Limit, "time"), l.Scope)
	}
	verb := "calls are"
	if l.Limit == 1 {
		verb = "call is"
	}
	return fmt.Sprintf("%s: at most %d tool %s allowed per %s; do not call '%s' again.",
		errfmt.PrefixLimitExceeded, l.Limit, verb, l.Scope, tool)
}

// Remaining is the tool message of a call the limit covers that was not
// executed because its batch exceeded the limit, though it would fit: how
// many calls remain.
func (l limitText) Remaining() string {
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
		errfmt.PrefixNotExecuted, what, verb, l.Scope, n)
}

// siblingText is the tool message of a call the limit does not cover, in a batch
// that exceeded it.
const siblingText = errfmt.PrefixNotExecuted + ": another call in this batch exceeded the tool call limit; re-issue this call if you still need it."

// Reached is the answer that ends a run at the limit (ToolCallLimit's
// ExitEnd): "Tool call limit reached: 'search' run limit exceeded (2/2
// calls)."
func (l limitText) Reached() string {
	tool := ""
	if l.Tool != "" {
		tool = "'" + l.Tool + "' "
	}
	return fmt.Sprintf("%s: %s%s limit exceeded (%d/%d calls).", errfmt.PrefixLimitReached, tool, l.Scope, l.Count, l.Limit)
}

// modelLimitText describes a model call limit that a call would exceed, for
// the answer that ends a run at it.
type modelLimitText struct {
	Scope string // what the limit counts over: "run" or "thread"
	Limit int    // the limit
	Count int    // model calls made in the scope before this one
}

// Reached is the answer that ends a run at the limit (ModelCallLimit's
// ExitEnd): "Model call limit reached: run limit exceeded (5/5 calls)."
func (l modelLimitText) Reached() string {
	return fmt.Sprintf("%s: %s limit exceeded (%d/%d calls).", errfmt.PrefixModelLimitReached, l.Scope, l.Count, l.Limit)
}

// notExecutedText is the tool message for a valid call whose siblings in the same
// response had invalid arguments: it was not run, and the model must send the
// whole batch again.
const notExecutedText = errfmt.PrefixNotExecuted + " because other tool calls in this batch had invalid arguments; " +
	"re-issue all tool calls with corrected arguments."

// noFunctionText is the violation message of a tool call that came without a
// function (no name, no arguments).
const noFunctionText = "the tool call has no function name or arguments"

// modelFailedText is the answer that stands in for a model call that failed
// after attempts attempts (0: unknown) with err.
func modelFailedText(attempts int, err error) string {
	var b strings.Builder
	b.WriteString(errfmt.PrefixModelFailed)
	if attempts > 0 {
		b.WriteString(" after ")
		b.WriteString(plural(attempts, "attempt"))
	}
	b.WriteString(": ")
	b.WriteString(err.Error())
	return b.String()
}

// maxReplayedArguments bounds, in bytes, the arguments of one call that a
// re-ask shows the model again. Larger arguments are shown as {}, as broken
// JSON is, and the call's tool message says so ([oversizedText]), so a re-ask's
// size is bounded whatever the model sent.
const maxReplayedArguments = 64 << 10

// oversizedText is the message that tells the model that a call's arguments,
// size bytes long, were too large to be shown again in a re-ask and are shown
// as {}. It is a violation's message for a rejected call, and is added to the
// tool message of the call's siblings.
func oversizedText(size int) string {
	return "the arguments are " + strconv.Itoa(size) + " bytes, more than the " +
		strconv.Itoa(maxReplayedArguments) + " a re-ask shows again, so they are shown as {}; send them again in full"
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}
