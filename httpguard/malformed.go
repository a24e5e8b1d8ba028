package httpguard

import (
	"errors"
	"fmt"
	"strings"

	"github.com/toolguard/toolguard/guard"
)

// Calls the provider itself refuses.
//
// Some providers parse the model's tool call themselves and, when they
// cannot, answer with a refusal instead of the call: an OpenAI-compatible
// server's error status (Groq's 400 tool_use_failed, Ollama's 500 "error
// parsing tool call"), Gemini's finishReason MALFORMED_FUNCTION_CALL. The
// codec reports them to ToolArgValidation (guard.MalformedReader), which
// re-asks them as it re-asks an invalid call. A protocol whose providers do
// this implements malformedProtocol; the others are not asked.

var _ guard.MalformedReader[*request, *response] = codec{}

// malformedProtocol is a wireProtocol whose providers refuse a tool call
// they cannot read.
type malformedProtocol interface {
	// malformedError reads an upstream answer whose status is not 2xx
	// (status, body as read), or an error event of an upstream stream
	// (status 0, the event's data): whether it refuses a malformed call,
	// and what it says.
	malformedError(status int, body []byte) (guard.Malformed, bool)
	// malformedResponse reads a 2xx answer's body (a stream's assembled).
	malformedResponse(body []byte) (guard.Malformed, bool)
	// reaskMalformed builds the next request from the original request
	// body: m.Generation as the model's turn (none when it is "") and
	// feedback as the user's.
	reaskMalformed(req []byte, m guard.Malformed, feedback string) ([]byte, error)
}

// Malformed reports whether an upstream answer refuses a tool call the
// provider could not read: a failed response (an *UpstreamError, after
// ModelRetry's retries when it is inside), an upstream stream's error
// event, or a response, in req's protocol's terms. A stand-in answer and an answer the transport could
// not read are never one.
func (codec) Malformed(req *request, resp *response, err error) (guard.Malformed, bool) {
	mp, ok := req.proto.(malformedProtocol)
	if !ok {
		return guard.Malformed{}, false
	}
	if err != nil {
		var (
			ue *UpstreamError
			se *upstreamStreamError
		)
		switch {
		case errors.As(err, &ue):
			return mp.malformedError(ue.StatusCode(), ue.Body)
		case errors.As(err, &se):
			return mp.malformedError(0, se.Data)
		}
		return guard.Malformed{}, false
	}
	if resp == nil || resp.standIn {
		return guard.Malformed{}, false
	}
	body, err := resp.content()
	if err != nil || body == nil {
		return guard.Malformed{}, false
	}
	return mp.malformedResponse(body)
}

// ReaskMalformed returns req's body followed by the failed generation as
// the model's turn and feedback as the user's, in the protocol's shape. A
// request that continues server-side conversation state is never
// re-asked: a *[ServerStateError].
func (codec) ReaskMalformed(req *request, m guard.Malformed, feedback string) (*request, error) {
	if state := req.wire.State.continues(); state != "" {
		return nil, newServerStateError(state, []guard.Answer{{Content: feedback, Refused: true}})
	}
	mp, ok := req.proto.(malformedProtocol)
	if !ok {
		return nil, fmt.Errorf("httpguard: %s has no re-ask for a malformed call", req.proto.name())
	}
	body, err := mp.reaskMalformed(req.body, m, feedback)
	if err != nil {
		return nil, err
	}
	out := *req
	out.body = body
	return &out, nil
}

// ollamaParseError starts the message of Ollama's refusal of a tool call
// its parser cannot read: "error parsing tool call: raw='…', err=…".
const ollamaParseError = "error parsing tool call: "

// ollamaMalformed splits Ollama's message into the model's text (raw) and
// the parser's reason; a message of another form is the reason whole.
func ollamaMalformed(msg string) guard.Malformed {
	rest, ok := strings.CutPrefix(msg, ollamaParseError+"raw='")
	i := strings.LastIndex(rest, "', err=")
	if !ok || i < 0 {
		return guard.Malformed{Message: msg}
	}
	return guard.Malformed{Generation: rest[:i], Message: ollamaParseError + rest[i+len("', err="):]}
}
