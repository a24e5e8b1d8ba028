package guard

import (
	"bytes"
	"context"
	"slices"
	"sync"

	"github.com/toolguard/toolguard/internal/canonjson"
)

// CallRecord is how the model stage tells an agent loop's tool stage what
// it did to the tool calls of a response it handed on: which calls
// [ToolArgValidation] validated against the loop's own tool schemas (so the
// tool stage does not validate and decode them a second time), and which
// lost a value the model sent for an injected argument (so the tool stage
// reports the security event once, with the tool call it concerns).
//
// The loop starts a record per run ([WithCallRecord]); ToolArgValidation
// records each call it accepts whose schema came from the context's
// [WithToolSchemas]; the loop runs a call unchecked only when
// [CallRecord.Validated] finds the same id, tool name and arguments (see
// there). Anything else — a call nothing validated, arguments a tool
// middleware replaced, a schema given to the middleware some other way — is
// checked again by the loop. A CallRecord is safe for concurrent use.
type CallRecord struct {
	mu     sync.Mutex
	calls  map[string]call       // by call id
	idless []call                // calls without an id (Gemini's), in the order recorded
	forged map[string]forgedCall // by call id: forged injected arguments dropped (forged.go)
}

type call struct{ name, args string }

type callRecordKey struct{}

// WithCallRecord returns a copy of ctx carrying a new, empty record, and
// the record.
func WithCallRecord(ctx context.Context) (context.Context, *CallRecord) {
	l := &CallRecord{}
	return context.WithValue(ctx, callRecordKey{}, l), l
}

// recordValidated notes, in the record ctx carries (if any), that the call
// id of tool name with exactly args was validated against the run's schema
// of name. A call without an id (Gemini sends none) is kept by tool name
// and arguments.
func recordValidated(ctx context.Context, id, name, args string) {
	l, _ := ctx.Value(callRecordKey{}).(*CallRecord)
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	c := call{name: name, args: args}
	if id == "" {
		if !slices.Contains(l.idless, c) {
			l.idless = append(l.idless, c)
		}
		return
	}
	if l.calls == nil {
		l.calls = make(map[string]call)
	}
	l.calls[id] = c
}

// Validated reports whether the call id of tool name with args was
// validated against the run's schema of name: a call of that id (or, for a
// call without one, any call) of that tool whose arguments were args — the
// same bytes, or the same JSON value with every number written digit for
// digit as it was (RFC 8785's form with numbers as written), which a host
// that decodes arguments and encodes them again (genai's FunctionCall.Args,
// a map) hands on. Arguments with a name twice in an object, or a number
// written otherwise (5.0 for 5, a double's rounding), are not the same. A
// nil record has nothing.
func (l *CallRecord) Validated(id, name, args string) bool {
	if l == nil {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if id == "" {
		for _, c := range l.idless {
			if c.name == name && sameArgs(c.args, args) {
				return true
			}
		}
		return false
	}
	c, ok := l.calls[id]
	return ok && c.name == name && sameArgs(c.args, args)
}

// sameArgs reports whether a and b are the same arguments: the same bytes,
// or the same canonical form with numbers as written.
func sameArgs(a, b string) bool {
	if a == b {
		return true
	}
	ca, err := canonjson.Exact([]byte(a))
	if err != nil {
		return false
	}
	cb, err := canonjson.Exact([]byte(b))
	return err == nil && bytes.Equal(ca, cb)
}

// Forget removes everything recorded so far; an agent loop calls it after
// each batch so a run's record never holds more than one turn.
func (l *CallRecord) Forget() {
	if l == nil {
		return
	}
	l.mu.Lock()
	clear(l.calls)
	l.idless = nil
	clear(l.forged)
	l.mu.Unlock()
}

// CallRecordFrom returns the record ctx carries ([WithCallRecord]), or
// nil: a nil record has nothing and records nothing.
func CallRecordFrom(ctx context.Context) *CallRecord {
	l, _ := ctx.Value(callRecordKey{}).(*CallRecord)
	return l
}
