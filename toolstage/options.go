package toolstage

import (
	"context"
	"fmt"
	"slices"

	"github.com/toolguard/toolguard/guard"
)

// WithToolMiddleware adds tool middlewares around every tool call of the
// stage. As in the model stage ([middleware.Chain]), the first is the
// outermost: it sees the call first and the result last.
//
//	call   ─▶ a ─▶ b ─▶ check arguments ─▶ tool
//	result ◀─ a ◀─ b ◀─────────────────── tool
//
// Each call of a batch goes through the chain on its own, in parallel with
// its siblings (at most [WithMaxConcurrency] at a time); outcomes are in
// call order. Everything inside a middleware that
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

// WithEventHandler sets a function the stage calls for each event of both
// stages (it is the context handler of [Stage.Scope], [guard.WithEvents]):
// the model stage's middlewares' events on that context, the tool stage's
// (the kinds documented with [guard.EventToolRetry]) that the stage
// reports itself and those its tool middlewares report with
// [ReportEvent], and a refused [Stage.Resume]. Give it here once, such as [guard.LogEvents], rather than
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

// WithToolNames sets the name the stage offers the model for each tool: for a
// tool whose Name() is n, fn(n). The default is [SafeToolName], which leaves
// provider-safe names alone. The model's calls of the sent name run the
// tool, which never sees the sent name (an MCP tool calls the server with
// its own name). fn must be deterministic and give distinct tools distinct
// non-empty names; [New] panics otherwise. The sent name is the one the
// outcomes' calls and the unknown-tool message show. Pass an
// identity function to send names unchanged. WithToolNames panics if fn is nil.
func WithToolNames(fn func(name string) string) Option {
	if fn == nil {
		panic("toolstage: WithToolNames(nil)")
	}
	return func(c *config) { c.toolName = fn }
}

// Inject sets how the stage supplies the injected argument name — a
// top-level property of a tool's schema that the program sets at run time
// and the model must neither see nor set: the caller's user or tenant id
// (read from ctx, where the caller of [Stage.Run] put it), the call's id
// (call.ID), a value from the request. A typed tool declares one with a
// struct field tagged `toolguard:"inject"` ([validation.Typed]), a raw or
// MCP tool with [InjectArgs].
//
// For every call of a tool that declares name, before the tool stage runs,
// the stage drops any value the model sent for it (and reports
// [guard.EventForgedArgument]), calls fn with Run's context (the
// call in it: [CallFrom]) and the call (Args as the model sent them), and
// sets the property to fn's value encoded as JSON. The arguments are then
// validated against the tool's whole schema, the injected properties
// included, so a value of the wrong type fails the call; an error from fn
// fails it too. Either way the tool does not run and the model reads only
// that the call could not be run ([InjectError]), never fn's error or the
// value. Injected values are never in what the model is sent
// ([Stage.Definitions]), in Outcome.Call, in toolguard's events and logs,
// or in otelguard's spans, unless your own code writes them into text that
// goes there: a tool's error (the model reads it; ToolRetry reports it) or
// a Validate message at a property the model sent. Outcome.Args, the
// arguments the tool ran with, holds them (it is for the program).
// Arguments that are not a JSON object and mention an injected argument
// (which no key can be dropped from) are withheld from every record and
// fail the call.
//
// A call that waits for approval ([WithApproval]) is bound to the values
// fn gave when the gate judged it: [Stage.Resume] runs it only with the
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
// and for concurrent batches: it must be safe for concurrent use and should
// read per-run values from ctx only. [New] panics if a tool declares an
// injected argument that no Inject supplies; an Inject that no tool needs
// is allowed. Inject panics if name is empty or fn nil; giving the same
// name twice makes New panic.
func Inject(name string, fn func(ctx context.Context, call *ToolCall) (any, error)) Option {
	if name == "" || fn == nil {
		panic(fmt.Sprintf("toolstage: Inject(%q, %p): needs a property name and a function", name, fn))
	}
	return func(c *config) {
		if _, dup := c.injectors[name]; dup {
			panic(fmt.Sprintf("toolstage: New: Inject(%q) is given twice", name))
		}
		if c.injectors == nil {
			c.injectors = make(map[string]injector)
		}
		c.injectors[name] = fn
	}
}

// WithApproval makes the calls for which needs returns true wait for a
// person's decision before they run (LangGraph's interrupt, LangChain's
// HumanInTheLoopMiddleware).
//
// needs sees each call of a batch that names a tool of the stage,
// with the arguments the tool stage starts with (before the tool
// middlewares) as the tool would get them: checked against its schema,
// with empty values stripped and the default coercions applied ("500"
// becomes 500), or, when they fail the check, as sent. It must be safe for
// concurrent use and must not modify the call. A person never reviews
// arguments the schema rejects: such a call goes through the tool stage,
// which never runs it, and the model reads why. The other calls of the
// batch run; then [Stage.Run] returns their outcomes and an [*Interrupt]
// (Batch.Interrupt) holding the pending calls. [Stage.Resume] continues it.
//
// If a call of the batch ends it ([ErrStopRun]) or the context ends while
// the others run, the batch ends as it would without approval, and the
// pending calls never run ([ErrCallNotStarted]).
//
// Several WithApproval and [WithApprovalFor] options add up: a call needs
// approval if any of them says so. WithApproval panics if needs is nil (an
// approval gate that is silently off is the bug it exists to prevent).
func WithApproval(needs func(call *ToolCall) bool) Option {
	if needs == nil {
		panic("toolstage: WithApproval(nil): the function saying which calls need approval is required")
	}
	return func(c *config) { c.approval.needs = append(c.approval.needs, needs) }
}

// WithApprovalFor makes every call of the named tools wait for a person's
// decision, as [WithApproval] does. [New] panics if a name is not one of
// its tools' (as sent to the model), so a mistyped name cannot silently
// leave a tool ungated. It panics if no name is given.
func WithApprovalFor(tools ...string) Option {
	if len(tools) == 0 {
		panic("toolstage: WithApprovalFor(): name at least one tool")
	}
	names := slices.Clone(tools)
	return func(c *config) { c.approval.tools = append(c.approval.tools, names...) }
}

// WithInterruptKey signs every [Interrupt] the stage returns with an
// HMAC-SHA256 under key (the application's secret, at least 16 bytes), and
// makes the digests of its pending calls HMACs too. [Stage.Resume] then
// refuses an interrupt whose signature does not verify: an interrupt that
// travelled through a client — a browser, a chat app — cannot have its
// calls, arguments or transcript changed, nor a digest computed for calls
// it never held. The signature is taken over the interrupt's canonical
// JSON (RFC 8785), so it verifies after any JSON round trip, one that reads
// a schema's numbers as doubles included; the digests bind each call's
// arguments digit for digit. Use it whenever an interrupt leaves the
// server. With [WithCheckpointer], an interrupt's state is kept in the
// store and a client holds only its pending calls; without one, the state
// travels in the interrupt, which without a key a client can rewrite. All
// replicas
// that resume each other's interrupts need the same key. It panics if key
// is shorter than 16 bytes.
func WithInterruptKey(key []byte) Option {
	if len(key) < 16 {
		panic(fmt.Sprintf("toolstage: WithInterruptKey: the key has %d bytes, want at least 16", len(key)))
	}
	k := slices.Clone(key)
	return func(c *config) { c.approval.key = k }
}
