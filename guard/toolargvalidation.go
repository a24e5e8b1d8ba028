package guard

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/toolguard/toolguard/errfmt"
	"github.com/toolguard/toolguard/internal/safetext"
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
		panic(fmt.Sprintf("guard: WithStripEmpty(%v): unknown mode", mode))
	}
	return validationOption(func(c *validationConfig) { c.strip = mode })
}

// WithDefaultDraft sets the JSON Schema draft for schemas without "$schema"
// (default [validation.Draft7]). A schema's own "$schema" always wins.
func WithDefaultDraft(d validation.Draft) ValidationOption {
	if !d.Known() {
		panic(fmt.Sprintf("guard: WithDefaultDraft(%d): unknown draft", int(d)))
	}
	return validationOption(func(c *validationConfig) { c.draft = d })
}

// WithSchema validates calls of tool against schema (any form
// [validation.Compile] takes, or a *[validation.Schema]), whatever schema the
// request's tools declare for it. Use it for tools whose schema the model is
// not sent, or to validate more strictly than the schema the model sees.
func WithSchema(tool string, schema any) ValidationOption {
	if schema == nil {
		panic(fmt.Sprintf("guard: WithSchema(%q, nil): the schema must not be nil", tool))
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
		panic(fmt.Sprintf("guard: WithUnknownTools(%d): unknown policy", int(p)))
	}
	return validationOption(func(c *validationConfig) { c.unknown = p })
}

// WithFailClosed makes [ToolArgValidation] return an *[InvalidToolCallsError]
// instead of the last response when the model's tool calls are still invalid
// after the last re-ask, and a *[SchemaError] when a tool's schema cannot be
// compiled. It makes ToolArgValidation and [ToolCallLimit] return an
// *[UnguardableError] for a response the codec cannot read ([ResponseInfo].Unreadable),
// whose calls they could neither check nor count ([ModelCallLimit], which
// reads no calls, ignores it). The default is to fail open: hand on the last
// response (with empty values stripped) and let the tool report the
// problem; a response that cannot be read passes with an [EventUnguarded].
// Fail closed where a human approves tool calls or a tool has side effects
// that bad arguments could trigger.
func WithFailClosed() FailClosedOption {
	return failClosedOption{}
}

// FailClosedOption is the option [ToolArgValidation] and the limits take:
// [WithFailClosed].
type FailClosedOption interface {
	ValidationOption
	LimitOption
}

type failClosedOption struct{}

func (failClosedOption) applyValidation(c *validationConfig) { c.failClosed = true }
func (failClosedOption) applyLimit(c *limitConfig)           { c.failClosed = true }

