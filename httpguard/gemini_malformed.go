package httpguard

import (
	"encoding/json"
	"strings"

	"github.com/toolguard/toolguard/guard"
)

var _ malformedProtocol = geminiWire{}

// geminiMalformed is the finishReason of a Gemini candidate whose function
// call the API could not read, and geminiMalformedPrefix the start of its
// finishMessage, followed by what the model wrote.
const (
	geminiMalformed       = "MALFORMED_FUNCTION_CALL"
	geminiMalformedPrefix = "Malformed function call: "
)

// malformedError: Gemini refuses a malformed call in a 200 answer, never
// with an error status.
func (geminiWire) malformedError(int, []byte) (guard.Malformed, bool) {
	return guard.Malformed{}, false
}

// malformedResponse reads candidates[0].finishReason MALFORMED_FUNCTION_CALL
// (authoritative even beside a functionCall part) and its finishMessage,
// "Malformed function call: <the model's text>" when Gemini gives it.
func (geminiWire) malformedResponse(body []byte) (guard.Malformed, bool) {
	var r struct {
		Candidates []struct {
			FinishReason  string `json:"finishReason"`
			FinishMessage string `json:"finishMessage"`
		} `json:"candidates"`
	}
	if json.Unmarshal(body, &r) != nil || len(r.Candidates) == 0 || r.Candidates[0].FinishReason != geminiMalformed {
		return guard.Malformed{}, false
	}
	msg := r.Candidates[0].FinishMessage
	if gen, ok := strings.CutPrefix(msg, geminiMalformedPrefix); ok {
		return guard.Malformed{Generation: gen, Message: strings.TrimSuffix(geminiMalformedPrefix, ": ")}, true
	}
	if msg == "" {
		msg = geminiMalformed
	}
	return guard.Malformed{Message: msg}, true
}

// reaskMalformed appends {"role": "model", "parts": [{"text": generation}]}
// and {"role": "user", "parts": [{"text": feedback}]} to the request's
// contents.
func (geminiWire) reaskMalformed(req []byte, m guard.Malformed, feedback string) ([]byte, error) {
	contents, err := geminiContents(req)
	if err != nil {
		return nil, err
	}
	type part struct {
		Text string `json:"text"`
	}
	type content struct {
		Role  string `json:"role"`
		Parts []part `json:"parts"`
	}
	var items [][]byte
	if m.Generation != "" {
		b, err := marshal(content{"model", []part{{m.Generation}}})
		if err != nil {
			return nil, err
		}
		items = append(items, b)
	}
	b, err := marshal(content{"user", []part{{feedback}}})
	if err != nil {
		return nil, err
	}
	return appendToArray(req, contents, append(items, b)...)
}
