package toolstage

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/internal/exactjson"
	"github.com/toolguard/toolguard/repair"
	"github.com/toolguard/toolguard/validation"
)

// injector returns the value of an injected argument for one call: the
// function given to [Inject].
type injector func(ctx context.Context, call *ToolCall) (any, error)

// InjectArgs returns t with the top-level properties names of its schema
// marked as injected arguments ([validation.InjectedKeyword]): the stage
// leaves them out of the schema the model is sent and fills them with
// [Inject] before the tool runs. It is for tools whose schema is not a Go
// type: [NewSchemaTool] and MCP tools (mcptool), whose schemas are often
// open, so that without it a model could set any property. A name that
// the schema does not declare is added to its properties (with no
// constraint but the ones Inject's value must meet), and so is sent to the
// tool.
//
// The returned Tool's Schema is a copy of t's (as a map) with the marks;
// everything else is t's. A wrapper that forwards Schema keeps the marks.
// InjectArgs panics if t is nil, no name or an empty or repeated name is
// given, or t's schema is not a JSON object schema (a map, once converted).
func InjectArgs(t Tool, names ...string) Tool {
	if t == nil || len(names) == 0 {
		panic(fmt.Sprintf("toolstage: InjectArgs(%v, %q): needs a tool and at least one property name", t, names))
	}
	m, ok := schemaMap(t.Schema())
	if !ok {
		panic(fmt.Sprintf("toolstage: InjectArgs(%q): the tool's schema is not a JSON object schema", t.Name()))
	}
	props, _ := m["properties"].(map[string]any)
	if props == nil && m["properties"] != nil {
		panic(fmt.Sprintf("toolstage: InjectArgs(%q): the schema's properties are not an object", t.Name()))
	}
	if props == nil {
		props = map[string]any{}
	}
	declared := true
	for i, n := range names {
		if n == "" || slices.Contains(names[:i], n) {
			panic(fmt.Sprintf("toolstage: InjectArgs(%q, %q): empty or repeated property name", t.Name(), names))
		}
		var p map[string]any
		switch v := props[n].(type) {
		case nil:
			declared = false
			p = map[string]any{}
		case map[string]any:
			p = v
		case bool:
			p = map[string]any{}
			if !v {
				p["not"] = map[string]any{} // false: no value is valid
			}
		default:
			panic(fmt.Sprintf("toolstage: InjectArgs(%q): property %q has a schema of type %T", t.Name(), n, v))
		}
		p[validation.InjectedKeyword] = true
		props[n] = p
	}
	m["properties"] = props
	it := &injectedTool{Tool: t, schema: m}
	if declared {
		it.compiled = compiledSchema(t) // the tool's own, Validate hook and all
	} else if s, err := validation.Compile(m); err == nil {
		it.compiled = s
	}
	return it
}

// injectedTool is a Tool with properties marked injected (InjectArgs).
type injectedTool struct {
	Tool
	schema   map[string]any
	compiled *validation.Schema
}

func (t *injectedTool) Schema() any                        { return t.schema }
func (t *injectedTool) compiledSchema() *validation.Schema { return t.compiled }

func (t *injectedTool) callChecked(ctx context.Context, args []byte, value map[string]any) (string, error) {
	if u, ok := t.Tool.(uncheckedCaller); ok {
		return u.callChecked(ctx, args, value)
	}
	return t.Tool.Call(ctx, string(args))
}

// InjectError is the Outcome.Err of a call whose injected arguments could not
// be set: an [Inject] function failed, or the value it gave does not
// validate against the tool's schema. The tool did not run. The model reads
// only that the call could not be run (Error), never the cause, which
// Unwrap gives the program.
type InjectError struct {
	Tool string // the tool's name as sent to the model
	Name string // the injected property; "" when the arguments failed as a whole
	Err  error  // the injector's error, or the *validation.Error
}

// Error names the tool and tells the model not to retry the call; it never
// quotes the injected value or the injector's error, which Unwrap returns.
func (e *InjectError) Error() string {
	return fmt.Sprintf("toolstage: tool %q could not be run: a value the application supplies for this call could not be set; do not retry the call", e.Tool)
}

// Unwrap returns Err: the injector's error, or the *validation.Error.
func (e *InjectError) Unwrap() error { return e.Err }

// schemaMap returns schema as a fresh map of plain JSON values (the caller
// may modify it), whatever Go types a hand-built map holds ([]string for
// "required", nested typed maps); false when it is not a JSON object.
func schemaMap(schema any) (map[string]any, bool) {
	raw, err := exactjson.Text(parameters(schema))
	if err != nil {
		return nil, false
	}
	m, err := exactjson.DecodeObject(raw)
	return m, err == nil
}

