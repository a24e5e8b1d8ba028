package errfmt

import (
	"github.com/toolguard/toolguard/internal/safetext"
)

// The words that begin toolguard's texts, for code that must recognise a
// text without parsing it. Prefer the events (guard.WithEventHandler),
// which say the same thing in fields.
const (
	PrefixInvalid       = "Invalid arguments"        // Feedback
	PrefixNotExecuted   = "Not executed"             // a sibling of a rejected or blocked call
	PrefixLimitExceeded = "Tool call limit exceeded" // a call over a tool call limit
	PrefixLimitReached  = "Tool call limit reached"  // ToolCallLimit's ExitEnd answer
	PrefixToolError     = "Error: "                  // a tool's error, in the agent
	PrefixModelFailed   = "Model call failed"        // ModelRetry's ContinueOnFailure answer
)

// PrefixModelLimitReached starts ModelCallLimit's ExitEnd answer.
const PrefixModelLimitReached = "Model call limit reached"

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
