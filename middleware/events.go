package middleware

import (
	"context"
	"log/slog"
	"time"
)

// EventKind says what an [Event] reports.
type EventKind string

// The events the built-in middlewares report through [WithEventHandler].
const (
	// EventStripped: [ToolArgValidation] removed empty values (null, {}, [])
	// from a call's arguments. Paths lists the JSON Pointers removed.
	EventStripped EventKind = "stripped"
	// EventRepaired: [ToolArgValidation] repaired a call's arguments
	// ([WithRepair]) and the repaired arguments validate. Paths lists the
	// repairs, each as repair.Repair.String(): the kind, followed by " at "
	// and a JSON Pointer for a repair inside the arguments
	// ("code_fence", "number_string at /days").
	EventRepaired EventKind = "repaired"
	// EventInvalid: a tool call failed validation. Err is a
	// *validation.Error naming every violation, Feedback the text the model
	// is sent about the call if it is asked again.
	EventInvalid EventKind = "invalid"
	// EventUnknownTool: a tool call names a tool that has no schema. It is
	// passed on untouched ([UnknownPass]) or rejected ([UnknownReject]).
	EventUnknownTool EventKind = "unknown_tool"
	// EventSchemaError: a tool's schema could not be compiled. Err says why.
	// The tool's calls pass unvalidated, or fail with [WithFailClosed].
	// Failing open, it is logged at Warn when no handler is set
	// ([WithEventHandler]).
	EventSchemaError EventKind = "schema_error"
	// EventSchemaFallback: a tool's schema declares a "$schema" that names
	// no draft toolguard knows; it was compiled and is enforced with the
	// default draft ([WithDefaultDraft]) instead. Err says which URL. It is
	// reported for each call of the tool, like [EventSchemaError].
	EventSchemaFallback EventKind = "schema_fallback"
	// EventReask: [ToolArgValidation] calls the model again with feedback,
	// or [ToolCallLimit] ([ExitContinue]) with its blocked calls answered.
	// Attempt is the number of the attempt about to be made (2 for the
	// first re-ask). It is reported before the re-ask's request is made: a
	// streaming caller discards what it streamed for the call so far
	// (package documentation, "Streaming").
	EventReask EventKind = "reask"
	// EventRetry: a model call failed with an error [ModelRetry] retries.
	// Attempt is the failed attempt, Err its error, Wait the pause before
	// the next attempt.
	EventRetry EventKind = "retry"
	// EventGiveUp: a middleware gave up on a model call: [ToolArgValidation]
	// after its last re-ask (even when it fails open), [ModelRetry] on every
	// failure it returns (a permanent error after one attempt included).
	// Attempt is the number of model calls made, Err the last error (for
	// ToolArgValidation, the last *validation.Error). A ToolArgValidation
	// failing open returns the invalid calls with a nil error: its give-up
	// is then logged at Warn when no handler is set ([WithEventHandler]).
	EventGiveUp EventKind = "give_up"
	// EventLimit: [ToolCallLimit] blocked tool calls, or [ModelCallLimit]
	// a model call. Err is a *[LimitExceededError].
	EventLimit EventKind = "limit"
	// EventStoreError: a limiter's [ThreadStore] failed to reserve calls.
	// Err is a *[StoreError]. The model call fails with it, or passes
	// uncounted in the thread with [WithStoreFailOpen].
	EventStoreError EventKind = "store_error"
)

// Event is one notable thing a middleware did during a model call. Fields
// that do not apply to its Kind are zero.
type Event struct {
	Kind       EventKind
	Middleware string // "ToolArgValidation", "ModelRetry", "ToolCallLimit" or "ModelCallLimit"
	Attempt    int    // 1-based model-call attempt within this middleware
	Tool       string // the tool call's function name, when the event concerns one call
	CallID     string // the tool call's id (synthesized when the model sent none)
	Paths      []string
	Wait       time.Duration
	Err        error
	// Feedback is the tool message toolguard writes for the model about the
	// call (EventInvalid). It quotes what the model sent.
	Feedback string
}

// LogValue renders the event as a group of attributes, omitting zero fields.
func (e Event) LogValue() slog.Value {
	attrs := make([]slog.Attr, 0, 8)
	attrs = append(attrs, slog.String("kind", string(e.Kind)), slog.String("middleware", e.Middleware))
	if e.Attempt != 0 {
		attrs = append(attrs, slog.Int("attempt", e.Attempt))
	}
	if e.Tool != "" {
		attrs = append(attrs, slog.String("tool", e.Tool))
	}
	if e.CallID != "" {
		attrs = append(attrs, slog.String("call_id", e.CallID))
	}
	if len(e.Paths) > 0 {
		attrs = append(attrs, slog.Any("paths", e.Paths))
	}
	if e.Wait != 0 {
		attrs = append(attrs, slog.Duration("wait", e.Wait))
	}
	if e.Err != nil {
		attrs = append(attrs, slog.String("err", e.Err.Error()))
	}
	return slog.GroupValue(attrs...)
}

// LogEvents returns an event handler for [WithEventHandler] that logs each
// event to l: schema errors, give-ups, limits and store errors at Warn, the rest at Info.
func LogEvents(l *slog.Logger) func(ctx context.Context, e Event) {
	return func(ctx context.Context, e Event) {
		level := slog.LevelInfo
		switch e.Kind {
		case EventSchemaError, EventSchemaFallback, EventGiveUp, EventLimit, EventMisconfigured, EventEmptyResponse, EventStoreError:
			level = slog.LevelWarn
		}
		l.LogAttrs(ctx, level, "toolguard: "+string(e.Kind), slog.Any("event", e))
	}
}
