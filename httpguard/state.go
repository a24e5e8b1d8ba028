package httpguard

import (
	"fmt"
	"strings"

	"github.com/toolguard/toolguard/guard"
)

// continues names the server-side conversation state a request continues
// or creates ("previous_response_id", "conversation", "thread"), "" when
// none.
// A response that is only stored (store: true, the Responses default) is
// not continued state: nothing the client sends later depends on a re-ask
// unless it continues from the id it reads, which is the accepted
// attempt's.
func (s serverState) continues() string {
	switch {
	case s.Thread != "":
		// Anthropic's message thread, created or continued: the server
		// holds every turn under the id the client reads, which a stream
		// gives as the first attempt's.
		return "thread"
	case s.Conversation != "":
		return "conversation"
	case s.PreviousResponseID != "":
		return "previous_response_id"
	}
	return ""
}

// ServerStateError is what a stage that would ask the model again gets
// instead, for a request whose conversation the server holds (OpenAI
// Responses' previous_response_id or conversation, an Anthropic message
// thread): the server
// keeps every request and response of such a conversation, so a re-ask
// would stay in it for every later turn (and a conversation would hold the
// rejected call without its answer). Such a request is guarded without
// feedback: calls are validated, and stripped and coerced arguments are
// written back, but a call still invalid (or over a limit with
// guard.ExitContinue) is refused. The client receives an HTTP 422 in the
// protocol's error shape with type "tool_calls_refused", whose message
// holds Refused, so the program, which owns the conversation, can answer
// the calls itself.
type ServerStateError struct {
	// State is "previous_response_id", "conversation" or "thread".
	State string
	// Refused are the tool results a re-ask would have sent for the
	// refused calls: their violations, or the limit they exceed.
	Refused []string
}

func newServerStateError(state string, as []guard.Answer) *ServerStateError {
	e := &ServerStateError{State: state}
	for _, a := range as {
		if a.Refused {
			e.Refused = append(e.Refused, a.Content)
		}
	}
	return e
}

// Error says why the calls were refused and what the model would have been
// told.
func (e *ServerStateError) Error() string {
	return fmt.Sprintf("httpguard: tool calls refused without a re-ask (the request continues server-side state with %s): %s",
		e.State, strings.Join(e.Refused, "; "))
}
