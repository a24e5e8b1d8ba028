package agent

import (
	"context"
	"fmt"
	"slices"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/validation"
)

// Option configures an [Agent]. Options are applied in order by [New]. An option
// given an invalid value panics when it is made, with a message naming it.
type Option func(*config)

type config struct {
	middlewares     []middleware.Middleware
	systemPrompt    string
	maxIterations   int
	maxConcurrency  int
	toolName        func(string) string                // WithToolNames; nil: SafeToolName
	callOptions     []llms.CallOption                  // WithCallOptions
	toolMiddlewares []ToolMiddleware                   // WithToolMiddleware
	events          func(context.Context, guard.Event) // WithEventHandler
	output          *validation.Schema                 // WithOutputSchema (output.go)
	approval        approvalConfig                     // WithApproval, WithApprovalFor, WithInterruptKey, WithCheckpointer (approval.go)
	injectors       map[string]injector                // Inject
}

// Defaults of the options.
const (
	DefaultMaxIterations  = 10
	DefaultMaxConcurrency = 4
)

// WithMiddleware adds middlewares around every model call of the agent, in
// [middleware.Chain] order (the first is the outermost; Chain also gives the
// order to use). Each call of WithMiddleware appends to the middlewares of
// earlier calls; nil middlewares are skipped. The default is none: the model
// is called as is. A middleware that implements
// [guard.ObserverInstaller] also observes each run and its tool calls.
func WithMiddleware(mws ...middleware.Middleware) Option {
	return func(c *config) { c.middlewares = append(c.middlewares, mws...) }
}

// WithSystemPrompt sets the system message that starts every run. The
// default, "", sends no system message.
func WithSystemPrompt(s string) Option {
	return func(c *config) { c.systemPrompt = s }
}

// WithMaxIterations sets how many model turns a run may take (default
// [DefaultMaxIterations], 10). A turn is one model call through the middleware
// chain — which may reach the model several times when a middleware re-asks
// or retries — followed by the tool calls it asked for. A run whose model
// still calls tools after n turns ends with [ErrMaxIterations]. It panics if n
// is less than 1.
func WithMaxIterations(n int) Option {
	if n < 1 {
		panic(fmt.Sprintf("agent: WithMaxIterations(%d): a run needs at least one iteration", n))
	}
	return func(c *config) { c.maxIterations = n }
}

// WithMaxConcurrency sets how many tool calls of one model response run at
// the same time (default [DefaultMaxConcurrency], 4). 1 runs them one after
// the other. Results are placed in the transcript in call order whatever the
// order they finish in. It panics if n is less than 1.
func WithMaxConcurrency(n int) Option {
	if n < 1 {
		panic(fmt.Sprintf("agent: WithMaxConcurrency(%d): at least one tool call must be able to run", n))
	}
	return func(c *config) { c.maxConcurrency = n }
}

// WithCallOptions adds options passed on every model call of the agent —
// llms.WithModel, llms.WithTemperature, llms.WithMaxTokens,
// llms.WithStreamingFunc, … — before the agent's own llms.WithTools, so
// the model is always offered the agent's tools. Each call of
// WithCallOptions appends to earlier ones; nil options are skipped. The
// default is none: the provider's defaults. A streaming function is called
// for every model call of every run, concurrently when runs are; pass one
// per run to [Agent.RunMessages] instead to stream a single run.
func WithCallOptions(opts ...llms.CallOption) Option {
	return func(c *config) {
		for _, o := range opts {
			if o != nil {
				c.callOptions = append(c.callOptions, o)
			}
		}
	}
}

// WithToolMiddleware adds tool middlewares around every tool call of the
// agent. As in the model stage ([middleware.Chain]), the first is the
// outermost: it sees the call first and the result last.
//
//	call   ─▶ a ─▶ b ─▶ check arguments ─▶ tool
//	result ◀─ a ◀─ b ◀─────────────────── tool
//
// Each call of a model response goes through the chain on its own, in
// parallel with its siblings (at most [WithMaxConcurrency] at a time);
// results are recorded in call order. Everything inside a middleware that
// calls next more than once runs once per attempt. Each call of
// WithToolMiddleware appends to earlier ones; nil middlewares are skipped.
// The default is none: each call goes straight to its tool.
func WithToolMiddleware(mws ...ToolMiddleware) Option {
	return func(c *config) {
		for _, mw := range mws {
			if mw != nil {
				c.toolMiddlewares = append(c.toolMiddlewares, mw)
			}
		}
	}
}

