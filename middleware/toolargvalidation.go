package middleware

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/errfmt"
	"github.com/toolguard/toolguard/internal/modeltext"
	"github.com/toolguard/toolguard/internal/safetext"
	"github.com/toolguard/toolguard/internal/toolargs"
	"github.com/toolguard/toolguard/repair"
	"github.com/toolguard/toolguard/strip"
	"github.com/toolguard/toolguard/validation"
)

// UnknownToolPolicy says what [ToolArgValidation] does with a tool call whose
// name has no schema: neither a tool of the request nor a [WithSchema].
type UnknownToolPolicy int

const (
	// UnknownPass leaves the call untouched: not parsed, not stripped, not
	// validated. The agent loop or tool executor decides what to do with
	// it. This is the default.
	UnknownPass UnknownToolPolicy = iota
	// UnknownReject treats the call as invalid: the model is re-asked with
	// feedback listing the available tools and the closest name.
	UnknownReject
)

type validationConfig struct {
	maxRetries int
	strip      strip.Mode
	draft      validation.Draft
	schemas    map[string]any
	unknown    UnknownToolPolicy
	failClosed bool
	feedback   func(*validation.Error) string
	repair     repair.Repairer
	events     eventOption
}

type validationOption func(*validationConfig)

func (o validationOption) applyValidation(c *validationConfig) { o(c) }

// WithStripEmpty sets how [ToolArgValidation] removes the empty values (null,
// {}, []) models send for optional arguments. The default is
// [strip.SchemaAware]: only invalid calls are touched, and only where removing
// a value fixes violations without adding any.
func WithStripEmpty(mode strip.Mode) ValidationOption {
	switch mode {
	case strip.Off, strip.Recursive, strip.SchemaAware:
	default:
		panic(fmt.Sprintf("middleware: WithStripEmpty(%v): unknown mode", mode))
	}
	return validationOption(func(c *validationConfig) { c.strip = mode })
}

// WithDefaultDraft sets the JSON Schema draft for schemas without "$schema"
// (default [validation.Draft7]). A schema's own "$schema" always wins.
func WithDefaultDraft(d validation.Draft) ValidationOption {
	if !d.Known() {
		panic(fmt.Sprintf("middleware: WithDefaultDraft(%d): unknown draft", int(d)))
	}
	return validationOption(func(c *validationConfig) { c.draft = d })
}

// WithSchema validates calls of tool against schema (any form
// [validation.Compile] takes, or a *[validation.Schema]), whatever schema the
// request's tools declare for it. Use it for tools whose schema the model is
// not sent, or to validate more strictly than the schema the model sees.
func WithSchema(tool string, schema any) ValidationOption {
	if schema == nil {
		panic(fmt.Sprintf("middleware: WithSchema(%q, nil): the schema must not be nil", tool))
	}
	return validationOption(func(c *validationConfig) {
		if c.schemas == nil {
			c.schemas = make(map[string]any)
		}
		c.schemas[tool] = schema
	})
}

// WithUnknownTools sets what to do with calls of tools that have no schema
// (default [UnknownPass]).
func WithUnknownTools(p UnknownToolPolicy) ValidationOption {
	if p != UnknownPass && p != UnknownReject {
		panic(fmt.Sprintf("middleware: WithUnknownTools(%d): unknown policy", int(p)))
	}
	return validationOption(func(c *validationConfig) { c.unknown = p })
}

// WithFailClosed makes [ToolArgValidation] return an *[InvalidToolCallsError]
// instead of the last response when the model's tool calls are still invalid
// after the last re-ask, and a *[SchemaError] when a tool's schema cannot be
// compiled. The default is to fail open: hand on the last response (with
// empty values stripped) and let the tool report the problem. Fail closed
// where a human approves tool calls or a tool has side effects that bad
// arguments could trigger.
func WithFailClosed() ValidationOption {
	return validationOption(func(c *validationConfig) { c.failClosed = true })
}

// WithFeedback replaces the text the model receives for an invalid call
// (default [errfmt.Feedback]). fn must be deterministic and bound its output;
// [errfmt.Options]{...}.Feedback is a ready-made choice with other bounds.
func WithFeedback(fn func(*validation.Error) string) ValidationOption {
	if fn == nil {
		panic("middleware: WithFeedback(nil)")
	}
	return validationOption(func(c *validationConfig) { c.feedback = fn })
}

