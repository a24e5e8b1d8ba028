// Package middleware is toolguard's langchaingo adapter: it wraps any
// langchaingo llms.Model in a chain of wrap-model-call middlewares that
// make sure only well-formed, allowed tool calls leave the model. The
// stages are package guard's, written once for every host, given this
// package's codec for langchaingo's requests and responses:
//
//   - [ToolArgValidation] validates every tool call against its tool's JSON
//     Schema, strips hallucinated empty values, and re-asks the model with
//     feedback naming every violation ([guard.ToolArgValidation]);
//   - [ModelRetry] retries transient model errors (429, 5xx, timeouts) with
//     backoff, jitter and the server's retry hint (Retry-After headers
//     through [retry.HTTPClient]) ([guard.ModelRetry]);
//   - [ToolCallLimit] caps tool calls per run and per thread, for all tools
//     or one ([guard.ToolCallLimit]);
//   - [ModelCallLimit] caps model calls per run and per thread
//     ([guard.ModelCallLimit]);
//   - [OutputValidation] makes a final text answer a JSON object its schema
//     accepts (repaired, re-asked, held from the stream until accepted),
//     for callers without package agent ([guard.OutputValidation]).
//
// They take package guard's options. [Wrap] returns an llms.Model, so the
// result drops into langchaingo's agents and chains or any loop of your
// own:
//
//	guarded := middleware.Wrap(llm,
//		middleware.ToolCallLimit(guard.WithRunLimit(20)),
//		middleware.ToolArgValidation(),
//		middleware.ModelRetry(),
//	)
//
// The order matters; [Chain] states the rule and why this order is the one
// to use. Writing a middleware takes one function ([Func], [Handler]); [From]
// adapts any guard middleware, and [Observe] installs a [guard.Observer]
// (otelguard's). Events reach one handler ([guard.WithEvents] on the
// context, or [guard.WithEventHandler] per middleware; [guard.LogEvents]
// adapts slog). Everything in the package is safe for concurrent use. The
// package imports langchaingo's llms only: not its agents, chains or tools.
// For tests, package fakemodel provides a scripted tool-calling model.
//
// # Requests and responses
//
// A tool's schema comes from the request's tools: Function.Parameters as a
// map[string]any, json.RawMessage, []byte, string, a *[validation.Schema]
// (from [validation.Typed] or [validation.Compile]) or any JSON-marshalable
// value such as langchaingo's jsonschema.Definition; the deprecated
// llms.WithFunctions counts too ([Request.Tools]). [guard.WithToolSchemas]
// lets an agent that sends maps (langchaingo's googleai provider takes
// nothing else) hand over the originals, so that a typed schema keeps its
// [validation.Validator] hook.
//
// Tool calls are read from every choice of a response (Anthropic's
// provider returns one choice per content block; a choice with only the
// legacy FuncCall counts too), and a call without an id gets a
// deterministic one, written back ([ToolCalls]). Cleaned arguments are
// written into each call's FunctionCall. A re-ask shows the model the
// original messages and its latest rejected response, one AI message per
// tool call (the first also carrying the response's text), each followed
// by a tool message — the layout OpenAI, Anthropic and Google accept alike
// ([ToolCallMessages]). A stand-in answer (a limit's [guard.ExitEnd], a
// [guard.ContinueOnFailure]) is a one-choice text response that
// [StandInError] reads back.
//
// # Streaming
//
// With llms.WithStreamingFunc (or WithStreamingReasoningFunc) each attempt
// of a re-invoking middleware streams. [ToolArgValidation] and
// [ToolCallLimit] give every attempt streaming functions of their own:
//
//   - text chunks (and reasoning) reach the caller at once, unchanged;
//   - tool-call chunks are held back: chunks shaped exactly as
//     langchaingo's OpenAI client streams tool-call deltas (a JSON array of
//     {"id"?, "type", "function": {"name", "arguments"}}, or a legacy
//     {"name", "arguments"} object). Text never has that shape in practice;
//   - when the attempt is accepted, each returned tool call — stripped,
//     repaired, with its synthesized id — is streamed once, whole, as one
//     chunk in that shape: [{"id":"call_2","type":"function","function":
//     {"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]. A
//     rejected or blocked call is never streamed, and a consumer that
//     accumulates deltas as the OpenAI client does ends with the returned
//     calls;
//   - before a re-ask, [guard.EventReask] reaches the context's observers
//     ([guard.WithObserver], [guard.ObserverFunc]) before any chunk of the new attempt.
//
// So a streaming UI installs an observer on the request's context and, on
// EventReask (and EventRetry, for [guard.WithRetryStreamed]), discards what it
// streamed for the call: everything after the last such event is the
// answer that is returned. Stacked middlewares compose: an outer limiter
// holds what an inner validator flushes. Providers that stream no tool
// calls (in langchaingo v0.1.14: Anthropic, Google AI, Ollama, Mistral,
// Bedrock stream text only) have nothing held; their tool calls are in the
// response only (Ollama's client returns none). A caller's streaming error while flushing fails the call.
//
// A streaming UI resets when a re-ask begins:
//
//	ctx = guard.WithObserver(ctx, guard.ObserverFunc(func(ctx context.Context, e guard.Event) {
//		if e.Kind == guard.EventReask || e.Kind == guard.EventRetry {
//			ui.Reset() // what was streamed for this call belongs to a discarded attempt
//		}
//	}))
//	resp, err := guarded.GenerateContent(ctx, messages, llms.WithTools(tools), llms.WithStreamingFunc(ui.Write))
//
// What the caller's streaming function receives, through langchaingo's real
// OpenAI client and a loopback SSE server, when the first call is rejected
// (TestStreamingThroughOpenAIProvider; <reask> marks the observer's event, ""
// the empty chunks the client passes on):
//
//	""  "Let me check."  ""  <reask>  ""  "Let me check."  ""
//	[{"id":"call_2","type":"function","function":{"name":"get_weather","arguments":"{\"city\": \"Paris\"}"}}]
//
// The same
// holds through langchaingo's agents.Executor (chains.WithStreamingFunc;
// TestStreamingThroughLangchainExecutor).
//
// # Limits
//
// Limiters stack and count each call once (package guard, "Limits"):
//
//	Wrap(model,
//		ToolCallLimit(guard.WithRunLimit(10)),
//		ToolCallLimit(guard.WithToolName("search"), guard.WithRunLimit(3)),
//	)
//
// caps all calls at 10 and searches at 3 per run. Without a run in the
// context ([guard.WithRun]), the run is read from the transcript: the tool
// calls (or, for ModelCallLimit, the AI messages) after the last human
// message, so an unchanged agents.Executor works; langchaingo records each
// parallel call as an AI message of its own, so ModelCallLimit's count from
// a transcript is an upper bound. Place limiters outside re-invoking
// middlewares: a middleware outside a limiter that discards its response
// would leave counted calls that never ran. Each [ModelCallLimit] keeps its
// own run count, so an outer one (agent steps) and an inner one (requests,
// re-asks included) may be stacked in one run.
//
// # Provider clients
//
// langchaingo's clients drop response headers, so ModelRetry reads a
// Retry-After header only when the provider client is given
// retry.HTTPClient(nil) (or retry.HTTPClient(yourClient)):
// openai.WithHTTPClient, anthropic.WithHTTPClient, ollama.WithHTTPClient. Its
// transport passes every response on and records the header in the attempt's
// context, where ModelRetry reads it; the longer of the header and the error's
// hint wins. Measured through the real OpenAI and Anthropic clients against a
// loopback server answering 429 with Retry-After: 3 and no hint in the body
// (and the Ollama client on a 503), ModelRetry waits 3 s with it and its own
// backoff (1 s ±25%) without it (middleware/retryafter_test.go).
//
// Some langchaingo providers' clients retry on their own (in langchaingo
// v0.1.14: the AWS SDK behind Bedrock makes up to 3 attempts on throttling and
// 5xx, Google's genai client retries 503 for up to 10 minutes, the Mistral
// client makes up to 5 attempts on 429 and 5xx; the OpenAI, Anthropic and
// Ollama clients make one). With the defaults, Wrap(bedrockModel,
// ToolArgValidation(), ModelRetry()) may send one GenerateContent call to
// Bedrock 3 × 3 × 3 = 27 times, with up to about 3.75 s of ModelRetry's waits
// per model call on top of the SDK's.
//
// langchaingo's native ollama client sends no tools and drops the tool
// calls of Ollama's answer, with no error, so nothing reaches the
// middlewares: use langchaingo's openai client with Ollama's
// OpenAI-compatible endpoint for tool calling,
// openai.New(openai.WithBaseURL("http://localhost:11434/v1"),
// openai.WithToken("ollama"), openai.WithModel("qwen3")) (both checked
// against a loopback Ollama in middleware/ollama_test.go).
// ToolArgValidation reports an answer to a request offering tools that
// has neither a tool call nor text ([guard.EventEmptyResponse]).
//
// # Mistakes
//
// Mistakes in wiring are reported, never guessed around (each checked by a
// test in middleware/misconfig_test.go):
//
//   - a schema that is not one, such as Parameters: WeatherArgs{} (a Go
//     struct value, marshaled to {"city":""}, which JSON Schema reads as
//     "accept anything"), is refused by validation.Compile
//     (validation.ErrNoKeyword): a [guard.EventSchemaError], and a
//     *guard.SchemaError with guard.WithFailClosed. Use
//     validation.Typed[WeatherArgs](). {} still means "any object";
//   - a tool offered with langchaingo's one-string schema {"__arg1": string}
//     (agents.OpenAIFunctionsAgent offers every tools.Tool so): a
//     [guard.EventMisconfigured] naming the fix, lctool.OfferSchemas with
//     lctool.SchemaFor, which gives each tool its own schema beside it;
//   - a [guard.WithToolName] that names none of the offered tools
//     (getWeather for get_weather), a ToolCallLimit inside a
//     ToolArgValidation (it would spend the run's budget on calls
//     validation rejects), a thread limit with no thread id in the
//     context, two offered tools of one name: a [guard.EventMisconfigured],
//     once per middleware.
//
// Without an event handler they are logged to slog.Default at Warn, with
// the fail-open events ([guard.WithEventHandler]); wire [guard.LogEvents]
// (or a [guard.Observer]) to see the rest.
//
// # Testing
//
// fakemodel is a scripted tool-calling model, like httptest for agents:
//
//	m := fakemodel.New(
//		fakemodel.ToolCalls(fakemodel.Call("get_weather", `{"city": 42}`)),
//		fakemodel.ToolCalls(fakemodel.Call("get_weather", `{"city": "Paris"}`)),
//		fakemodel.Text("It is sunny in Paris."),
//	)
package middleware