// WithEventHandler sets a function the agent calls for each event of its
// runs, both stages' (it is the runs' context handler, [guard.WithEvents]):
// the model stage's middlewares' events, the tool stage's (the kinds
// documented with [guard.EventToolRetry]) that the agent reports itself and
// those its tool middlewares report with [ReportEvent], and a refused
// [Agent.Resume]. Give it here once, such as [guard.LogEvents], rather than
// to each middleware too (which would see the model stage's twice). It is
// called on the caller's or the tool call's goroutine, concurrently, and
// must not block. Without it, a run reports to the handler of the context
// it is given ([guard.WithEvents]), except a sub-agent run from a tool of
// another agent, whose events never reach its caller's handler. With no
// handler at all, the events that mean a protection did not hold (a give-up failing open, a forged injected argument, a refused
// approval, a miswired stack) are logged to slog.Default at Warn; the run's
// observers (otelguard) are told either way.
func WithEventHandler(fn func(ctx context.Context, e guard.Event)) Option {
	return func(c *config) { c.events = fn }
}

// WithToolNames sets the name the agent sends the model for each tool: for a
// tool whose Name() is n, fn(n). The default is [SafeToolName], which leaves
// provider-safe names alone. The model's calls of the sent name run the
// tool, which never sees the sent name (an MCP tool calls the server with
// its own name). fn must be deterministic and give distinct tools distinct
// non-empty names; [New] panics otherwise. The sent name is the one the
// transcript, Result.Steps and the unknown-tool message show. Pass an
// identity function to send names unchanged. WithToolNames panics if fn is nil.
func WithToolNames(fn func(name string) string) Option {
	if fn == nil {
		panic("agent: WithToolNames(nil)")
	}
	return func(c *config) { c.toolName = fn }
}

// Inject sets how the agent supplies the injected argument name — a
// top-level property of a tool's schema that the program sets at run time
// and the model must neither see nor set: the caller's user or tenant id
// (read from ctx, where the caller of Run put it), the call's id
// (call.ID), a value from the request. A typed tool declares one with a
// struct field tagged `toolguard:"inject"` ([validation.Typed]), a raw or
// MCP tool with [InjectArgs].
//
// For every call of a tool that declares name, before the tool stage runs,
// the agent drops any value the model sent for it (and reports
// [guard.EventForgedArgument]), calls fn with the run's context (the
// call in it: [CallFrom]) and the call (Args as the model sent them), and
// sets the property to fn's value encoded as JSON. The arguments are then
// validated against the tool's whole schema, the injected properties
// included, so a value of the wrong type fails the call; an error from fn
// fails it too. Either way the tool does not run and the model reads only
// that the call could not be run ([InjectError]), never fn's error or the
// value. Injected values are never in what the model is sent, in
// Result.Messages or Step.ModelArguments, in toolguard's events and logs,
// or in otelguard's spans, unless your own code writes them into text that
// goes there: a tool's error (the model reads it; ToolRetry reports it) or
// a Validate message at a property the model sent. Step.Arguments, the
// arguments the tool ran with, holds them (it is for the program).
// Arguments that are not a JSON object and mention an injected argument
// (which no key can be dropped from) are withheld from every record and
// fail the call.
//
// A call that waits for approval ([WithApproval]) is bound to the values
// fn gave when the gate judged it: [Agent.Resume] runs it only with the
// same ones, unless [WithReinjectOnResume] names the argument.
//
// ToolArgValidation validates the model's arguments against the schema the
// model is sent, which has no Validate hook: a typed tool's Validate method
// runs in the tool stage, after injection, where it sees the injected
// value. A Validate error at a property the model sent is fed back to the
// model as the call's result; one at the root or at an injected property
// fails the call generically (its message might speak of the value).
//
// fn runs on the call's goroutine, concurrently for the calls of a batch
// and for concurrent runs: it must be safe for concurrent use and should
// read per-run values from ctx only. [New] panics if a tool declares an
// injected argument that no Inject supplies; an Inject that no tool needs
// is allowed. Inject panics if name is empty or fn nil; giving the same
// name twice makes New panic.
func Inject(name string, fn func(ctx context.Context, call *ToolCall) (any, error)) Option {
	if name == "" || fn == nil {
		panic(fmt.Sprintf("agent: Inject(%q, %p): needs a property name and a function", name, fn))
	}
	return func(c *config) {
		if _, dup := c.injectors[name]; dup {
			panic(fmt.Sprintf("agent: New: Inject(%q) is given twice", name))
		}
		if c.injectors == nil {
			c.injectors = make(map[string]injector)
		}
		c.injectors[name] = fn
	}
}

