package httpguard

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/toolguard/toolguard/guard"
)

var _ malformedProtocol = chatWire{}

// malformedError reads the refusals of OpenAI-compatible servers, in
// OpenAI's error shape {"error": {"message", "type", "code", …}}:
//
//   - Groq: 400, code "tool_use_failed", the model's text in
//     failed_generation (absent when Groq validated the call against the
//     tool's schema itself: "tool call validation failed: …"); to a
//     streaming request, the same error object as a data event of the
//     stream (status 0 here).
//   - Ollama's /v1 endpoint: 500, message "error parsing tool call:
//     raw='…', err=…", raw the model's text. ModelRetry, inside, retries
//     it first as any 5xx.
func (chatWire) malformedError(status int, body []byte) (guard.Malformed, bool) {
	var r struct {
		Error *struct {
			Message          string          `json:"message"`
			Code             json.RawMessage `json:"code"`
			FailedGeneration *string         `json:"failed_generation"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &r) != nil || r.Error == nil {
		return guard.Malformed{}, false
	}
	var code string
	_ = json.Unmarshal(r.Error.Code, &code)
	switch {
	case (status == http.StatusBadRequest || status == 0) && code == "tool_use_failed":
		m := guard.Malformed{Message: r.Error.Message}
		if r.Error.FailedGeneration != nil {
			m.Generation = *r.Error.FailedGeneration
		}
		return m, true
	case status == http.StatusInternalServerError && strings.HasPrefix(r.Error.Message, ollamaParseError):
		return ollamaMalformed(r.Error.Message), true
	}
	return guard.Malformed{}, false
}

// malformedResponse: a Chat Completions answer never refuses a call in a
// 2xx body (vLLM hands the text its parser could not read on as content).
func (chatWire) malformedResponse([]byte) (guard.Malformed, bool) { return guard.Malformed{}, false }

// reaskMalformed appends {"role": "assistant", "content": generation} and
// {"role": "user", "content": feedback} to the request's messages.
func (chatWire) reaskMalformed(req []byte, m guard.Malformed, feedback string) ([]byte, error) {
	msgs, err := chatMessages(req)
	if err != nil {
		return nil, err
	}
	type message struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	var items [][]byte
	if m.Generation != "" {
		b, err := marshal(message{"assistant", m.Generation})
		if err != nil {
			return nil, err
		}
		items = append(items, b)
	}
	b, err := marshal(message{"user", feedback})
	if err != nil {
		return nil, err
	}
	return appendToArray(req, msgs, append(items, b)...)
}
