package httpguard

import (
	"encoding/json"
	"errors"
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
}

// unguardable returns an *unguardableError for why, with err's details.
func unguardable(why string, err error) error {
	return &unguardableError{why: why, err: err}
}

func (e *unguardableError) Error() string {
	if e.err == nil {
		return "httpguard: the response cannot be guarded: " + e.why
	}
	return "httpguard: the response cannot be guarded: " + e.why + ": " + e.err.Error()
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