// WithOutputSchema makes a run's final answer structured data that must
// validate against schema: a *[validation.Schema] ([validation.Typed] for a
// Go struct, whose Validate method is enforced too) or a JSON Schema in any
// form [validation.Compile] takes, describing a JSON object.
//
// The agent offers the model one more tool, [OutputToolName], whose
// arguments are the answer (LangChain's ToolStrategy). A valid call of it
// ends the run: Result.Output is the answer as compact JSON ([Output]
// decodes it), and Result.Messages ends with the call, its tool message
// ([errfmt.AnswerAccepted]) and an AI message holding the JSON. The
// answer's call is a Step of the run (Tool [OutputToolName]).
//
// Answers go through the pipeline and feedback tool arguments go through:
// the schema reaches ToolArgValidation with the tools' ([guard.WithToolSchemas]),
// so an invalid answer is re-asked there, inside the model call; an answer
// nothing validated (no ToolArgValidation, or one that gave up) is checked
// by the agent and, when invalid, answered with [errfmt.Feedback] in a new
// turn. An answer in plain text is asked again ([errfmt.AnswerInText]).
// Both count against one budget of 2 re-asks per run (a re-ask is a model
// turn, inside which ToolArgValidation makes its own: at most 3×3 model
// calls for an answer it keeps failing open on); past it, and in
// every other way a run can end without a valid answer (a limit's ExitEnd
// answer, [WithMaxIterations], ModelRetry's ContinueOnFailure), Run returns
// an error wrapping [ErrNoOutput] with the partial Result, whose Output is
// "": never a text in place of the answer.
//
// The rule for an answer that arrives with other tool calls (LangChain
// #40423 loses it): the other calls run; if all of them succeed, the answer
// is taken and the run ends; if one fails (a tool error, an unknown tool,
// a denied call), the answer — given before that result was known — is
// not taken: the model reads [errfmt.AnswerNotAccepted] and answers again
// (this does not count against the re-ask budget). Only the first answer
// of a response is considered; later ones are told so. A Direct tool
// result ends the run only as a valid answer: its Content is validated
// like one, and a Content that is not ends the run with [ErrNoOutput].
//
// With [WithApproval] or [WithCheckpointer], an answer waits for its
// turn's other calls: a run that pauses for a person, or is cut off and
// resumed, takes the answer only once those calls have succeeded (the
// answer call itself never needs approval and is validated again on
// Resume).
//
// ToolCallLimit does not count the answer's calls unless it limits
// [OutputToolName] by name, so a run whose tools are used up can still
// answer. [New] panics if a tool is sent under the name [OutputToolName]:
// rename it with [Renamed] or [WithToolNames] (silently renaming the
// user's tool would change what the transcript and Steps show).
//
// WithOutputSchema panics if schema is nil, does not compile, describes
// something other than an object (tool arguments are objects: wrap a list
// or a string in an object's property), or marks a property injected
// ([validation.InjectedKeyword]: the answer is the model's, nothing is
// injected into it, so the model would be offered and set that property).
func WithOutputSchema(schema any) Option {
	if schema == nil {
		panic("agent: WithOutputSchema(nil): the schema must not be nil")
	}
	s, ok := schema.(*validation.Schema)
	if !ok || s == nil {
		var err error
		if s, err = validation.Compile(schema); err != nil {
			panic(fmt.Sprintf("agent: WithOutputSchema: the schema does not compile: %v", err))
		}
	}
	if t, ok := s.Map()["type"]; ok && t != "object" {
		panic(fmt.Sprintf("agent: WithOutputSchema: the schema's type is %v, not \"object\": the answer is the answer tool's arguments, a JSON object; wrap the value in an object's property", t))
	}
	if names := injectedProps(s); len(names) > 0 {
		panic(fmt.Sprintf("agent: WithOutputSchema: the schema marks %q injected; nothing is injected into the answer, which the model writes whole: drop the toolguard:\"inject\" tag", names))
	}
	return func(c *config) { c.output = s }
}

// WithApproval makes the calls for which needs returns true wait for a
// person's decision before they run (LangGraph's interrupt, LangChain's
// HumanInTheLoopMiddleware).
//
// needs sees each call of a model turn that names a tool of the agent,
// with the arguments the tool stage starts with (before the tool
// middlewares) as the tool would get them: checked against its schema,
// with empty values stripped and the default coercions applied ("500"
// becomes 500), or, when they fail the check, as sent. It must be safe for
// concurrent use and must not modify the call. A person never reviews
// arguments the schema rejects: such a call goes through the tool stage,
// which never runs it, and the model reads why. The other calls of the
// turn run; then the run stops and returns its partial *[Result] with an
// *[Interrupt] (errors.As) holding the pending calls. [Agent.Resume]
// continues it.
//
// If a call of the turn ends the run ([ErrStopRun]) or the context ends
// while the others run, the run ends as it would without approval, and the
// pending calls never run.
//
// Several WithApproval and [WithApprovalFor] options add up: a call needs
// approval if any of them says so. WithApproval panics if needs is nil (an
// approval gate that is silently off is the bug it exists to prevent).
func WithApproval(needs func(call *ToolCall) bool) Option {
	if needs == nil {
		panic("agent: WithApproval(nil): the function saying which calls need approval is required")
	}
	return func(c *config) { c.approval.needs = append(c.approval.needs, needs) }
}

