package errfmt

import (
	"strconv"
	"strings"

	"github.com/toolguard/toolguard/internal/safetext"
)

// The words that begin toolguard's texts, for code that must recognise a
// text without parsing it. Prefer the events (middleware.WithEventHandler),
// which say the same thing in fields.
const (
	PrefixInvalid       = "Invalid arguments"        // Feedback
	PrefixNotExecuted   = "Not executed"             // a sibling of a rejected or blocked call
	PrefixLimitExceeded = "Tool call limit exceeded" // a call over a tool call limit
	PrefixLimitReached  = "Tool call limit reached"  // ToolCallLimit's ExitEnd answer
	PrefixToolError     = "Error: "                  // a tool's error, in the agent
	PrefixModelFailed   = "Model call failed"        // ModelRetry's ContinueOnFailure answer
)

// NotExecuted is the tool message for a valid call whose siblings in the same
// response had invalid arguments: it was not run, and the model must send the
// whole batch again.
const NotExecuted = PrefixNotExecuted + " because other tool calls in this batch had invalid arguments; " +
	"re-issue all tool calls with corrected arguments."

// NoFunction is the violation message of a tool call that came without a
// function (no name, no arguments).
const NoFunction = "the tool call has no function name or arguments"

// NoFunctionCalls is the message that replaces n tool calls without a
// function in a replayed response: they cannot be shown to the model as
// tool calls.
func NoFunctionCalls(n int) string {
	return "Your previous response contained " + strconv.Itoa(n) +
		" tool call(s) without a function name; they were not executed. " +
		"Call the tools again, each with its name and a JSON object of arguments."
}

// MaxToolErrorBytes bounds the error text of [ToolError].
const MaxToolErrorBytes = 2048

// ToolError is the tool message of a tool that failed with err: "Error: "
// and the error's text, cut to [MaxToolErrorBytes].
func ToolError(err error) string {
	msg := err.Error()
	if len(msg) > MaxToolErrorBytes {
		msg = safetext.Truncate(msg, MaxToolErrorBytes) + safetext.Ellipsis
	}
	return PrefixToolError + msg
}

// ModelFailed is the answer that stands in for a model call that failed
// after attempts attempts (0: unknown) with err.
func ModelFailed(attempts int, err error) string {
	var b strings.Builder
	b.WriteString(PrefixModelFailed)
	if attempts > 0 {
		b.WriteString(" after ")
		b.WriteString(plural(attempts, "attempt"))
	}
	b.WriteString(": ")
	b.WriteString(err.Error())
	return b.String()
}

// MaxReplayedArguments bounds, in bytes, the arguments of one call that a
// re-ask shows the model again. Larger arguments are shown as {}, as broken
// JSON is, and the call's tool message says so ([Oversized]), so a re-ask's
// size is bounded whatever the model sent.
const MaxReplayedArguments = 64 << 10

// Oversized is the message that tells the model that a call's arguments,
// size bytes long, were too large to be shown again in a re-ask and are shown
// as {}. It is a violation's message for a rejected call, and is added to the
// tool message of the call's siblings.
func Oversized(size int) string {
	return "the arguments are " + strconv.Itoa(size) + " bytes, more than the " +
		strconv.Itoa(MaxReplayedArguments) + " a re-ask shows again, so they are shown as {}; send them again in full"
}