// WithRepair makes [ToolArgValidation] repair the arguments of a call that
// fails (not JSON, or invalid) before asking the model again, with r (for
// example repair.Default()). A repair is kept only when the repaired
// arguments, stripped per [WithStripEmpty], validate; then they are written
// back into the response and an [EventRepaired] lists the repairs (one
// repair.Repair.String() per entry of Paths). Otherwise the call is handled
// as without repair: the original arguments are stripped, validated and, if
// still invalid, fed back to the model.
//
// Repair is off by default: it changes what the model said without telling
// it, so the model never learns to send clean arguments, the transcript
// shows a call the model did not make, and "5" becoming 5 is a guess about
// intent, however safe. Turn it on where a model call costs more than that.
// r must not be nil.
func WithRepair(r repair.Repairer) ValidationOption {
	if r == nil {
		panic("middleware: WithRepair(nil)")
	}
	return validationOption(func(c *validationConfig) { c.repair = r })
}

// InvalidToolCallsError is returned by [ToolArgValidation] with [WithFailClosed]
// when tool calls are still invalid after the last re-ask. errors.As reaches
// each call's *[validation.Error].
type InvalidToolCallsError struct {
	Attempts int                 // model calls made
	Errors   []*validation.Error // one per invalid call of the last response
	Response *llms.ContentResponse
}

func (e *InvalidToolCallsError) Error() string {
	msgs := make([]string, len(e.Errors))
	for i, err := range e.Errors {
		msgs[i] = err.Error()
	}
	return fmt.Sprintf("middleware: tool calls still invalid after %d model calls: %s", e.Attempts, strings.Join(msgs, "; "))
}

// Unwrap returns the *[validation.Error] of each invalid call.
func (e *InvalidToolCallsError) Unwrap() []error {
	errs := make([]error, len(e.Errors))
	for i, err := range e.Errors {
		errs[i] = err
	}
	return errs
}

// SchemaError is returned by [ToolArgValidation] with [WithFailClosed] when a
// called tool's schema cannot be compiled.
type SchemaError struct {
	Tool string
	Err  error
}

func (e *SchemaError) Error() string {
	return fmt.Sprintf("middleware: schema of tool %q: %v", e.Tool, e.Err)
}

func (e *SchemaError) Unwrap() error { return e.Err }

// ToolArgValidation returns a middleware that makes sure the tool calls
// leaving the model have arguments their tool accepts.
//
// It checks each tool call of every choice against its tool's schema:
// [WithSchema], else the context's [WithToolSchemas], else the request
// tool's Function.Parameters (any form [validation.Compile] takes; nil
// accepts any JSON object). Schemas are compiled once per middleware and
// must not be modified after they are passed.
//
// Arguments must be a JSON object (empty means {}), decoded exactly. Empty
// values are stripped per [WithStripEmpty] and, with [WithRepair], formatting
// slips are repaired; cleaned arguments are written back into the response.
// While a call is invalid the model is asked again, up to [WithMaxRetries]
// times (default 2), with its rejected response replayed and each call
// answered by its violations ([errfmt.Feedback]) or, for a valid sibling, a
// note that it was not executed. Then it fails open, returning the last
// response, or with [WithFailClosed] an *[InvalidToolCallsError].
//
// Calls of unknown tools pass untouched ([WithUnknownTools]); calls of a
// tool whose schema does not compile pass too ([EventSchemaError]) unless
// WithFailClosed. Missing call ids are synthesized and written back. Model
// errors pass through. When streaming, text streams at once and only the
// returned calls are streamed, once accepted; [EventReask] tells the
// context's observers to discard what the call streamed so far. The package
// documentation ("Validation", "Streaming") has the details. The middleware
// is safe for concurrent use.
func ToolArgValidation(opts ...ValidationOption) Middleware {
	cfg := validationConfig{maxRetries: 2, strip: strip.SchemaAware, draft: validation.Draft7}
	for _, o := range opts {
		if o != nil {
			o.applyValidation(&cfg)
		}
	}
	if cfg.feedback == nil {
		cfg.feedback = errfmt.Feedback
	}
	return &toolArgValidation{cfg: cfg, cache: validation.NewCache(validation.WithDefaultDraft(cfg.draft))}
}

type toolArgValidation struct {
	cfg        validationConfig
	cache      *validation.Cache
	duplicates atomic.Bool // reported a request offering two tools of one name
}

const validationName = "ToolArgValidation"

func (m *toolArgValidation) emit(ctx context.Context, e Event) {
	e.Middleware = validationName
	report(ctx, m.cfg.events, e)
}