// WithApprovalFor makes every call of the named tools wait for a person's
// decision, as [WithApproval] does. [New] panics if a name is not one of
// its tools' (as sent to the model), so a mistyped name cannot silently
// leave a tool ungated. It panics if no name is given.
func WithApprovalFor(tools ...string) Option {
	if len(tools) == 0 {
		panic("agent: WithApprovalFor(): name at least one tool")
	}
	names := slices.Clone(tools)
	return func(c *config) { c.approval.tools = append(c.approval.tools, names...) }
}

// WithInterruptKey signs every [Interrupt] the agent returns with an
// HMAC-SHA256 under key (the application's secret, at least 16 bytes), and
// makes the digests of its pending calls HMACs too. [Agent.Resume] then
// refuses an interrupt whose signature does not verify: an interrupt that
// travelled through a client — a browser, a chat app — cannot have its
// calls, arguments or transcript changed, nor a digest computed for calls
// it never held. The signature is taken over the interrupt's canonical
// JSON (RFC 8785), so it verifies after any JSON round trip, one that reads
// a schema's numbers as doubles included; the digests bind each call's
// arguments digit for digit. Use it whenever an interrupt leaves the
// server. With a [Checkpointer], the state of a run on a thread is read
// from the store anyway, and where the context names a thread Resume
// refuses an unsigned interrupt that carries a state of its own (one of a
// run without a thread); but a run without a thread still puts its state
// in the interrupt, which without a key a client can rewrite. All replicas
// that resume each other's interrupts need the same key. It panics if key
// is shorter than 16 bytes.
func WithInterruptKey(key []byte) Option {
	if len(key) < 16 {
		panic(fmt.Sprintf("agent: WithInterruptKey: the key has %d bytes, want at least 16", len(key)))
	}
	k := slices.Clone(key)
	return func(c *config) { c.approval.key = k }
}

// WithCheckpointer keeps each thread's state in cp: after every model turn
// and every tool batch, and when a run ends or pauses for approval. With
// it, a run on a thread named in the context ([guard.WithThread])
// continues the thread's conversation (the saved transcript comes before
// the new messages; the system prompt is not added again), an [Interrupt]
// leaves its state in cp rather than carrying it, and a run cut off — its
// process died, its context was cancelled — is continued by
// [Agent.Resume] with a nil interrupt, on any replica, without running
// finished calls again.
//
// A call that ran is never forgotten, whatever ends a run inside a
// batch. After [ErrStopRun] or a tool's panic ([ToolPanicError]) the
// thread's transcript holds the stopped turn whole, every call with its
// result or what is known of it, and the next Run continues from it. After
// the context ends, the run saves the turn open, with the calls that
// finished and those that never started (on a context of its own, without
// the caller's cancellation, for at most a second: a store that cannot be
// reached by then leaves the thread as last saved, and the calls of the
// turn are then of unknown outcome); Resume shows the model their results
// and runs none of them again. A save the store does not confirm (an
// error, after which the state may have been stored; or a conflict, which
// a store client's retry of the same save can report) is settled by
// reloading the thread: each saved state carries a random stamp, so the
// run recognises its own write and goes on; a pause for approval whose
// save failed is saved again before the run returns its interrupt. A run
// whose pause cannot be confirmed so returns the store's error, and its
// interrupt, if stored, is read back with [Agent.Pending].
// [Agent.Abandon] ends a thread's unfinished run that no one will
// continue.
//
// Runs without a thread id are not saved, nor are those of a sub-agent
// called from a tool of a run on a thread, unless the tool names a thread
// of its own (see [Agent.RunMessages]). The default is none: a run's
// state lives in the run, and in the Interrupt it returns. WithCheckpointer
// panics if cp is nil.
func WithCheckpointer(cp Checkpointer) Option {
	if cp == nil {
		panic("agent: WithCheckpointer(nil): a Checkpointer is required")
	}
	return func(c *config) { c.approval.cp = cp }
}
