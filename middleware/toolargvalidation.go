package middleware

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/errfmt"
	"github.com/toolguard/toolguard/internal/checked"
	injectedargs "github.com/toolguard/toolguard/internal/injected"
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
	closed     bool
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

// WithRepair sets how [ToolArgValidation] repairs the arguments of a call
// that fails (not JSON, or invalid) before asking the model again. The
// default is [repair.Coercions]: the arguments object sent as a JSON string
// is decoded, and where the schema rejects a string, "5" or "true" where it
// wants a number, integer or boolean become 5 and true, "True" or "FALSE"
// where it wants a boolean become true and false, and an array or object
// sent as a string, in JSON ("[\"M\", \"L\"]") or as a Python literal
// ("['M', 'L']"), is decoded where it wants an array or object — what the
// schema alone decides. A single value where an array is wanted and an enum
// member in another case are re-asked. The package documentation,
// "Coercions", has the table, beside pydantic's default lax mode
// (LangChain's path for typed tools). repair.Default() adds the text repairs
// (code fences, prose, trailing commas, Python literals); repair.None()
// turns repair off, so that every failing call costs a re-ask.
//
// A repair is kept only when the repaired arguments, stripped per
// [WithStripEmpty], validate; then they are written back into the response
// and an [EventRepaired] lists the repairs (one repair.Repair.String() per
// entry of Paths), as [EventStripped] lists what stripping removed.
// Otherwise the call is handled as without repair: the original arguments
// are stripped, validated and, if still invalid, fed back to the model. A
// valid call is never touched. r must not be nil.
func WithRepair(r repair.Repairer) ValidationOption {
	if r == nil {
		panic("middleware: WithRepair(nil)")
	}
	return validationOption(func(c *validationConfig) { c.repair = r })
}