// injectedProps returns the properties that schema marks injected
// ([validation.InjectedKeyword]), sorted; nil when none.
func injectedProps(schema any) []string {
	m, ok := schemaMap(schema)
	if !ok {
		return nil
	}
	props, _ := m["properties"].(map[string]any)
	var names []string
	for n, p := range props {
		if pm, ok := p.(map[string]any); ok && pm[validation.InjectedKeyword] == true {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names
}

// modelFacing returns schema without the properties names, in properties
// and in required: the schema the model is sent. schema is not modified.
func modelFacing(schema any, names []string) map[string]any {
	m, _ := schemaMap(schema) // injectedProps found names in it: a map
	props, _ := m["properties"].(map[string]any)
	for _, n := range names {
		delete(props, n)
	}
	m["properties"] = props
	if req, ok := m["required"].([]any); ok {
		kept := slices.DeleteFunc(req, func(r any) bool {
			s, _ := r.(string)
			return slices.Contains(names, s)
		})
		if len(kept) == 0 {
			delete(m, "required")
		} else {
			m["required"] = kept
		}
	}
	return m
}

// injection is what the stage keeps of one tool's injected arguments.
type injection struct {
	names []string           // sorted
	model *validation.Schema // the model-facing schema compiled, for feedback; nil: any object
}

// setupInjection marks the tool named name (t, as sent) as having the
// injected arguments names: the model is offered, and ToolArgValidation
// validates, the schema without them, which it returns. It panics when an
// injected argument has no Inject.
func (s *Stage) setupInjection(cfg *config, name string, t Tool, names []string) map[string]any {
	for _, n := range names {
		if cfg.injectors[n] == nil {
			panic(fmt.Sprintf("toolstage: New: tool %q has the injected argument %q, which no Inject supplies", name, n))
		}
	}
	facing := modelFacing(t.Schema(), names)
	s.schemas[name] = facing
	model, err := validation.Compile(facing)
	if err != nil {
		model = nil
	}
	if s.injection == nil {
		s.injection = make(map[string]injection)
		s.injected = make(map[string][]string)
	}
	s.injection[name] = injection{names: names, model: model}
	s.injected[name] = names
	s.injectors = cfg.injectors
	return facing
}

// dropForged returns c without the values the model sent for its tool's
// injected arguments (a copy: the caller's is not modified), and the
// forged_argument event to report on the call's span: for those it
// dropped, or those ToolArgValidation dropped and left to the stage to
// report (in record, the scope's); nil when there were none. Arguments that
// are not a JSON object and may hold such a value are withheld whole
// (guard.WithholdInjected): the call fails (inject), and the value is in
// no record.
func (s *Stage) dropForged(record *guard.CallRecord, c guard.Call) (guard.Call, *guard.Event) {
	inj, ok := s.injection[c.Name]
	if !ok {
		return c, nil
	}
	var event *guard.Event
	if paths := record.Forged(c.ID); len(paths) > 0 {
		event = &guard.Event{Kind: guard.EventForgedArgument, Middleware: "ToolArgValidation", Paths: paths}
	}
	args, forged := guard.WithholdInjected(string(c.Args), inj.names)
	if len(forged) == 0 {
		return c, event
	}
	c.Args = []byte(args)
	if event == nil {
		event = &guard.Event{Kind: guard.EventForgedArgument}
	}
	event.Paths = append(event.Paths, forged...)
	return c, event
}

// WithoutInjected returns c without the values the model sent for its
// tool's injected arguments ([Inject]), reporting nothing: what a
// transcript or a checkpoint saved before [Stage.Run] may keep (Run drops
// and reports them itself). Arguments that are not a JSON object and may
// hold such a value are withheld whole ([guard.WithheldArgs]).
func (s *Stage) WithoutInjected(c guard.Call) guard.Call {
	inj, ok := s.injection[c.Name]
	if !ok {
		return c
	}
	if args, forged := guard.WithholdInjected(string(c.Args), inj.names); len(forged) > 0 {
		c.Args = []byte(args)
	}
	return c
}

// inject returns the call's arguments with its tool's injected arguments
// set; the arguments unchanged for a tool without any.
func (s *Stage) inject(ctx context.Context, st *callState) (string, error) {
	inj, ok := s.injection[st.info.Tool]
	if !ok {
		return st.modelArgs, nil
	}
	if st.gate.pinned {
		// Resume set and checked them against the approval
		// (injectApproved): the values checked are the values that run.
		if st.gate.injected != "" {
			return st.gate.injected, nil
		}
		return "", s.injectFailed(ctx, &InjectError{Tool: st.info.Tool, Err: errApprovedUnchecked})
	}
	if st.modelArgs == guard.WithheldArgs {
		return "", &validation.Error{Tool: st.info.Tool, Violations: []validation.Violation{{Keyword: "json",
			Message: "arguments are not a JSON object: send one JSON object holding the tool's arguments"}}}
	}
	raw := bytes.TrimSpace([]byte(st.modelArgs))
	if len(raw) == 0 {
		raw = []byte("{}")
	}
	// Decoded as validation decodes arguments: a key given twice is
	// refused, never settled by keeping one of its values.
	v, err := validation.DecodeArgs(raw)
	if err != nil {
		// A double-encoded object is one the tool stage's check decodes
		// (the default coercions): the injected values go into it, or the
		// tool would run without them. Anything else that is not an
		// object, or not one the check takes, the check reports.
		if v, _ = repair.Only(repair.DoubleEncoded).Repair(raw, nil); v == nil {
			return st.modelArgs, nil
		}
	}
	call := &ToolCall{ID: st.info.ID, Name: st.info.Tool, Args: json.RawMessage(st.modelArgs), Tool: st.tool}
	for _, n := range inj.names {
		val, err := s.injectors[n](ctx, call)
		if err == nil {
			var b []byte
			if b, err = json.Marshal(val); err == nil {
				v[n] = json.RawMessage(b)
				continue
			}
		}
		return "", s.injectFailed(ctx, &InjectError{Tool: st.info.Tool, Name: n, Err: err})
	}
	out, err := exactjson.Encode(v)
	if err != nil {
		return "", s.injectFailed(ctx, &InjectError{Tool: st.info.Tool, Err: err})
	}
	return string(out), nil
}

// injectFailed reports an injection that failed and returns its error.
func (s *Stage) injectFailed(ctx context.Context, err *InjectError) error {
	ReportEvent(ctx, guard.Event{Kind: guard.EventArgsRejected, Err: err})
	return err
}

// injectedCheckFailed returns the error of a call of a tool with injected
// arguments whose arguments, injected values set, failed the tool's whole
// schema (ve). The model is told only of its own mistakes, in terms of the
// schema it was sent: the model-facing schema's violations of its
// arguments, else the whole schema's violations at properties it sent (a
// Validate method's, say); any other failure — at an injected property, or
// at the root where a message could speak of one — is an [InjectError].
func (s *Stage) injectedCheckFailed(ctx context.Context, st *callState, err error) error {
	inj := s.injection[st.info.Tool]
	if _, merr := checkArgs(st.info.Tool, inj.model, []byte(st.modelArgs)); merr != nil {
		if mve, ok := merr.(*validation.Error); ok {
			if r := guard.RedactInjected(mve, inj.names); r != nil {
				return r
			}
		}
	}
	if ve, ok := err.(*validation.Error); ok && len(ve.Violations) > 0 {
		ownOnly := ve.Omitted == 0
		for _, v := range ve.Violations {
			if v.Path == "" || guard.IsInjectedPath(v.Path, inj.names) {
				ownOnly = false
			}
		}
		if ownOnly {
			return ve
		}
	}
	return s.injectFailed(ctx, &InjectError{Tool: st.info.Tool, Err: err})
}

// reportNotStarted reports the forged injected arguments of the calls todo
// that never started (a run cancelled or stopped mid-batch): a security
// event is not lost because its call did not run.
func (s *Stage) reportNotStarted(ctx context.Context, record *guard.CallRecord, calls []guard.Call, todo []int) {
	for _, i := range todo {
		if _, e := s.dropForged(record, calls[i]); e != nil {
			e.Tool, e.CallID = calls[i].Name, calls[i].ID
			ReportEvent(ctx, *e)
		}
	}
}

// reportUnclaimed reports the forged injected arguments ToolArgValidation
// recorded for calls that are not calls of the stage's tools in calls, the
// batch: calls of a response a middleware outside ToolArgValidation
// discarded (ToolCallLimit's re-ask), and calls of a tool named in another
// case ("ORDER", which ToolArgValidation treats as order), which never
// reach the tool stage. A security event is not lost because its call
// never runs.
func (s *Stage) reportUnclaimed(ctx context.Context, record *guard.CallRecord, calls []guard.Call) {
	if len(s.injection) == 0 {
		return
	}
	ids := make([]string, 0, len(calls))
	for _, c := range calls {
		if s.tools[c.Name] != nil {
			ids = append(ids, c.ID)
		}
	}
	for _, f := range record.Unclaimed(ids) {
		ReportEvent(ctx, guard.Event{Kind: guard.EventForgedArgument, Middleware: "ToolArgValidation", Tool: f.Tool, CallID: f.ID, Paths: f.Paths})
	}
}
