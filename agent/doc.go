// Package agent is a tool-calling agent loop for any langchaingo llms.Model
// whose every model call goes through a toolguard middleware chain.
//
//	weather := agent.NewTool("get_weather", "Current weather in a city.",
//		func(ctx context.Context, args WeatherArgs) (string, error) { ... })
//
//	a := agent.New(llm, []agent.Tool{weather},
//		agent.WithSystemPrompt("You answer weather questions."),
//		agent.WithMiddleware(middleware.ToolArgValidation()),
//	)
//	res, err := a.Run(ctx, "What's the weather in Paris?")
//	// res.Output is the answer, res.Steps the tool calls that ran.
//
// A run sends the system prompt and the input, with every tool's real JSON
// Schema in llms.WithTools, then loops: it runs the tool calls of the
// model's response (in parallel, [WithMaxConcurrency]), appends each call and
// its result to the transcript and calls the model again, until the model
// answers in text or [WithMaxIterations] turns have passed ([ErrMaxIterations]).
//
// With [WithOutputSchema] the run ends in data: the model answers by calling
// the answer tool ([OutputToolName]), whose arguments are validated and
// re-asked like any tool's; Result.Output is the answer's JSON, [Output]
// decodes it, and a run without a valid answer returns [ErrNoOutput].
//
// A tool whose name providers reject (outside ^[a-zA-Z0-9_-]{1,64}$) is
// offered under [SafeToolName] ([WithToolNames]).
//
// Tools come from [NewTool] (arguments decoded into a Go struct whose schema
// is inferred with validation.Typed), [NewSchemaTool] (a raw JSON Schema,
// arguments as a map), the subpackage lctool (langchaingo tools.Tool values)
// or any type implementing [Tool]; [NewResultTool] (or any [ResultTool])
// returns a whole [ToolResult]: an Artifact for the program, Direct to end
// the run.
//
// Between an accepted call and its tool is the tool stage: tool middlewares
// ([WithToolMiddleware], the first outermost, as in the model stage) deny,
// rewrite, answer or retry each call. [ToolRetry] repeats a failed call only
// when that is safe: the tool is [Idempotent], or its error wraps
// [ErrNotRun]; a tool that is neither and fails with an unknown outcome is
// never repeated, and the model is told to check it first.
//
// Arguments the model must neither see nor set — the caller's user id, the
// call's id — are injected: a struct field tagged `toolguard:"inject"`, or
// [InjectArgs] for raw and MCP schemas, and [Inject] to supply the value.
// The model is sent the schema without them; a value it sends anyway is
// dropped and reported (guard.EventForgedArgument), never echoed.
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
// [WithApproval] pauses a run before the calls a person must decide on: Run
// returns an [*Interrupt] (plain, signable JSON) and [Agent.Resume] runs
// each call as decided — accepted, edited, rejected or answered — matched
// by a digest of the call and its arguments. [WithCheckpointer] keeps each
// thread's state after every model turn and tool batch, so a run on a
// thread continues its conversation and a run cut off with its process is
// resumed on any replica without running finished calls again.
//
// Each Run starts its own count of model calls (Result.ModelCalls), so one
// [Agent] serves concurrent runs. The package imports langchaingo's llms
// package only, never agents, chains or tools.
package agent
