package httpguard

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/toolguard/toolguard/guard"
)

var _ malformedProtocol = ollamaWire{}

// malformedError reads Ollama's refusal of a tool call its parser cannot
// read (the harmony parser of gpt-oss models, say), in its error shape
// {"error": "error parsing tool call: raw='…', err=…"}, raw the model's
// text: a 500 before the stream began or to a sync request, an error line
// of the stream once it has (status 0 here). ModelRetry, inside, retries
// the 500 first as any 5xx.
func (ollamaWire) malformedError(status int, body []byte) (guard.Malformed, bool) {
	if status != http.StatusInternalServerError && status != 0 {
		return guard.Malformed{}, false
	}
	var r struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(body, &r) != nil || !strings.HasPrefix(r.Error, ollamaParseError) {
		return guard.Malformed{}, false
	}
	return ollamaMalformed(r.Error), true
}

// malformedResponse: Ollama never refuses a call in a 2xx body.
func (ollamaWire) malformedResponse([]byte) (guard.Malformed, bool) { return guard.Malformed{}, false }

// reaskMalformed appends {"role": "assistant", "content": generation} and
// {"role": "user", "content": feedback} to the request's messages.
func (ollamaWire) reaskMalformed(req []byte, m guard.Malformed, feedback string) ([]byte, error) {
	if _, err := readableBody(req, functionSchemas); err != nil {
		return nil, err
	}
	r, err := root(req)
	if err != nil {
		return nil, err
	}
	msgs, ok, err := requestField(req, r, "messages")
	if err != nil || !ok || kind(req, msgs) != '[' {
		return nil, fmt.Errorf("%w: request without messages", errJSON)
	}
	var items [][]byte
	if m.Generation != "" {
		b, err := marshal(ollamaMessageJSON{Role: "assistant", Content: m.Generation})
		if err != nil {
			return nil, err
		}
		items = append(items, b)
	}
	b, err := marshal(ollamaMessageJSON{Role: "user", Content: feedback})
	if err != nil {
		return nil, err
	}
	e, err := appendElems(req, msgs, append(items, b)...)
	if err != nil {
		return nil, err
	}
	return apply(req, e), nil
}
