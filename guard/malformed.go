package guard

import (
	"github.com/toolguard/toolguard/internal/safetext"
	"github.com/toolguard/toolguard/validation"
)

// Malformed is a provider's refusal of a tool call the model wrote that the
// provider itself could not read: Groq's 400 tool_use_failed with the
// model's text in failed_generation, Gemini's finishReason
// MALFORMED_FUNCTION_CALL with it in finishMessage. No call reached the
// host: the model's attempt is all there is to show it.
type Malformed struct {
	// Generation is what the model wrote, as the provider quotes it; ""
	// when it quotes nothing. [ToolArgValidation] shows the model at most
	// [MaxMalformedGeneration] bytes of it.
	Generation string
	// Message is the provider's reason, as it gives it ("Failed to parse
	// tool call arguments as JSON"); "" when it gives none.
	Message string
}

// MaxMalformedGeneration bounds what a re-ask shows the model of the text
// of a call the provider could not read ([Malformed.Generation]): longer
// text is cut there, on a rune boundary, and ends with an ellipsis.
const MaxMalformedGeneration = 2 << 10

// MalformedReader is an optional interface of a [Codec], found by type
// assertion: a host whose provider refuses a malformed tool call itself
// (an error status, or a finish reason in place of the call) implements it,
// so that [ToolArgValidation] re-asks such an attempt as it re-asks one with
// an invalid call, within the same [WithMaxRetries], instead of handing the
// refusal on. Package httpguard's codec does, for OpenAI-compatible Chat
// Completions servers and Gemini.
type MalformedReader[Req, Resp any] interface {
	// Malformed reports whether a model call for req that returned resp
	// and err (one of them zero) is the provider's refusal of a tool call
	// it could not read, and what it says. It is asked only of an attempt
	// that failed or whose response holds no tool calls. It must be safe
	// for concurrent use.
	Malformed(req Req, resp Resp, err error) (Malformed, bool)
	// ReaskMalformed returns the request of the next attempt: req, the
	// logical call's original request, followed by m.Generation as the
	// model's turn (no such turn when it is "") and feedback as the
	// user's, in the host's shape. m.Generation is already bounded
	// ([MaxMalformedGeneration]).
	ReaskMalformed(req Req, m Malformed, feedback string) (Req, error)
}

// malformedOf returns c's MalformedReader and what it reads of resp and
// err, when c has one and the attempt is a provider's refusal of a
// malformed call.
func malformedOf[Req, Resp any](c Codec[Req, Resp], req Req, resp Resp, err error) (MalformedReader[Req, Resp], Malformed, bool) {
	mr, ok := any(c).(MalformedReader[Req, Resp])
	if !ok {
		return nil, Malformed{}, false
	}
	m, ok := mr.Malformed(req, resp, err)
	return mr, m, ok
}

// malformedText is the violation of a call the provider could not read:
// what to do first, then the provider's reason, quoted and cut short so
// that the line fits the 300 bytes errfmt gives a violation's message.
const (
	malformedText = "the provider could not read your tool call: send a tool call " +
		"whose arguments are one JSON object matching the tool's schema, not text or code"
	malformedSaid    = ". It said: "
	malformedQuoteAt = 300 - len(malformedText) - len(malformedSaid) - 8
)

// malformedError is the *validation.Error of a call the provider could
// not read: one violation at the root, keyword "provider", whose message
// quotes the provider's reason.
func malformedError(m Malformed) *validation.Error {
	msg := malformedText
	if m.Message != "" {
		msg += malformedSaid + safetext.Quote(m.Message, malformedQuoteAt)
	}
	return &validation.Error{Violations: []validation.Violation{{Keyword: "provider", Message: msg}}}
}

// boundedMalformed returns m with its Generation cut at
// MaxMalformedGeneration.
func boundedMalformed(m Malformed) Malformed {
	if len(m.Generation) > MaxMalformedGeneration {
		m.Generation = safetext.Truncate(m.Generation, MaxMalformedGeneration) + safetext.Ellipsis
	}
	return m
}
