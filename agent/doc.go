// Package agent is a tool-calling agent loop for any langchaingo llms.Model
// whose every model call goes through a toolguard middleware chain, and
// whose every tool call goes through a [toolstage.Stage].
//
//	weather := toolstage.NewTool("get_weather", "Current weather in a city.",
//		func(ctx context.Context, args WeatherArgs) (string, error) { ... })
//
//	a := agent.New(llm, toolstage.New([]toolstage.Tool{weather}),
//		agent.WithSystemPrompt("You answer weather questions."),
//		agent.WithMiddleware(middleware.ToolArgValidation()),
//	)
//	res, err := a.Run(ctx, "What's the weather in Paris?")
//	// res.Output is the answer, res.Steps the tool calls that ran.
//
// A run sends the system prompt and the input, with every tool's real JSON
// Schema in llms.WithTools, then loops: it hands the tool calls of the
// model's response to the tool stage ([toolstage.Stage.Run]: in parallel,
// through the tool middlewares, injected arguments and ToolRetry), appends
// each call and its result to the transcript and calls the model again,
// until the model answers in text or [WithMaxIterations] turns have passed
// ([ErrMaxIterations]). The tools, the tool stage's options and its
// vocabulary (Tool, NewTool, ToolRetry, Inject, WithApproval, Interrupt,
// …) are package toolstage's, which runs without langchaingo for programs
// with a loop of their own (openai-go, anthropic-sdk-go, genai through
// httpguard). Inside a tool, [TranscriptFrom] gives the run's transcript
// so far.
//
// With [WithOutputSchema] the run ends in data: the model answers by calling
// the answer tool ([OutputToolName]), whose arguments are validated and
// re-asked like any tool's; Result.Output is the answer's JSON, [Output]
// decodes it, and a run without a valid answer returns [ErrNoOutput].
//
// The transcript uses the layout every provider accepts: one AI message per
// tool call, each followed by its tool message, with call ids synthesized
// deterministically when the provider sends none. A tool's error and a call
// of a tool that does not exist become tool messages the model reads, never
// an aborted run. Cancelling the context stops a run promptly.
//
// A middleware that installs a guard.Observer (middleware.Observe(otelguard.New())
// does: it implements guard.ObserverInstaller) is installed for each
// whole run, and the run's observers that implement guard.RunObserver
// are told of the run and of each tool execution: with otelguard, an
// invoke_agent span per run and an execute_tool span per tool call.
//
// A stage with [toolstage.WithApproval] pauses a run before the calls a
// person must decide on: Run returns a [*toolstage.Interrupt] (plain,
// signable JSON) and [Agent.Resume] runs each call as decided — accepted,
// edited, rejected or answered — matched by a digest of the call and its
// arguments. [WithCheckpointer] keeps each thread's state after every model
// turn and tool batch, so a run on a thread continues its conversation and
// a run cut off with its process is resumed on any replica without running
// finished calls again.
//
// Each Run starts its own count of model calls (Result.ModelCalls), so one
// [Agent] serves concurrent runs. The package imports langchaingo's llms
// package only, never agents, chains or tools.
//
// # Conversations and threads
//
// RunMessages continues a conversation: pass the Messages of the last Result
// plus the new question, and get back the transcript to continue from.
// WithCallOptions passes options (model, temperature, max tokens,
// llms.WithStreamingFunc) on every model call, re-asks included, and
// RunMessages takes more for one run only. A thread named with
// guard.WithThread makes ToolCallLimit's thread limit span the turns
// (ExampleAgent_RunMessages runs this):
//
//	a := agent.New(llm, toolstage.New([]toolstage.Tool{weather}),
//		agent.WithMiddleware(middleware.ToolCallLimit(
//			guard.WithThreadLimit(1), guard.WithExitBehavior(guard.ExitEnd))),
//		agent.WithCallOptions(llms.WithModel("gpt-4o-mini"), llms.WithTemperature(0)),
//	)
//	ctx := guard.WithThread(context.Background(), "user-42")
//
//	history := []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "Weather in Paris?")}
//	res, err := a.RunMessages(ctx, history)
//	// res.Output: "It is sunny in Paris."
//
//	history = append(res.Messages, llms.TextParts(llms.ChatMessageTypeHuman, "And in Lyon?"))
//	res, err = a.RunMessages(ctx, history)
//	// res.Output: "Tool call limit reached: thread limit exceeded (1/1 calls)."
//
// # Structured output
//
// Most agents end in data, not prose. agent.WithOutputSchema(schema) makes the
// run's final answer a JSON object that must validate against schema (a
// validation.Typed[T](), whose Validate() hook is enforced too, or any JSON
// Schema): the agent offers the model one more tool, final_answer
// (agent.OutputToolName), whose arguments are the answer, and a valid call of
// it ends the run. Result.Output is the answer's JSON and agent.Output[T]
// decodes it (ExampleWithOutputSchema runs this):
//
//	a := agent.New(llm, toolstage.New(tools),
//		agent.WithOutputSchema(validation.Typed[Ticket]()),
//		agent.WithMiddleware(middleware.ToolArgValidation()),
//	)
//	res, err := a.Run(ctx, "Route: I was charged twice!")
//	ticket, err := agent.Output[Ticket](res) // {Team:billing Priority:1}
//
// Validated like tool arguments. The schema reaches ToolArgValidation with the
// tools' schemas, so a bad answer is re-asked inside the model call with the
// same feedback (every violation, with its path); without the middleware, the
// agent checks the answer itself and answers a bad one with the same feedback
// in a new turn. An answer in plain text is asked for again (LangChain #37778
// takes it as final). Both count against one budget of 2 re-asks per run.
//
//   - Never a silently wrong output. A run that ends without a valid answer —
//     the budget spent, WithMaxIterations reached, a ModelCallLimit or
//     ToolCallLimit ExitEnd text or ModelRetry's ContinueOnFailure text in
//     place of the model's answer — returns an error wrapping
//     agent.ErrNoOutput (and the limit's *LimitExceededError or the
//     *retry.Error) with the partial result, whose Output is empty.
//     Middlewares mark such stand-in answers; middleware.StandInError(resp)
//     reads the mark.
//   - An answer with other tool calls (LangChain #40423 loses it): the other
//     calls run; if all succeed the answer is taken, and if one fails, the
//     answer (written before that result was known) is refused and the model
//     answers again. Only the first answer of a response counts. ToolCallLimit
//     does not count final_answer (unless you limit it by name), so a run
//     whose tools are used up can still answer.
//   - A tool of yours named final_answer makes agent.New panic: rename it with
//     toolstage.Renamed or toolstage.WithToolNames, rather than have the agent rename one of
//     the two behind your back.
//
// Without the agent (an agents.Executor, a chain, llms.WithJSONMode()),
// middleware.OutputValidation(schema, opts...) checks a text answer — a
// response without tool calls — through the same pipeline: decoded exactly,
// empty values stripped, with WithRepair(repair.Default()) a code fence or
// prose around the object removed, and re-asked (the rejected answer, then the
// violations, errfmt.Answer) up to WithMaxRetries times; then it fails closed
// with an *InvalidOutputError. Place it outermost, so that a limiter's or
// ModelRetry's stand-in answer reaches it and becomes an error
// (ExampleOutputValidation, TestOutputValidationInLangchainExecutor).
// Streaming: each attempt's text is held, so a rejected answer never reaches
// the streaming function; the accepted answer (cleaned) is streamed once,
// whole, and EventReask still tells observers a re-ask happened. A
// tool-calling turn's text is released as it came. In the agent, the answer is
// a tool call: with ToolArgValidation installed, only an accepted answer is
// streamed (as a final_answer tool-call chunk).
//
// # Approval
//
// A stage with toolstage.WithApproval (or WithApprovalFor with tool names)
// pauses a run before the calls that need a person: the other calls of the
// turn run, then Run returns a *toolstage.Interrupt whose pending calls hold
// the validated arguments (a person never reviews a call its schema
// rejects), the tool's schema for a form, and a digest. Resume runs each
// call as decided — Accept, Edit (new arguments, checked against the same
// tool's schema), Reject (the model reads the reason), Respond (the message
// is the result) — through the same tool stage as Run (ExampleAgent_Resume
// runs this; examples/approval is a terminal reviewer):
//
//	newAgent := func() *agent.Agent {
//		stage := toolstage.New([]toolstage.Tool{transfer},
//			toolstage.WithApprovalFor("transfer_money"),                        // or WithApproval(func(*ToolCall) bool)
//			toolstage.WithInterruptKey([]byte("a secret of 16 bytes or more"))) // interrupts sent to clients are signed
//		return agent.New(llm, stage, agent.WithCheckpointer(store))
//	}
//	_, err := newAgent().Run(ctx, "Pay ACME's invoice.")
//	var in *toolstage.Interrupt
//	if errors.As(err, &in) {
//		p := in.Pending[0] // validated arguments, the tool's schema, a digest
//		wire, _ := json.Marshal(in) // plain data: to the reviewer's screen and back
//		var back toolstage.Interrupt
//		_ = json.Unmarshal(wire, &back)
//		res, err := newAgent().Resume(ctx, &back, toolstage.Decision{
//			CallID: p.ID, Digest: p.Digest, // binds the decision to this call and these arguments
//			Action: toolstage.Edit, Args: json.RawMessage(`{"to": "ACME Ltd", "amount": 120}`),
//		})
//	}
//
// What the bug trackers of other frameworks taught, each a regression test in
// agent/approval_test.go:
//
//   - A rejected call never runs (LangChain #37093), whatever other
//     middlewares add to the response or repeat in the tool stage (#40491).
//   - A decision is matched by a digest of the interrupt's random id, the
//     thread, the tool, the call id, the exact arguments, the tool's schema
//     and a keyed MAC of the injected values the gate saw — never by position:
//     a regenerated call, the same call in a later run, a decision moved to
//     another call, a schema changed between pause and resume, or a resume
//     whose injectors give another user id is refused (WithReinjectOnResume
//     opts a property in to re-injection). An edit keeps the call's tool and
//     passes its tool middlewares (#40166); an approved call runs with exactly
//     the approved arguments, never coerced or stripped again, and a tool
//     middleware cannot swap its tool.
//   - A decision that matches no pending call, a pending call without one, two
//     for one call, an unknown action, an invalid edit: refused, nothing runs,
//     and the interrupt stays usable. A mistyped tool name in WithApprovalFor
//     panics in New (#38838).
//   - An interrupt is plain JSON; WithInterruptKey signs it (HMAC-SHA256 over
//     RFC 8785 canonical JSON, so numbers such as 0.50, 1e6 or integers beyond
//     2^53 verify after json.Marshal/Unmarshal), so one that went through a
//     client cannot be forged.
//   - An interrupt resumes once, and finished calls never run again (LangGraph
//     #7780): across replicas for a run on a thread with a shared
//     checkpointer; for a run without a thread, only within one Agent value
//     (SECURITY.md, 7).
//
// WithCheckpointer keeps each thread's state (guard.WithThread) after every
// model turn and tool batch: a run on a thread continues its conversation, and
// a run cut off with its process is finished by Resume(ctx, nil) on any
// replica without running finished calls again (a call cut off while running
// is not run again either: the model reads that its outcome is unknown).
// toolstage.MemoryCheckpointer lives in the process;
// redisstore.NewCheckpointer(client) is shared by replicas, with a
// compare-and-set so two replicas never both resume one interrupt. A run ended
// mid-turn by ErrStopRun or a tool's panic (recovered: *toolstage.ToolPanicError)
// records the turn, so the next run shows the model what ran; a cancelled run
// saves the calls that finished, and Resume(ctx, nil) shows the model their
// results. If a pause was stored but its caller saw an error (a reply lost
// after the write), a.Pending(ctx) returns the stored interrupt;
// a.Abandon(ctx) ends a thread's unfinished run that no one will continue,
// without running anything. A store of your own is tested with
// toolstage/checkpointtest: checkpointtest.Run(t, newStore) and
// checkpointtest.RunFaults(t, newStore).
//
// # Tools from elsewhere
//
// toolstage.NewSchemaTool takes a raw JSON Schema, lctool.FromLangchain adapts a
// langchaingo tools.Tool, and mcptool.Tools offers an MCP server's tools
// (official Go SDK client) with the server's own inputSchema, so a bad call is
// corrected before it reaches the server: see examples/mcp (go run
// ./examples/mcp starts a real MCP server with npx when it can, an in-process
// one otherwise). Already on langchaingo's agents.Executor? Wrap its model and
// keep it: see examples/langchaingo-agent. Its OpenAIFunctionsAgent offers
// every tool as one string ({"__arg1": string}), so there is nothing typed to
// validate: a refund tool gets "19.99" for a number. To give the model typed
// tools (toolstage.NewTool, MCP tools from toolstage/mcptool, toolstage.NewSchemaTool) and
// keep the Executor, offer their schemas with agent/lctool:
//
//	lcTools := []tools.Tool{lctool.ToLangchain(refund), lctool.ToLangchain(mcpSum)}
//	llm := middleware.Wrap(model,
//		lctool.OfferSchemas(refund, mcpSum), // the model sees each tool's own schema
//		middleware.ToolArgValidation(),      // validates against it and re-asks
//		middleware.ModelRetry(),
//	)
//	executor := agents.NewExecutor(agents.NewOpenAIFunctionsAgent(llm, lcTools))
//
// (TestTypedToolsInLangchainExecutor: the model's "19.99" is re-asked and
// corrected, and the tool runs once with 19.99.) Your own middleware:
// examples/custom-middleware.
package agent