// WithFeedback replaces the text the model receives for an invalid call
// (default [errfmt.Feedback]). fn must be deterministic and bound its output;
// [errfmt.Options]{...}.Feedback is a ready-made choice with other bounds.
func WithFeedback(fn func(*validation.Error) string) ValidationOption {
	if fn == nil {
		panic("guard: WithFeedback(nil)")
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
// A repair is kept when the repaired arguments, stripped per
// [WithStripEmpty], validate, or when they remove violations and add none
// (a "5" coerced beside a missing required property): then they are
// written back into the response and an [EventRepaired] lists the repairs
// (one repair.Repair.String() per entry of Paths), as [EventStripped] lists
// what stripping removed, and a call still invalid is fed back with only
// the violations the repairs leave, so the model is asked about nothing
// toolguard fixed itself. Otherwise the call is handled as without repair:
// the original arguments are stripped, validated and, if still invalid,
// fed back to the model. A valid call is never touched. r must not be nil.
func WithRepair(r repair.Repairer) ValidationOption {
	if r == nil {
		panic("guard: WithRepair(nil)")
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
	// Response is the last response, as the adapter's type (package
	// middleware's *llms.ContentResponse, say), with empty values
	// stripped.
	Response any
}

// Error says how many model calls were made and lists each invalid call's
// violations.
func (e *InvalidToolCallsError) Error() string {
	msgs := make([]string, len(e.Errors))
	for i, err := range e.Errors {
		msgs[i] = err.Error()
	}
	return fmt.Sprintf("guard: tool calls still invalid after %d model calls: %s", e.Attempts, strings.Join(msgs, "; "))
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

// Error names the tool and why its schema does not compile.
func (e *SchemaError) Error() string {
	return fmt.Sprintf("guard: schema of tool %q: %v", e.Tool, e.Err)
}

// Unwrap returns the compilation error.
func (e *SchemaError) Unwrap() error { return e.Err }

// ToolArgValidation returns a middleware that makes sure the tool calls
// leaving the model have arguments their tool accepts; c reads and writes
// the host's requests and responses.
//
// It checks each tool call of a response against its tool's schema:
// [WithSchema], else the context's [WithToolSchemas], else the request
// tool's schema ([RequestInfo].Tools: any form [validation.Compile] takes; nil
// accepts any JSON object). Schemas are compiled once per middleware and
// must not be modified after they are passed.
//
// Arguments must be a JSON object (empty means {}), decoded exactly. A call
// that fails is stripped of empty values ([WithStripEmpty]) and coerced ("5"
// for a number, "true" for a boolean, a list sent as a string, a
// double-encoded object: [WithRepair]); cleaned arguments are written back
// into the response ([Codec.Accept]). While a call is invalid the model is
// asked again, up to [WithMaxRetries] times (default 2), with its rejected
// response replayed and each call answered by its violations
// ([errfmt.Feedback]) or, for a valid sibling, a note that it was not
// executed ([Codec.Reask]). Then it fails open, returning the last
// response, or with [WithFailClosed] an *[InvalidToolCallsError].
//
// A codec that is a [MalformedReader] reports the provider's own refusal
// of a call it could not read (an error or a response): such an attempt
// counts as one with an invalid call ([EventProviderMalformed]), re-asked
// with the model's text as its turn and the feedback as the user's; after
// the last re-ask the refusal is returned as it came (failing open) or an
// *[InvalidToolCallsError].
//
// Calls of unknown tools pass untouched ([WithUnknownTools]); calls of a
// tool whose schema does not compile pass too ([EventSchemaError]) unless
// WithFailClosed, and so does a response the codec cannot read
// ([ResponseInfo].Unreadable, [EventUnguarded]). Model errors pass through. When the request streams, text
// streams at once and only the returned calls are streamed, once accepted;
// [EventReask] tells the context's observers to discard what the call
// streamed so far. The middleware is safe for concurrent use.
func ToolArgValidation[Req, Resp any](c Codec[Req, Resp], opts ...ValidationOption) Middleware[Req, Resp] {
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
	m := &toolArgValidation{cfg: cfg, cache: validation.NewCache(copts...)}
	return func(next Handler[Req, Resp]) Handler[Req, Resp] {
		return func(ctx context.Context, req Req) (Resp, error) {
			return validateCalls(ctx, m, c, next, req)
		}
	}
}

type toolArgValidation struct {
	cfg        validationConfig
	cache      *validation.Cache
	duplicates atomic.Bool // reported a request offering two tools of one name
	advised    atomic.Bool // reported what the codec's Advisor says of the tools offered
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

// validateCalls is one logical call through a ToolArgValidation: the loop
// of attempts ([reask]), each checked and, while invalid, re-asked.
func validateCalls[Req, Resp any](ctx context.Context, m *toolArgValidation, c Codec[Req, Resp], next Handler[Req, Resp], req Req) (Resp, error) {
	// Lets a ToolCallLimit inside report its misplacement.
	ctx = insideValidation(ctx)
	info := c.Request(ctx, req)
	adv, _ := any(c).(Advisor)
	var tools toolSchemas // made on the first response with tool calls
	return reask(ctx, info.Stream, HoldToolCalls, next, req, func(attempt int, gate Gate[Resp], resp Resp, err error) turn[Req, Resp] {
		if err != nil {
			if mr, mal, ok := malformedOf(c, req, resp, err); ok {
				return reaskMalformed(ctx, m, mr, req, gate, resp, err, mal, attempt)
			}
			return turn[Req, Resp]{err: err}
		}
		got := c.Response(req, resp)
		if got.Unreadable != nil {
			resp, err := passUnreadable(ctx, validationName, m.cfg.failClosed, m.cfg.events, resp, attempt, got.Unreadable)
			return turn[Req, Resp]{resp: resp, err: err}
		}
		calls := got.Calls
		if len(calls) == 0 {
			if mr, mal, ok := malformedOf(c, req, resp, nil); ok {
				return reaskMalformed(ctx, m, mr, req, gate, resp, nil, mal, attempt)
			}
			m.reportEmpty(ctx, adv, info.Tools, got.Text, attempt)
			return turn[Req, Resp]{resp: resp}
		}
		if !tools.made {
			m.checkTools(ctx, adv, info.Tools)
			tools = m.toolSchemas(ctx, info.Tools)
		}
		verdicts, err := m.checkAll(ctx, calls, tools, attempt)
		if err != nil {
			return turn[Req, Resp]{err: err}
		}
		invalid := invalidErrors(verdicts)
		if len(invalid) == 0 {
			m.reportForged(ctx, calls, verdicts, attempt, true)
			return acceptAndDeliver(ctx, c, gate, resp, verdicts, nil)
		}
		if attempt > m.cfg.maxRetries {
			m.emitFailOpen(ctx, Event{Kind: EventGiveUp, Attempt: attempt, Err: invalid[0]})
			m.reportForged(ctx, calls, verdicts, attempt, !m.cfg.failClosed)
			if m.cfg.failClosed {
				return acceptAndDeliver(ctx, c, nil, resp, verdicts, func(resp Resp) error {
					return &InvalidToolCallsError{Attempts: attempt, Errors: invalid, Response: resp}
				})
			}
			return acceptAndDeliver(ctx, c, gate, resp, verdicts, nil)
		}
		m.reportForged(ctx, calls, verdicts, attempt, false)
		return turn[Req, Resp]{again: func() (Req, error) {
			answers := make([]Answer, len(verdicts))
			for i, v := range verdicts {
				args := current(calls[i], v.Args)
				answers[i] = Answer{Content: v.answer, Refused: v.Err != nil, Args: replayArgs(ctx, calls[i], args)}
				if answers[i].Content == "" {
					answers[i].Content = withOversized(notExecutedText, oversized(args))
				}
			}
			m.emit(ctx, Event{Kind: EventReask, Attempt: attempt + 1})
			return c.Reask(req, resp, answers)
		}}
	})
}

// reaskMalformed is what ToolArgValidation makes of an attempt the provider
// refused as a call it could not read (mal; resp and err as the attempt
// returned them): an attempt with an invalid call, whose only answer is the
// feedback, re-asked while retries are left.
func reaskMalformed[Req, Resp any](ctx context.Context, m *toolArgValidation, mr MalformedReader[Req, Resp], req Req, gate Gate[Resp], resp Resp, err error, mal Malformed, attempt int) turn[Req, Resp] {
	verr := malformedError(mal)
	feedback := m.cfg.feedback(verr)
	m.emit(ctx, Event{Kind: EventProviderMalformed, Attempt: attempt, Err: verr, Feedback: feedback})
	if attempt <= m.cfg.maxRetries {
		return turn[Req, Resp]{again: func() (Req, error) {
			m.emit(ctx, Event{Kind: EventReask, Attempt: attempt + 1})
			return mr.ReaskMalformed(req, boundedMalformed(mal), feedback)
		}}
	}
	m.emitFailOpen(ctx, Event{Kind: EventGiveUp, Attempt: attempt, Err: verr})
	switch {
	case m.cfg.failClosed:
		var last any
		if err == nil {
			last = resp
		}
		return turn[Req, Resp]{err: &InvalidToolCallsError{Attempts: attempt, Errors: []*validation.Error{verr}, Response: last}}
	case err != nil:
		return turn[Req, Resp]{err: err}
	}
	resp, err = deliver(ctx, gate, resp)
	return turn[Req, Resp]{resp: resp, err: err}
}

// acceptAndDeliver writes the verdicts' cleaned arguments into resp and
// hands it on through gate; with refuse, the accepted response is refused
// with the error refuse makes of it instead.
func acceptAndDeliver[Req, Resp any](ctx context.Context, c Codec[Req, Resp], gate Gate[Resp], resp Resp, vs []verdict, refuse func(Resp) error) turn[Req, Resp] {
	resp, err := accept(c, resp, vs)
	switch {
	case err != nil:
		return turn[Req, Resp]{err: err}
	case refuse != nil:
		return turn[Req, Resp]{err: refuse(resp)}
	}
	resp, err = deliver(ctx, gate, resp)
	return turn[Req, Resp]{resp: resp, err: err}
}

// current returns a call's arguments as they stand: cleaned, when not nil,
// else as the model sent them.
func current(c Call, cleaned []byte) []byte {
	if cleaned != nil {
		return cleaned
	}
	return c.Args
}

// replayArgs returns the arguments a re-ask shows the model for c, whose
// arguments stand at args, when they differ from those it sent: {} in
// place of arguments too large to replay (the call's answer says why, see
// [oversized]), without the values it sent for the tool's injected
// arguments ([WithInjectedArgs]), which are never replayed; {} in place of
// arguments from which no such value can be dropped (not a JSON object:
// truncated JSON, Python literals, an array, data after the object) that
// mention one ([WithholdInjected]), since a wire codec replays them as
// sent. The call is rejected, and its violation says why. nil when they
// are shown as sent.
func replayArgs(ctx context.Context, c Call, args []byte) []byte {
	if c.noFunction() {
		return nil
	}
	if len(args) > maxReplayedArguments {
		return []byte("{}")
	}
	if injected := InjectedArgsFrom(ctx, c.Name); len(injected) > 0 {
		switch kept, paths := WithholdInjected(string(args), injected); {
		case slices.Equal(paths, []string{""}): // withheld whole
			args = []byte("{}")
		case len(paths) > 0:
			args = []byte(kept)
		}
	}
	if string(args) == string(c.Args) {
		return nil
	}
	return args
}

// oversized returns the length of args when a re-ask would show them as {}
// (see [replayArgs]), else 0.
func oversized(args []byte) int {
	if n := len(args); n > maxReplayedArguments {
		return n
	}
	return 0
}

// withOversized adds to answer, the tool message of a call that is not
// rejected itself, that its arguments (size bytes) are shown as {}.
func withOversized(answer string, size int) string {
	if size == 0 {
		return answer
	}
	return answer + " Note: " + oversizedText(size) + "."
}

// toolSchemasKey is the context key of [WithToolSchemas].
type toolSchemasKey struct{}

// WithToolSchemas returns a copy of ctx that gives [ToolArgValidation] the
// schema of each named tool, to use instead of the schema of the request's
// tool of that name ([WithSchema] still wins). A schema is any form
// [validation.Compile] takes; a *[validation.Schema] keeps its
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
// overridden by [WithToolSchemas], overridden by [WithSchema]. A nil schema
// means "no schema: any object". It reads the three where they are, rather
// than copying them into a map for every call: a request offers a few
// tools, and a call is looked up among them.
type toolSchemas struct {
	// tools are the request's tools; of two of one name, the last counts.
	tools []Tool
	// byName holds tools by name when they are more than linearTools, so
	// that a lookup is not a search through them all.
	byName map[string]any
	// layers are WithToolSchemas's schemas and WithSchema's, each
	// overriding the tools and the layers before it.
	layers [2]map[string]any
	made   bool
}

// linearTools is how many tools toolSchemas searches in place.
const linearTools = 16

func (m *toolArgValidation) toolSchemas(ctx context.Context, tools []Tool) toolSchemas {
	fromCtx, _ := ctx.Value(toolSchemasKey{}).(map[string]any)
	ts := toolSchemas{tools: tools, layers: [2]map[string]any{fromCtx, m.cfg.schemas}, made: true}
	if len(tools) > linearTools {
		ts.byName = make(map[string]any, len(tools))
		for _, t := range tools {
			ts.byName[t.Name] = t.Schema
		}
	}
	if m.duplicates.Load() {
		return ts // reported once: not looked for again
	}
	if dups := duplicateNames(tools, ts.byName); len(dups) > 0 && m.duplicates.CompareAndSwap(false, true) {
		quoted := make([]string, len(dups))
		for i, d := range dups {
			quoted[i] = safetext.Quote(d, 80)
		}
		err := fmt.Errorf("%w: the request offers more than one tool named %s; calls are validated against the last one's schema, "+
			"and providers may refuse the request", ErrDuplicateTool, strings.Join(quoted, ", "))
		e := Event{Kind: EventMisconfigured, Middleware: validationName, Tool: dups[0], Err: err}
		reportLoud(ctx, m.cfg.events, e)
	}
	return ts
}

// duplicateNames returns the names more than one of tools has, each once,
// in the order of their second occurrences; byName, when not nil, holds
// every name of tools.
func duplicateNames(tools []Tool, byName map[string]any) []string {
	if byName != nil && len(byName) == len(tools) {
		return nil
	}
	var dups []string
	var seen map[string]bool
	if byName != nil {
		seen = make(map[string]bool, len(tools))
	}
	for i, t := range tools {
		again := false
		if seen != nil {
			again = seen[t.Name]
			seen[t.Name] = true
		} else {
			for _, before := range tools[:i] {
				if before.Name == t.Name {
					again = true
					break
				}
			}
		}
		if again && !slices.Contains(dups, t.Name) {
			dups = append(dups, t.Name)
		}
	}
	return dups
}

// lookup returns the schema source of the tool named name, and whether
// there is such a tool.
func (ts toolSchemas) lookup(name string) (any, bool) {
	for i := len(ts.layers) - 1; i >= 0; i-- {
		if s, ok := ts.layers[i][name]; ok {
			return s, true
		}
	}
	if ts.byName != nil {
		s, ok := ts.byName[name]
		return s, ok
	}
	for i := len(ts.tools) - 1; i >= 0; i-- {
		if ts.tools[i].Name == name {
			return ts.tools[i].Schema, true
		}
	}
	return nil, false
}

// names returns the names of the tools that have a schema source, sorted.
func (ts toolSchemas) names() []string {
	names := make([]string, 0, len(ts.tools)+len(ts.layers[0])+len(ts.layers[1]))
	for _, t := range ts.tools {
		names = append(names, t.Name)
	}
	for _, layer := range ts.layers {
		for n := range layer {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// verdict is what became of one tool call.
type verdict struct {
	Verdict          // what the codec writes back
	answer  string   // the tool message for a rejected call
	forged  []string // paths of forged injected arguments dropped from the call
}

func invalidErrors(vs []verdict) []*validation.Error {
	var errs []*validation.Error
	for _, v := range vs {
		if v.Err != nil {
			errs = append(errs, v.Err)
		}
	}
	return errs
}

// accept writes the cleaned arguments of vs into resp through c; a
// response none of whose calls changed is handed on as it is.
func accept[Req, Resp any](c Codec[Req, Resp], resp Resp, vs []verdict) (Resp, error) {
	changed := false
	for _, v := range vs {
		changed = changed || v.Args != nil
	}
	if !changed {
		return resp, nil
	}
	out := make([]Verdict, len(vs))
	for i, v := range vs {
		out[i] = v.Verdict
	}
	return c.Accept(resp, out)
}

func (m *toolArgValidation) checkAll(ctx context.Context, calls []Call, tools toolSchemas, attempt int) ([]verdict, error) {
	verdicts := make([]verdict, len(calls))
	for i := range calls {
		v, err := m.check(ctx, calls[i], tools, attempt)
		if err != nil {
			return nil, err
		}
		verdicts[i] = v
	}
	return verdicts, nil
}

// check validates one call and strips it per the mode; the verdict holds
// the cleaned arguments to write back.
func (m *toolArgValidation) check(ctx context.Context, c Call, tools toolSchemas, attempt int) (verdict, error) {
	reject := func(e *validation.Error, answer string, args []byte) verdict {
		e.Tool, e.CallID = c.Name, c.ID
		if answer == "" {
			answer = m.cfg.feedback(e)
		}
		m.emit(ctx, Event{Kind: EventInvalid, Attempt: attempt, Tool: e.Tool, CallID: e.CallID, Err: e, Feedback: answer})
		return verdict{Verdict: Verdict{Args: args, Err: e}, answer: answer}
	}
	if c.noFunction() {
		return reject(&validation.Error{Violations: []validation.Violation{{Keyword: "tool", Message: noFunctionText}}}, "", nil), nil
	}
	src, known := tools.lookup(c.Name)
	if !known {
		m.emit(ctx, Event{Kind: EventUnknownTool, Attempt: attempt, Tool: c.Name, CallID: c.ID})
		if m.cfg.unknown == UnknownPass {
			// agents.Executor runs "REFUND" as refund: a tool's injected
			// arguments are dropped from a call it may run all the same.
			args, forged := dropForged(c.Args, InjectedArgsFrom(ctx, c.Name))
			return verdict{Verdict: Verdict{Args: args}, forged: forged}, nil
		}
		names := tools.names()
		return reject(&validation.Error{Violations: []validation.Violation{{Keyword: "tool",
			Message: "no tool has this name; available tools: " + strings.Join(names, ", ")}}},
			errfmt.UnknownTool(c.Name, names), nil), nil
	}
	var schema *validation.Schema
	if src != nil {
		s, err := m.cache.Get(src)
		if err != nil {
			m.emitFailOpen(ctx, Event{Kind: EventSchemaError, Attempt: attempt, Tool: c.Name, CallID: c.ID, Err: err})
			if m.cfg.failClosed {
				return verdict{}, &SchemaError{Tool: c.Name, Err: err}
			}
			return verdict{}, nil // fail open: the call passes unvalidated
		}
		if u := s.IgnoredMetaSchema(); u != "" {
			m.emit(ctx, Event{Kind: EventSchemaFallback, Attempt: attempt, Tool: c.Name, CallID: c.ID,
				Err: fmt.Errorf("guard: unknown $schema %s ignored; validated with the default draft", safetext.Quote(u, 200))})
		}
		schema = s
	}

	injected := InjectedArgsFrom(ctx, c.Name)
	args, forged := dropForged(c.Args, injected)
	cleaned := args // nil: as sent
	res := CheckArgs(schema, current(c, args), ArgsOptions{Strip: m.cfg.strip, Repair: m.cfg.repair, NoDecode: true})
	if res.Changed {
		cleaned = res.Args
	}
	redacted := false
	if len(injected) > 0 {
		if len(res.Repairs) > 0 {
			// A repair may have made a forged value readable.
			if again, more := dropForged(cleaned, injected); len(more) > 0 {
				cleaned, forged = again, append(forged, more...)
			}
		}
		before := res.Err
		res.Err = RedactInjected(res.Err, injected)
		redacted = before != nil && res.Err != before
	}
	if len(res.Repairs) > 0 {
		names := make([]string, len(res.Repairs))
		for i, r := range res.Repairs {
			names[i] = r.String()
		}
		m.emit(ctx, Event{Kind: EventRepaired, Attempt: attempt, Tool: c.Name, CallID: c.ID, Paths: names})
	}
	if len(res.Stripped) > 0 {
		m.emit(ctx, Event{Kind: EventStripped, Attempt: attempt, Tool: c.Name, CallID: c.ID, Paths: res.Stripped})
	}
	if res.Err == nil {
		if !redacted && m.runSchema(ctx, c.Name) {
			recordValidated(ctx, c.ID, c.Name, string(current(c, cleaned)))
		}
		return verdict{Verdict: Verdict{Args: cleaned}, forged: forged}, nil
	}
	if n := oversized(current(c, cleaned)); n > 0 && attempt <= m.cfg.maxRetries {
		// The re-ask shows these arguments as {}; the model is told why.
		res.Err.Violations = append(res.Err.Violations, validation.Violation{Keyword: "size", Message: oversizedText(n)})
	}
	v := reject(res.Err, "", cleaned)
	v.forged = forged
	return v, nil
}

// dropForged removes from args the values the model sent for the tool's
// injected arguments ([WithInjectedArgs]): it returns the arguments without
// them (nil when there was none) and their paths.
func dropForged(args []byte, injected []string) ([]byte, []string) {
	if len(injected) == 0 || args == nil {
		return nil, nil
	}
	out, forged := DropInjected(string(args), injected)
	if len(forged) == 0 {
		return nil, nil
	}
	return []byte(out), forged
}

// reportForged reports the forged injected arguments dropped from calls
// ([EventForgedArgument]), by path only. Those of a response handed on
// inside an agent's run (handedOn) are left to the agent, which reports
// them with the tool call they concern (on its execute_tool span); the
// others — a response re-asked, or no agent — are reported here.
func (m *toolArgValidation) reportForged(ctx context.Context, calls []Call, verdicts []verdict, attempt int, handedOn bool) {
	for i, v := range verdicts {
		if len(v.forged) == 0 {
			continue
		}
		c := calls[i]
		if handedOn && recordForged(ctx, c.ID, c.Name, v.forged) {
			continue
		}
		m.emit(ctx, Event{Kind: EventForgedArgument, Attempt: attempt, Tool: c.Name, CallID: c.ID, Paths: v.forged})
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

// ToolSchemasFrom returns the schemas ctx gives [ToolArgValidation]
// ([WithToolSchemas]), or nil. The map must not be modified: a caller
// adding one copies it first.
func ToolSchemasFrom(ctx context.Context) map[string]any {
	m, _ := ctx.Value(toolSchemasKey{}).(map[string]any)
	return m
}