// emitFailOpen reports e, which lets a call through unchecked, loudly
// unless the middleware fails closed (its caller then gets an error).
func (m *toolArgValidation) emitFailOpen(ctx context.Context, e Event) {
	if m.cfg.failClosed {
		m.emit(ctx, e)
		return
	}
	e.Middleware = validationName
	reportLoud(ctx, m.cfg.events, e)
}

func (m *toolArgValidation) WrapModelCall(next Handler) Handler {
	return func(ctx context.Context, req *Request) (*llms.ContentResponse, error) {
		// Lets a ToolCallLimit inside report its misplacement.
		ctx = insideValidation(ctx)
		var tools toolSchemas     // built on the first response with tool calls
		opts := req.CallOptions() // once per call: it allocates
		attemptReq, st := req, streamFrom(opts)
		for attempt := 1; ; attempt++ {
			streamCtx, streamReq, gate := st.attempt(ctx, attemptReq)
			resp, err := next(streamCtx, streamReq)
			if err != nil {
				return nil, err
			}
			calls := collectToolCalls(resp, len(req.Messages))
			if len(calls) == 0 {
				m.reportEmpty(ctx, toolsOf(opts), resp, attempt)
				return resp, nil
			}
			if tools == nil {
				tools = m.toolSchemas(ctx, toolsOf(opts))
			}
			verdicts, err := m.checkAll(ctx, calls, tools, attempt)
			if err != nil {
				return nil, err
			}
			invalid := invalidErrors(verdicts)
			if len(invalid) == 0 {
				return gate.deliver(ctx, resp)
			}
			if attempt > m.cfg.maxRetries {
				m.emitFailOpen(ctx, Event{Kind: EventGiveUp, Attempt: attempt, Err: invalid[0]})
				if m.cfg.failClosed {
					return nil, &InvalidToolCallsError{Attempts: attempt, Errors: invalid, Response: resp}
				}
				return gate.deliver(ctx, resp)
			}
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			answers := make([]string, len(verdicts))
			for i, v := range verdicts {
				answers[i] = v.answer
				if answers[i] == "" {
					answers[i] = withOversized(modeltext.NotExecuted, oversized(&calls[i]))
				}
			}
			m.emit(ctx, Event{Kind: EventReask, Attempt: attempt + 1})
			attemptReq = &Request{
				Messages: withReplay(req.Messages, replay(resp, calls, answers)),
				Options:  req.Options,
			}
		}
	}
}

// toolSchemasKey is the context key of [WithToolSchemas].
type toolSchemasKey struct{}

// WithToolSchemas returns a copy of ctx that gives [ToolArgValidation] the
// schema of each named tool, to use instead of the Parameters of the
// request's tool of that name ([WithSchema] still wins). A schema is any
// form [validation.Compile] takes; a *[validation.Schema] keeps its
// [validation.Validator] hook.
//
// It is for code that sends the model its tools' schemas in another form:
// langchaingo's googleai provider needs Parameters to be a map, and a
// [validation.Typed] schema's Map has no hook, so an agent sends the map and
// passes the *Schema here. Package agent does this on every run. schemas must
// not be modified after the call.
func WithToolSchemas(ctx context.Context, schemas map[string]any) context.Context {
	return context.WithValue(ctx, toolSchemasKey{}, schemas)
}

// toolSchemas maps tool names to their schema sources: the request's tools,
// overridden by [WithToolSchemas], overridden by [WithSchema]. A nil value means
// "no schema: any object".
type toolSchemas map[string]any

func (m *toolArgValidation) toolSchemas(ctx context.Context, tools []llms.Tool) toolSchemas {
	fromCtx, _ := ctx.Value(toolSchemasKey{}).(map[string]any)
	ts := make(toolSchemas, len(tools)+len(fromCtx)+len(m.cfg.schemas))
	var dups []string
	for _, t := range tools {
		if t.Function != nil {
			if _, seen := ts[t.Function.Name]; seen && !slices.Contains(dups, t.Function.Name) {
				dups = append(dups, t.Function.Name)
			}
			ts[t.Function.Name] = t.Function.Parameters
		}
	}
	if len(dups) > 0 && m.duplicates.CompareAndSwap(false, true) {
		quoted := make([]string, len(dups))
		for i, d := range dups {
			quoted[i] = safetext.Quote(d, 80)
		}
		err := fmt.Errorf("%w: the request offers more than one tool named %s; calls are validated against the last one's schema, "+
			"and providers may refuse the request", ErrDuplicateTool, strings.Join(quoted, ", "))
		e := Event{Kind: EventMisconfigured, Middleware: validationName, Tool: dups[0], Err: err}
		reportLoud(ctx, m.cfg.events, e)
	}
	for _, layer := range []map[string]any{fromCtx, m.cfg.schemas} {
		for name, s := range layer {
			ts[name] = s
		}
	}
	return ts
}

