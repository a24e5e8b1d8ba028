package errfmt

import (
	"slices"

	"github.com/toolguard/toolguard/internal/safetext"
	"github.com/toolguard/toolguard/validation"
)

// The words that begin the texts about a structured answer (an agent's
// answer tool, middleware.OutputValidation).
const (
	PrefixInvalidAnswer = "Invalid answer"         // Answer
	PrefixAnswerNeeded  = "A structured answer"    // AnswerInText, AnswerNotJSON
	PrefixNotAccepted   = "Not accepted"           // AnswerNotAccepted, AnswerIgnored
	AnswerAccepted      = "Final answer accepted." // the answer tool's result when the run ends with it
)

// Answer formats e with the default [Options]: the feedback for a text
// answer that is not the JSON object its schema wants.
func Answer(e *validation.Error) string { return Options{}.Answer(e) }

// Answer formats the violations of a text answer (middleware's
// OutputValidation) like [Options.Feedback] formats a tool call's — the same
// lines, sorted and bounded — with a head and an instruction for an answer:
//
//	Invalid answer: 1 error.
//	- /label: expected one of "spam", "ham", got "maybe"
//	Answer again with only the corrected JSON object, no other text.
//
// As in Feedback, the advice to omit optional fields rather than send
// null, {} or [] is added only when a violation's value is one of those.
func (o Options) Answer(e *validation.Error) string {
	o = o.normalized()
	vs := slices.Clone(e.Violations)
	slices.SortFunc(vs, compareViolations)
	vs = slices.Compact(vs)
	total := len(vs) + e.Omitted
	head := PrefixInvalidAnswer + ": " + plural(total, "error") + ".\n"
	foot := "Answer again with only the corrected JSON object, no other text."
	if sentEmpty(vs) {
		foot += " Omit optional fields you have no value for instead of sending null, {} or []."
	}
	return o.render(head, foot, vs, total)
}

// AnswerInText is what an agent tells the model that answered in text when
// the run needs its answer as a call of the answer tool named tool.
func AnswerInText(tool string) string {
	return PrefixAnswerNeeded + " is required: call " + safetext.Quote(tool, 64) +
		" with your final answer as its arguments, instead of answering in text."
}

// AnswerNotJSON is what middleware.OutputValidation tells the model that
// answered with no text at all.
const AnswerNotJSON = PrefixAnswerNeeded + " is required: answer with only a JSON object matching the schema, no other text."

// AnswerNotAccepted is the result of a valid call of the answer tool named
// tool whose sibling calls in the same response failed: the answer was
// written before their results were known, so it is not taken.
func AnswerNotAccepted(tool string) string {
	return PrefixNotAccepted + ": other tool calls in this batch failed, and the answer was given before their results were known. " +
		"Read their results, then call " + safetext.Quote(tool, 64) + " again."
}

// AnswerIgnored is the result of a second call of the answer tool in one
// response: only the first is considered.
const AnswerIgnored = PrefixNotAccepted + ": only the first final answer of a response is considered."