// WithClosedObjects makes [ToolArgValidation] treat every object schema that
// lists its properties and says nothing about others as closed, as if it
// declared "additionalProperties": false (OpenAI's strict mode closes every
// object): a parameter the tool does not have is a violation, and the model
// is re-asked to drop it, where by default (as JSON Schema says) it passes.
// [validation.WithClosedObjects] gives the exact rule; objects combined with
// allOf, $ref or if/then, and free-form objects, stay open. A
// *[validation.Schema] is used as compiled (compile it with
// validation.WithClosedObjects yourself); [validation.Typed] schemas are
// closed already.
//
// It is off by default because it is unsafe for a schema that does not list
// every parameter its tool accepts: 85 of the 4,439 distinct ground-truth
// calls of the BFCL corpus pass a parameter their schema omits (81 of them
// in BFCL's multi-turn tests, whose API docs leave parameters out), and
// closed objects would reject them. Turn it on for tools whose schemas are
// complete, such as those generated from code.
func WithClosedObjects() ValidationOption {
	return validationOption(func(c *validationConfig) { c.closed = true })
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
// Arguments must be a JSON object (empty means {}), decoded exactly. A call
// that fails is stripped of empty values ([WithStripEmpty]) and coerced ("5"
// for a number, "true" for a boolean, a double-encoded object: [WithRepair]);
// cleaned arguments are written back into the response.
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
	cfg := validationConfig{maxRetries: 2, strip: strip.SchemaAware, draft: validation.Draft7, repair: repair.Coercions()}
	for _, o := range opts {
		if o != nil {
			o.applyValidation(&cfg)
		}
	}
	if cfg.feedback == nil {
		cfg.feedback = errfmt.Feedback
	}
	copts := []validation.Option{validation.WithDefaultDraft(cfg.draft)}
	if cfg.closed {
		copts = append(copts, validation.WithClosedObjects())
	}
	return &toolArgValidation{cfg: cfg, cache: validation.NewCache(copts...)}
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
				m.reportForged(ctx, calls, verdicts, attempt, true)
				return gate.deliver(ctx, resp)
			}
			if attempt > m.cfg.maxRetries {
				m.emitFailOpen(ctx, Event{Kind: EventGiveUp, Attempt: attempt, Err: invalid[0]})
				m.reportForged(ctx, calls, verdicts, attempt, !m.cfg.failClosed)
				if m.cfg.failClosed {
					return nil, &InvalidToolCallsError{Attempts: attempt, Errors: invalid, Response: resp}
				}
				return gate.deliver(ctx, resp)
			}
			m.reportForged(ctx, calls, verdicts, attempt, false)
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
				Messages: withReplay(req.Messages, replay(ctx, resp, calls, answers)),
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
	forged []string          // paths of forged injected arguments dropped from the call
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
			// agents.Executor runs "REFUND" as refund: a tool's injected
			// arguments are dropped from a call it may run all the same.
			return verdict{forged: dropForged(c, InjectedArgsFrom(ctx, c.fn.Name))}, nil
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

	injected := InjectedArgsFrom(ctx, c.fn.Name)
	forged := dropForged(c, injected)
	res := toolargs.Check(schema, []byte(c.fn.Arguments), toolargs.Options{Strip: m.cfg.strip, Repair: m.cfg.repair})
	if res.Changed {
		c.setArgs(string(res.Args))
	}
	redacted := false
	if len(injected) > 0 {
		if len(res.Repairs) > 0 {
			forged = append(forged, dropForged(c, injected)...) // a repair may have made a forged value readable
		}
		before := res.Err
		res.Err = injectedargs.Redact(res.Err, injected)
		redacted = before != nil && res.Err != before
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
		if !redacted && m.runSchema(ctx, c.fn.Name) {
			checked.Record(ctx, c.id, c.fn.Name, c.fn.Arguments)
		}
		return verdict{forged: forged}, nil
	}
	if n := oversized(c); n > 0 && attempt <= m.cfg.maxRetries {
		// The re-ask shows these arguments as {}; the model is told why.
		res.Err.Violations = append(res.Err.Violations, validation.Violation{Keyword: "size", Message: modeltext.Oversized(n)})
	}
	v := reject(res.Err, "")
	v.forged = forged
	return v, nil
}

// dropForged removes from c's arguments the values the model sent for the
// tool's injected arguments ([WithInjectedArgs]) and returns their paths.
func dropForged(c *toolCall, injected []string) []string {
	if len(injected) == 0 {
		return nil
	}
	args, forged := injectedargs.Drop(c.fn.Arguments, injected)
	if len(forged) > 0 {
		c.setArgs(args)
	}
	return forged
}

// reportForged reports the forged injected arguments dropped from calls
// ([EventForgedArgument]), by path only. Those of a response handed on
// inside an agent's run (handedOn) are left to the agent, which reports
// them with the tool call they concern (on its execute_tool span); the
// others — a response re-asked, or no agent — are reported here.
func (m *toolArgValidation) reportForged(ctx context.Context, calls []toolCall, verdicts []verdict, attempt int, handedOn bool) {
	for i, v := range verdicts {
		if len(v.forged) == 0 {
			continue
		}
		c := &calls[i]
		if handedOn && checked.RecordForged(ctx, c.id, c.name(), v.forged) {
			continue
		}
		m.emit(ctx, Event{Kind: EventForgedArgument, Attempt: attempt, Tool: c.name(), CallID: c.id, Paths: v.forged})
	}
}

// runSchema reports whether name's schema is the one the context's
// [WithToolSchemas] gives (not overridden by [WithSchema]): only then does a
// call this middleware accepted need no second check by the agent's tool
// stage.
func (m *toolArgValidation) runSchema(ctx context.Context, name string) bool {
	if _, over := m.cfg.schemas[name]; over {
		return false
	}
	fromCtx, _ := ctx.Value(toolSchemasKey{}).(map[string]any)
	_, ok := fromCtx[name]
	return ok
}
