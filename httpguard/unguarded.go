package httpguard

import (
	"encoding/json"
	"errors"
	"net/http"
)

// responseUnguardable is the error type of an upstream answer the guard
// cannot read, refused under fail closed (see the package documentation,
// "What httpguard cannot read").
const responseUnguardable = "response_unguardable"

// unguardableError says why an upstream answer cannot be guarded: a shape
// the wire code does not know, an encoding it cannot decode, a key given
// twice or differing only in case from a protocol key, a body past the
// bound. why is a fixed text (it names the kind of failure, never content);
// err holds the details. The wire code returns it (wrapped or not) from
// every reader of a response or stream event; the transport turns it into
// a refusal under fail closed, an unguarded event under fail open.
type unguardableError struct {
	why string
	err error
	// pass is the upstream response handed on unread, whose body a
	// refusal closes; nil when the answer was read (a stream event).
	pass *http.Response
}

// unguardable returns an *unguardableError for why, with err's details.
func unguardable(why string, err error) error {
	return &unguardableError{why: why, err: err}
}

func (e *unguardableError) Error() string {
	if e.err == nil {
		return "httpguard: " + e.why
	}
	return "httpguard: " + e.why + ": " + e.err.Error()
}

func (e *unguardableError) Unwrap() error { return e.err }

// isUnguardable reports whether err says an answer cannot be guarded.
func isUnguardable(err error) bool {
	var ue *unguardableError
	return errors.As(err, &ue)
}

// unusableSchema stands for a tool's schema that the wire code could not
// read or convert (wireTool.Err): compiling it fails with that error, so
// that the tool's calls alone are refused under fail closed and pass with a
// schema_error event under fail open, while every other tool of the
// request is guarded as usual.
type unusableSchema struct{ err error }

// MarshalJSON fails with the reason the schema is unusable.
func (s unusableSchema) MarshalJSON() ([]byte, error) { return nil, s.err }

var _ json.Marshaler = unusableSchema{}

// passUnread hands hr on unread, as the answer to req that the stages see:
// its reason (why, a fixed text; err, the details) is what the codec's
// Unreadable reports, so each stage refuses it under fail closed and passes
// it with an unguarded event under fail open.
func passUnread(req *request, hr *http.Response, why string, err error) *response {
	return &response{proto: req.proto, pass: hr, unread: &unguardableError{why: why, err: err, pass: hr}}
}

// closeUnread closes the body of the upstream response err refuses unread,
// if any.
func closeUnread(err error) {
	var ue *unguardableError
	if errors.As(err, &ue) && ue.pass != nil && ue.pass.Body != nil {
		ue.pass.Body.Close()
	}
}

// unreadable returns err, an answer's reader's error, as unguardable (why)
// when it says the answer is not the JSON its protocol sends; an error
// that says more (unguardable already, the upstream's own error event, a
// body past the bound) is returned as it is.
func unreadable(why string, err error) error {
	if err == nil || isUnguardable(err) || isUpstreamError(err) || errors.Is(err, errTooLarge) {
		return err
	}
	return unguardable(why, err)
}

// isUpstreamError reports whether err is the upstream's own error event.
func isUpstreamError(err error) bool {
	var se *upstreamStreamError
	return errors.As(err, &se)
}
