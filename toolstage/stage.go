package toolstage

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/internal/exactjson"
	"github.com/toolguard/toolguard/validation"
)

// Stage is the tool stage: it runs the tool calls a model stage accepted
// through the tool middlewares ([WithToolMiddleware]), with injected
// arguments set ([Inject]), the arguments checked once against the tool's
// schema, panics recovered, and calls that need a person's decision paused
// ([WithApproval]) to be resumed on any process ([Stage.Resume]).
//
// A Stage is the host's: an openai-go, anthropic-sdk-go or genai program
// keeps its own loop, offers the model [Stage.Definitions], sends the model
// call with the context [Stage.Scope] returns (through httpguard), and hands
// each response's calls to [Stage.Run]; toolguard's agent runs one inside
// its langchaingo loop. A Stage is safe for concurrent use: its tools and
// tool middlewares must then be too.
type Stage struct {
	tools    map[string]Tool // by sent name
	order    []string        // the sent names, in the order given to New
	names    []string        // the same, sorted, for the unknown-tool message
	defs     []Definition    // built once, in order
	schemas  map[string]any  // what the model stage validates against, by sent name
	compiled map[string]*validation.Schema
	chain    ToolHandler // the tool middlewares around execute
	maxPar   int
	events   func(context.Context, guard.Event)
	// Injected arguments (inject.go): per tool with any, by sent name.
	injection map[string]injection
	injected  map[string][]string // the names alone, for guard.WithInjectedArgs
	injectors map[string]injector // Inject's functions, by property name
	// approval is the gate and Resume's keys (approval.go); cp keeps
	// interrupts' state and claims them (resume.go); nil without.
	approval *approval
	cp       Checkpointer
}

// Definition is a tool as the model is offered it.
type Definition struct {
	// Name is the tool's name as sent to the model ([WithToolNames]);
	// Description the tool's.
	Name, Description string
	// Parameters is the JSON Schema of the arguments, without the injected
	// properties ([Inject]): {"type":"object","properties":{}} for a tool
	// without a schema.
	Parameters json.RawMessage
	schema     any
}

// Schema returns the schema as a Go value, for an SDK that takes one (a
// map, as langchaingo's providers do): the tool's own map, a
// *[validation.Schema]'s Map, or the model-facing map of a tool with
// injected arguments; a schema that is not a JSON object is returned as
// the tool gave it. It must not be modified.
func (d Definition) Schema() any { return d.schema }

// Option configures a [Stage]. Options are applied in order by [New]. An
// option given an invalid value panics when it is made, with a message
// naming it.
type Option func(*config)

type config struct {
	maxConcurrency  int
	toolName        func(string) string                // WithToolNames; nil: SafeToolName
	toolMiddlewares []ToolMiddleware                   // WithToolMiddleware
	events          func(context.Context, guard.Event) // WithEventHandler
	approval        approvalConfig                     // WithApproval, WithApprovalFor, WithInterruptKey, WithReinjectOnResume
	checkpointer    Checkpointer                       // WithCheckpointer
	injectors       map[string]injector                // Inject
}

// DefaultMaxConcurrency is how many calls of one batch run at the same
// time without [WithMaxConcurrency].
const DefaultMaxConcurrency = 4

// WithMaxConcurrency sets how many calls of one batch run at the same time
// (default [DefaultMaxConcurrency], 4); 1 runs them one after the other.
// Outcomes are in call order whatever the order they finish in. It panics
// if n is less than 1.
func WithMaxConcurrency(n int) Option {
	if n < 1 {
		panic(fmt.Sprintf("toolstage: WithMaxConcurrency(%d): at least one tool call must be able to run", n))
	}
	return func(c *config) { c.maxConcurrency = n }
}

// WithCheckpointer keeps each [Interrupt]'s state in cp, not in the
// interrupt (a client holding one reads only its pending calls), and
// claims an interrupt in cp before anything of it runs: an interrupt is
// resumed at most once across every process sharing the store. A save the
// store applied without confirming it (a reply lost after the write, a
// client's retry reported as a conflict) is read back and taken as made,
// as the Checkpointer contract asks; when the store cannot be read back,
// the pause fails (the batch's pending calls never start) or the resume
// runs nothing — and a claim that landed all the same is never run. Without
// one, the state travels in the interrupt and a Stage value refuses an
// interrupt it resumed before (it remembers the last 4096).
func WithCheckpointer(cp Checkpointer) Option {
	if cp == nil {
		panic("toolstage: WithCheckpointer(nil): needs a Checkpointer")
	}
	return func(c *config) { c.checkpointer = cp }
}

