// Package toolstage is the tool stage: what happens between a tool call
// the model stage accepted and the tool — tool middlewares, injected
// arguments the model can neither see nor set, arguments checked once, a
// ToolRetry that never repeats an unsafe call, panics recovered, and
// approvals that pause a batch for a person and resume it on any process.
// It imports guard and the engines, never langchaingo: an openai-go,
// anthropic-sdk-go or genai program keeps its own loop and gets all of it.
//
//	stage := toolstage.New([]toolstage.Tool{transfer, balance},
//		toolstage.Inject("user_id", userFromRequest),    // the model never sees nor sets it
//		toolstage.WithApprovalFor("transfer_money"),     // a person decides first
//		toolstage.WithInterruptKey(key),                 // interrupts that travel are signed
//		toolstage.WithCheckpointer(store),               // resumed once, on any replica
//		toolstage.WithToolMiddleware(toolstage.ToolRetry()))
//
//	ctx = stage.Scope(ctx) // httpguard validates against the stage's schemas, minus injected ones
//	for {
//		resp := callTheModel(ctx, stage.Definitions()) // your client, through httpguard
//		calls := callsOf(resp)                          // []guard.Call
//		if len(calls) == 0 {
//			break
//		}
//		batch, err := stage.Run(ctx, calls)
//		// append a tool message per batch.Outcomes[i] (Call.ID, Content)
//		if batch.Interrupt != nil {
//			// show batch.Interrupt.Pending to a person; later, on any replica:
//			// batch, err = stage.Resume(ctx, in, decisions...) gives every call's outcome
//		}
//	}
//
// Its input is [guard.Call], what every model-stage codec yields; its
// output is an [Outcome] per call, which the host turns into tool messages
// in its own shape. toolguard's agent (package agent) is the langchaingo
// loop over a Stage. [Stage.Scope] tells the model stage on the context
// (httpguard, middleware) the tools' schemas and injected arguments, and
// starts the record of the calls it validated, so that a call validated
// there is not validated again here.
//
// Each call's execution, the tool middlewares' work included, is told to
// the observers on Run's context that implement [guard.RunObserver]: with
// otelguard's observer on it ([guard.WithObserver]), an execute_tool span
// per call, carrying the tool stage's events.
//
// # The tool stage
//
// A tool call goes through two stages. The model stage (httpguard,
// package middleware) makes sure only well-formed, allowed calls leave the
// model. The tool stage ([WithToolMiddleware]) is what happens between an
// accepted call and the tool: deny a call by policy, rewrite or fill in an
// argument, answer from a cache, retry, end the batch.
//
//	model stage   httpguard, middleware                                    package guard
//	  request ─▶ ToolCallLimit ─▶ ToolArgValidation ─▶ ModelRetry ─▶ model
//	  accepted calls ◀───────────────────────────────────────────────┘
//	      │  each call on its own, in parallel; outcomes in call order
//	      ▼
//	tool stage    toolstage.WithToolMiddleware(...)                        package toolstage
//	  call   ─▶ policy ─▶ rewrite ─▶ ToolRetry ─▶ check arguments ─▶ tool
//	  result ◀─ policy ◀─ rewrite ◀─ ToolRetry ◀────────────────── tool
//	      │  tool messages (a Direct result may end the loop instead)
//	      ▼
//	  next model turn
//
// The order rule is the model stage's: the first middleware is the
// outermost. A tool middleware is a [ToolFunc]; it sees a *[ToolCall] (id,
// name, arguments, tool) and returns a *[ToolResult] (Content for the
// model, Artifact for the program only, Direct to end the loop with it) or
// an error the model reads. A tool returns a whole ToolResult itself when
// it is a [ResultTool] ([NewResultTool] makes a typed one). Arguments a
// middleware replaces are checked against the tool's schema before the
// tool runs, so a tool never receives arguments its schema rejects; a call
// the model stage already validated is not validated again. Inside a tool
// or a tool middleware, [CallFrom] gives the call's id, the thread and the
// attempt. An error wrapping [ErrStopRun] ends the batch.
//
// [ToolRetry] retries a failed call with ModelRetry's policy, but only
// when a repeat is safe: the tool is marked [Idempotent] and the failure is
// transient (a timeout, a 503, a broken connection), or the tool's error
// wraps [ErrNotRun] (it failed before doing anything). A tool that is not
// idempotent and times out is never run again: its outcome is unknown, and
// the model reads that it must check before repeating it (LangChain's
// ToolRetryMiddleware replays it: one payment asked for, three made). The
// tool stage's events (tool_retry, tool_outcome_unknown, tool_denied,
// args_rewritten, args_rejected, run_stopped) reach [WithEventHandler]
// (give it guard.LogEvents(logger)) and otelguard, on the call's
// execute_tool span.
//
// # Injected arguments: what the model can neither see nor set
//
// Some tool arguments must never come from the model: the signed-in user's
// or tenant's id, the call's id, a value from the request. A
// prompt-injected model that sets user_id is a privilege escalation.
// Declare such an argument and the stage supplies it:
//
//	type OrderArgs struct {
//		Item   string `json:"item"`
//		UserID string `json:"user_id" toolguard:"inject"` // typed tools: a tag
//	}
//	order := toolstage.NewTool("place_order", "Order an item.", placeOrder)
//	invoices := toolstage.InjectArgs(mcpInvoices, "user_id") // raw and MCP schemas
//	stage := toolstage.New([]toolstage.Tool{order, invoices},
//		toolstage.Inject("user_id", func(ctx context.Context, call *toolstage.ToolCall) (any, error) {
//			return userFrom(ctx) // your request's signed-in user
//		}))
//
// What a model sees: the tool's schema without the property
// ([Stage.Definitions]) — not in properties, not in required — and nothing
// else about it. Feedback, re-asks and the outcomes' calls never hold an
// injected value or name the property.
//
// What a model can do: nothing to it. A value it sends for the property
// anyway (the attack) is dropped before validation, whether the schema is
// closed (typed) or open (most MCP schemas), with or without the model
// stage; the tool gets the injected value; and a forged_argument security
// event names the tool, the call id and the path — never the value. When
// an injector fails, or its value does not validate, the call fails with
// one generic message (never the injector's error or the value) and the
// tool does not run. A program with no stage tells httpguard or middleware
// the injected names itself with guard.WithInjectedArgs.
//
// # Approval
//
// [WithApproval] (or [WithApprovalFor]) makes the calls that need a person
// wait: [Stage.Run] runs the batch's other calls and returns an
// [*Interrupt] in the [Batch] — plain data, JSON, signed with
// [WithInterruptKey] — whose pending calls hold the validated arguments, the
// tool's schema for a form, and a digest binding a decision to the call.
// [Stage.Resume], on any process with the same tools and key, runs each
// call as decided (Accept, Edit, Reject, Respond) and returns an outcome
// for every call of the interrupted batch, in call order, the calls that
// ran before the pause included. A replayed, forged or tampered interrupt
// is refused ([ErrInterruptRefused]) and nothing runs; a decision that
// matches no pending call, a pending call without one, two for one call, an
// invalid edit: [ErrDecisionRefused], nothing runs, and the interrupt stays
// usable. With [WithCheckpointer] an interrupt is used at most once across
// every process sharing the store.
//
// # Tool names providers accept
//
// OpenAI and Anthropic reject function names outside ^[a-zA-Z0-9_-]{1,64}$
// with a 400, and MCP servers name tools files.read or a/b. [New] offers
// such a tool under [SafeToolName] — the name with other characters
// replaced by _ and an 8-hex-digit hash of the original appended
// (files.read → files_read_601e4eb6): stable across processes, distinct
// for distinct names (a collision is refused, never silently merged). The
// model's call of that name runs the tool, and an MCP tool calls the
// server by the server's name. [WithToolNames] supplies your own mapping.
package toolstage
