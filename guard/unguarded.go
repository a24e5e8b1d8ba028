package guard

import (
	"context"
	"fmt"
)

// EventUnguarded: a stage could not read a response (the codec's
// [ResponseInfo].Unreadable says why: an encoding it cannot decode, a shape it does not
// know, a body past its bound, a key given twice), so it could neither
// validate nor count its tool calls. Err is the reason. With
// [WithFailClosed] the stage refuses the response with an
// *[UnguardableError]; otherwise the response passes on as it came, and
// the event is logged to slog.Default at Warn when no handler is set
// ([WithEventHandler], [WithEvents]). It is reported every time, by each
// stage that could not do its work ([ToolArgValidation] and
// [ToolCallLimit] both, when both are stacked and both fail open).
const EventUnguarded EventKind = "unguarded"

// UnguardableError is returned by [ToolArgValidation] and [ToolCallLimit]
// with [WithFailClosed] for a response they cannot read ([ResponseInfo].Unreadable),
// instead of passing it on unchecked. errors.As reaches the codec's reason
// through Unwrap.
type UnguardableError struct {
	Middleware string // the stage that refused the response
	Err        error  // why the response cannot be read, as the codec says
}

// Error names the stage and the reason.
func (e *UnguardableError) Error() string {
	return fmt.Sprintf("guard: %s refused a response it cannot read: %v", e.Middleware, e.Err)
}

// Unwrap returns the codec's reason.
func (e *UnguardableError) Unwrap() error { return e.Err }

// passUnreadable is what the stage who does with a response it cannot
// read (why): refuse it when it fails closed, else pass it on with a loud
// [EventUnguarded].
func passUnreadable[Resp any](ctx context.Context, who string, failClosed bool, events eventOption, resp Resp, attempt int, why error) (Resp, error) {
	e := Event{Kind: EventUnguarded, Middleware: who, Attempt: attempt, Err: why}
	if failClosed {
		report(ctx, events, e)
		var zero Resp
		return zero, &UnguardableError{Middleware: who, Err: why}
	}
	reportLoud(ctx, events, e)
	return resp, nil
}