// New returns the tool stage of tools.
//
// Each tool's definition is built once, here ([Stage.Definitions]). A tool
// with injected arguments ([Inject], [InjectArgs], a field tagged
// `toolguard:"inject"`) is offered without them; New panics if no Inject
// supplies one of them. A tool whose name providers reject is offered under
// [SafeToolName] (see [WithToolNames]). New panics if a tool is nil, has an
// empty name, two tools share a (sent) name, or an approval option names
// no tool.
func New(tools []Tool, opts ...Option) *Stage {
	cfg := config{maxConcurrency: DefaultMaxConcurrency}
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	s := &Stage{
		tools:    make(map[string]Tool, len(tools)),
		schemas:  make(map[string]any, len(tools)),
		compiled: make(map[string]*validation.Schema, len(tools)),
		maxPar:   cfg.maxConcurrency,
		events:   cfg.events,
		cp:       cfg.checkpointer,
	}
	for i, t := range tools {
		if t == nil {
			panic(fmt.Sprintf("toolstage: New: tool %d is nil", i))
		}
		if t.Name() == "" {
			panic(fmt.Sprintf("toolstage: New: tool %d has no name", i))
		}
		injected := injectedProps(t.Schema()) // Inject, InjectArgs, toolguard:"inject"
		t = cfg.sentName(t)                   // a provider-safe name, see WithToolNames
		name := t.Name()
		if _, dup := s.tools[name]; dup {
			panic(fmt.Sprintf("toolstage: New: two tools are named %q", name))
		}
		s.tools[name] = t
		s.order = append(s.order, name)
		s.schemas[name] = t.Schema()
		s.compiled[name] = compiledSchema(t)
		params := parameters(t.Schema())
		if len(injected) > 0 { // the model is sent the schema without them
			params = s.setupInjection(&cfg, name, t, injected)
		}
		raw, err := exactjson.Text(params)
		if err != nil {
			raw, _ = json.Marshal(map[string]any{"type": "object", "properties": map[string]any{}})
		}
		s.defs = append(s.defs, Definition{Name: name, Description: t.Description(), Parameters: raw, schema: params})
	}
	s.names = slices.Sorted(slices.Values(s.order))
	s.approval = newApproval(cfg.approval, s) // panics on an approval naming no tool
	s.chain = chainTools(cfg.toolMiddlewares, s.execute)
	return s
}

// Definitions returns the tools to offer the model, in the order given to
// [New]: each one's sent name, description and schema without its injected
// properties. The slice is the caller's; the schemas must not be modified.
func (s *Stage) Definitions() []Definition {
	return slices.Clone(s.defs)
}

// Tool returns the stage's tool sent to the model as name, and whether
// there is one.
func (s *Stage) Tool(name string) (Tool, bool) {
	t, ok := s.tools[name]
	return t, ok
}

// Scope returns ctx set up for the model calls whose tool calls the stage
// will run: it tells the model stage on ctx (httpguard, middleware) the
// tools' schemas ([guard.WithToolSchemas]) and injected arguments
// ([guard.WithInjectedArgs]), so that the model never sees nor sets an
// injected argument and a call it validated is not validated again by the
// stage; it starts the record of what the model stage checked
// ([guard.WithCallRecord]), which [Stage.Run] reads; and it sends both
// stages' events to the stage's [WithEventHandler]. Call it once per
// conversation turn, or once per run of a loop, and give the model calls
// and Run the context it returns (or one derived from it).
func (s *Stage) Scope(ctx context.Context) context.Context {
	ctx = guard.WithToolSchemas(ctx, s.schemas)
	// Always set, nil included: a stage run from inside another's tool
	// (a sub-agent) does not inherit its caller's injected arguments.
	ctx = guard.WithInjectedArgs(ctx, s.injected)
	ctx, _ = guard.WithCallRecord(ctx)
	return s.withEvents(ctx)
}

// withEvents returns ctx reporting to the stage's [WithEventHandler], when
// it has one: Scope's context, and Run's and Resume's whatever context
// they are given (a host with no model stage need not call Scope), so
// that no event of the stage, a forged argument least of all, misses the
// handler it was given. A stage run from a tool of another reports to its
// own handler (none: slog's default for the loud events), never its
// caller's.
func (s *Stage) withEvents(ctx context.Context) context.Context {
	if _, inTool := CallFrom(ctx); s.events != nil || inTool {
		return guard.WithEvents(ctx, s.events)
	}
	return ctx
}

// compiledSchema returns t's schema compiled for the tool stage's check:
// the tool's own when it has one (NewTool, NewSchemaTool), else Schema()
// compiled; nil (any object) when there is none or it does not compile, as
// ToolArgValidation fails open on it.
func compiledSchema(t Tool) *validation.Schema {
	if c, ok := t.(interface{ compiledSchema() *validation.Schema }); ok {
		return c.compiledSchema()
	}
	if t.Schema() == nil {
		return nil
	}
	s, err := validation.Compile(t.Schema())
	if err != nil {
		return nil
	}
	return s
}

// parameters returns schema as a map, the form every provider takes.
func parameters(schema any) any {
	switch s := schema.(type) {
	case nil:
		return map[string]any{"type": "object", "properties": map[string]any{}}
	case map[string]any:
		return s
	case *validation.Schema:
		if s == nil {
			return parameters(nil)
		}
		return s.Map()
	}
	raw, err := exactjson.Text(schema)
	if err != nil {
		return schema // let ToolArgValidation report the schema error
	}
	m, err := exactjson.DecodeObject(raw)
	if err != nil {
		return schema // let ToolArgValidation report the schema error
	}
	return m
}