func (ts toolSchemas) names() []string {
	names := make([]string, 0, len(ts))
	for n := range ts {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// verdict is what became of one tool call.
type verdict struct {
	err    *validation.Error // non-nil: the call is rejected
	answer string            // the tool message for a rejected call
}

func invalidErrors(vs []verdict) []*validation.Error {
	var errs []*validation.Error
	for _, v := range vs {
		if v.err != nil {
			errs = append(errs, v.err)
		}
	}
	return errs
}

func (m *toolArgValidation) checkAll(ctx context.Context, calls []toolCall, tools toolSchemas, attempt int) ([]verdict, error) {
	verdicts := make([]verdict, len(calls))
	for i := range calls {
		v, err := m.check(ctx, &calls[i], tools, attempt)
		if err != nil {
			return nil, err
		}
		verdicts[i] = v
	}
	return verdicts, nil
}

// check validates one call, strips it per the mode and writes stripped
// arguments back into the response.
func (m *toolArgValidation) check(ctx context.Context, c *toolCall, tools toolSchemas, attempt int) (verdict, error) {
	reject := func(e *validation.Error, answer string) verdict {
		e.Tool, e.CallID = c.name(), c.id
		if answer == "" {
			answer = m.cfg.feedback(e)
		}
		m.emit(ctx, Event{Kind: EventInvalid, Attempt: attempt, Tool: e.Tool, CallID: e.CallID, Err: e, Feedback: answer})
		return verdict{err: e, answer: answer}
	}
	if c.fn == nil {
		return reject(&validation.Error{Violations: []validation.Violation{{Keyword: "tool", Message: modeltext.NoFunction}}}, ""), nil
	}
	src, known := tools[c.fn.Name]
	if !known {
		m.emit(ctx, Event{Kind: EventUnknownTool, Attempt: attempt, Tool: c.fn.Name, CallID: c.id})
		if m.cfg.unknown == UnknownPass {
			return verdict{}, nil
		}
		names := tools.names()
		return reject(&validation.Error{Violations: []validation.Violation{{Keyword: "tool",
			Message: "no tool has this name; available tools: " + strings.Join(names, ", ")}}},
			errfmt.UnknownTool(c.fn.Name, names)), nil
	}
	var schema *validation.Schema
	if src != nil {
		s, err := m.cache.Get(src)
		if err != nil {
			m.emitFailOpen(ctx, Event{Kind: EventSchemaError, Attempt: attempt, Tool: c.fn.Name, CallID: c.id, Err: err})
			if m.cfg.failClosed {
				return verdict{}, &SchemaError{Tool: c.fn.Name, Err: err}
			}
			return verdict{}, nil // fail open: the call passes unvalidated
		}
		if u := s.IgnoredMetaSchema(); u != "" {
			m.emit(ctx, Event{Kind: EventSchemaFallback, Attempt: attempt, Tool: c.fn.Name, CallID: c.id,
				Err: fmt.Errorf("middleware: unknown $schema %s ignored; validated with the default draft", safetext.Quote(u, 200))})
		}
		schema = s
	}

	res := toolargs.Check(schema, []byte(c.fn.Arguments), toolargs.Options{Strip: m.cfg.strip, Repair: m.cfg.repair})
	if res.Changed {
		c.setArgs(string(res.Args))
	}
	if len(res.Repairs) > 0 {
		names := make([]string, len(res.Repairs))
		for i, r := range res.Repairs {
			names[i] = r.String()
		}
		m.emit(ctx, Event{Kind: EventRepaired, Attempt: attempt, Tool: c.fn.Name, CallID: c.id, Paths: names})
	}
	if len(res.Stripped) > 0 {
		m.emit(ctx, Event{Kind: EventStripped, Attempt: attempt, Tool: c.fn.Name, CallID: c.id, Paths: res.Stripped})
	}
	if res.Err == nil {
		return verdict{}, nil
	}
	if n := oversized(c); n > 0 && attempt <= m.cfg.maxRetries {
		// The re-ask shows these arguments as {}; the model is told why.
		res.Err.Violations = append(res.Err.Violations, validation.Violation{Keyword: "size", Message: modeltext.Oversized(n)})
	}
	return reject(res.Err, ""), nil
}
