package validation

import (
	"strconv"
	"strings"

	"github.com/toolguard/toolguard/internal/safetext"
)

// Violation is one way a tool call's arguments break their schema.
type Violation struct {
	// Path is a JSON Pointer (RFC 6901) to the offending value; "" is the
	// arguments object itself. A missing required property and an
	// unexpected property are reported at the property's own path.
	Path string
	// Keyword is the JSON Schema keyword that failed ("type", "required",
	// "enum", ...), "json" for arguments that DecodeArgs refuses (not a
	// JSON object, a key twice, too deep, too many values, a number out of
	// range) or that hold more values than the schema accepts,
	// "validate" for an error from a Go type's Validate method, or
	// "provider" for a call the provider itself could not read
	// (guard.Malformed).
	Keyword string
	// Message says what was expected, in words written by toolguard or by
	// the schema's author (never containing the model's value).
	Message string
	// Got is the offending value as compact JSON, truncated to a few hundred
	// bytes, or "" when there is no value (a missing property). It is
	// model-supplied text: quote it before showing it to anyone.
	Got string
}

// String renders the violation on one line: `/city: expected string, got 42`.
// Model-supplied parts are quoted, so the line cannot be broken by them.
func (v Violation) String() string {
	var b strings.Builder
	b.WriteString(safetext.PathLabel(v.Path))
	b.WriteString(": ")
	b.WriteString(v.Message)
	if v.Got != "" {
		b.WriteString(", got ")
		b.WriteString(v.Got)
	}
	return b.String()
}

// Error reports every violation of one tool call. ToolArgValidation fills
// Tool and CallID; [Schema] methods leave them empty.
type Error struct {
	Tool, CallID string
	Violations   []Violation
	// Omitted counts the violations not listed because there were more
	// than 1000; the first 1000 in sorted order are kept.
	Omitted int
}

// maxErrorViolations bounds how many violations Error() spells out.
const maxErrorViolations = 10

// Error renders the violations on one line, at most ten of them.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("validation: ")
	if e.Tool != "" {
		b.WriteString("tool ")
		b.WriteString(safetext.Quote(e.Tool, maxPath))
		if e.CallID != "" {
			b.WriteString(" (call ")
			b.WriteString(safetext.Quote(e.CallID, maxPath))
			b.WriteString(")")
		}
		b.WriteString(": ")
	}
	n := len(e.Violations) + e.Omitted
	switch n {
	case 0:
		b.WriteString("invalid arguments")
		return b.String()
	case 1:
		b.WriteString("1 violation: ")
	default:
		b.WriteString(strconv.Itoa(n))
		b.WriteString(" violations: ")
	}
	for i, v := range e.Violations {
		if i == maxErrorViolations {
			b.WriteString("; and ")
			b.WriteString(strconv.Itoa(n - i))
			b.WriteString(" more")
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(v.String())
	}
	return b.String()
}
