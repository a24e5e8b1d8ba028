package guard

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
	// EventRepaired: [ToolArgValidation] repaired a call's arguments and
	// the repaired arguments validate: by default a coercion
	// (repair.Coercions: "number_string at /days", "bool_string at /open",
	// "bool_any_case at /open", "json_string at /sizes", "python_string at
	// /sizes", "double_encoded"), with [WithRepair] whatever its Repairer
	// made. Paths lists the repairs, each as repair.Repair.String(): the
	// kind, followed by " at " and a JSON Pointer for a repair inside the
	// arguments ("code_fence", "number_string at /days").
	EventRepaired EventKind = "repaired"
	// EventInvalid: a tool call failed validation. Err is a
	// *validation.Error naming every violation, Feedback the text the model
	// is sent about the call if it is asked again.
	EventInvalid EventKind = "invalid"
	// EventProviderMalformed: the provider itself refused a tool call the
	// model wrote, because it could not read it (Groq's 400
	// tool_use_failed, Ollama's "error parsing tool call", Gemini's
	// finishReason MALFORMED_FUNCTION_CALL), as the codec's
	// [MalformedReader] reports it. [ToolArgValidation] takes the attempt
	// for one with an invalid call: it re-asks while retries remain, and
	// after the last one gives up as for invalid calls. Err is the
	// *validation.Error the feedback is written from (its violation quotes
	// the provider's reason), Feedback the text the model reads.
	EventProviderMalformed EventKind = "provider_malformed"
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
	// EventHistoryRepaired: an adapter repaired the history of a request
	// before sending it, because the provider would refuse it (a tool call
	// without a result, a result without its call, a call id given twice,
	// past arguments that are not a JSON object, a null input): package
	// httpguard's HistoryCheck. Err says what was wrong (an
	// *httpguard.HistoryError), Tool and CallID name the call, Paths lists
	// the JSON Pointers of what the repair changed in the request
	// ("/messages/3/tool_calls/0/function/arguments"), the message index
	// among them. Arguments are never invented and nothing the client
	// sent is dropped: see HistoryCheck.
	EventHistoryRepaired EventKind = "history_repaired"
)

// Events of the tool stage: what happens between an accepted tool call and
// its tool, in an agent loop's tool middlewares (package agent). They reach
// the agent's event handler (toolstage.WithEventHandler) and the observers of
// the run (otelguard adds them to the execute_tool span). Middleware names
// the tool middleware ("ToolRetry", …) or "agent"; Attempt is the tool
// attempt.
const (
	// EventToolRetry: a failed tool call is run again. Attempt is the
	// failed attempt, Err its error, Wait the pause before the next one.
	EventToolRetry EventKind = "tool_retry"
	// EventToolOutcomeUnknown: a call of a tool that is not idempotent
	// failed in a way that leaves its outcome unknown (a timeout, a
	// connection lost after the request went out). It is not repeated; the
	// model is told to check before calling again. Err is the error.
	EventToolOutcomeUnknown EventKind = "tool_outcome_unknown"
	// EventToolDenied: the tool middlewares answered a call with an error
	// without running the tool (a policy refused it). Err is the error the
	// model reads.
	EventToolDenied EventKind = "tool_denied"
	// EventArgsRewritten: a tool middleware replaced a call's arguments and
	// the tool ran with them. Paths lists the top-level properties that
	// changed, as JSON Pointers.
	EventArgsRewritten EventKind = "args_rewritten"
	// EventArgsRejected: arguments a tool middleware put in a call do not
	// validate against the tool's schema, so the tool did not run. Err is
	// the *validation.Error, or for a tool with injected arguments (whose
	// violations may quote an injected value) the *toolstage.ArgsRejectedError
	// wrapping it, whose text does not. Also reported when a call's
	// injected arguments could not be set (toolstage.Inject): Err is then an
	// *toolstage.InjectError, whose text never quotes the cause.
	EventArgsRejected EventKind = "args_rejected"
	// EventRunStopped: a tool middleware ended the run (toolstage.ErrStopRun).
	// Err is its error.
	EventRunStopped EventKind = "run_stopped"
	// EventApprovalPending: a call waits for a person's decision
	// (toolstage.WithApproval); the run pauses after its batch with an
	// toolstage.Interrupt. Tool and CallID name the call.
	EventApprovalPending EventKind = "approval_pending"
	// EventApprovalRefused: agent.Resume refused to resume: decisions that
	// do not fit the pending calls, an invalid edit, or an interrupt that
	// is forged, replayed or stale. Nothing ran. Err says why; CallID names
	// the call when the refusal concerns one.
	EventApprovalRefused EventKind = "approval_refused"
	// EventForgedArgument: a security event. The model sent a value for
	// an injected argument of the tool — a property the program supplies
	// and the model must neither see nor set (toolstage.Inject,
	// [WithInjectedArgs]), such as the caller's user id. The value was
	// dropped (the tool gets the injected one) and is never reported:
	// Paths lists the properties, as JSON Pointers. It is reported once
	// per forged call: by the agent's tool stage for a call of its run
	// (Middleware "ToolArgValidation" when the model stage dropped the
	// value, "agent" when the call reached the tool stage with it), on the
	// call's execute_tool span, whether or not the call then runs; by
	// [ToolArgValidation] itself for a response it re-asks (Attempt is
	// the model-call attempt) or when no agent runs it.
	EventForgedArgument EventKind = "forged_argument"
)

// Event is one notable thing a middleware did during a model call. Fields
// that do not apply to its Kind are zero.
type Event struct {
	Kind       EventKind
	Middleware string // "ToolArgValidation", "ModelRetry", "ToolCallLimit", "ModelCallLimit"; in the tool stage "agent" or the tool middleware's name
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
// event to l: schema errors, give-ups, limits, store errors, misconfiguration,
// responses that could not be read (unguarded),
// the tool stage's refusals (a denied call, rejected replaced arguments,
// an unknown outcome, a stopped run, a refused resume) and forged injected
// arguments at Warn, the rest at Info.
func LogEvents(l *slog.Logger) func(ctx context.Context, e Event) {
	return func(ctx context.Context, e Event) {
		level := slog.LevelInfo
		switch e.Kind {
		case EventSchemaError, EventSchemaFallback, EventGiveUp, EventLimit, EventMisconfigured, EventEmptyResponse, EventStoreError, EventUnguarded,
			EventToolOutcomeUnknown, EventToolDenied, EventArgsRejected, EventRunStopped, EventApprovalRefused, EventForgedArgument:
			level = slog.LevelWarn
		}
		l.LogAttrs(ctx, level, "toolguard: "+string(e.Kind), slog.Any("event", e))
	}
}
