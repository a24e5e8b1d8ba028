// Package httpguard guards LLM tool calls at the wire: [Transport] is an
// http.RoundTripper for any Go client that takes an *http.Client
// (openai-go, anthropic-sdk-go, google.golang.org/genai and so ADK-Go,
// sashabaranov/go-openai, Eino's and Genkit's OpenAI models, langchaingo's
// own clients, Ollama's github.com/ollama/ollama/api, aws-sdk-go-v2's
// Bedrock Runtime). It runs package guard's stages — argument validation with
// re-asks, retries, tool and model call limits — on the requests it
// recognises, sync and streaming, and passes everything else through
// untouched. It imports no SDK: it speaks the wire protocols, which change
// far more slowly than the SDKs' Go types.
//
//	client := openai.NewClient(option.WithHTTPClient(&http.Client{
//		Transport: httpguard.New(nil, httpguard.ToolArgValidation(), httpguard.ModelRetry()),
//	}))
//
// The middlewares take package guard's options ([guard.WithMaxRetries],
// [guard.WithFailClosed], [guard.WithEventHandler], [guard.WithRunLimit],
// …) and behave as package guard documents; this page says what the wire
// adds.
//
// # Using it with an SDK
//
// Give the SDK an *http.Client whose Transport is [New]'s, the stages
// first to last (outermost first), ModelRetry last:
//
//	guarded := &http.Client{Transport: httpguard.New(nil,
//		httpguard.ToolCallLimit(guard.WithRunLimit(20)),
//		httpguard.ToolArgValidation(),
//		httpguard.ModelRetry(),
//	)}
//	oa := openai.NewClient(option.WithHTTPClient(guarded), option.WithMaxRetries(0))         // openai-go
//	an := anthropic.NewClient(aoption.WithHTTPClient(guarded), aoption.WithMaxRetries(0))    // anthropic-sdk-go
//	gc, _ := genai.NewClient(ctx, &genai.ClientConfig{HTTPClient: guarded})                 // genai, ADK-Go
//	cfg := goopenai.DefaultConfig(key); cfg.HTTPClient = guarded                            // go-openai
//	llm, _ := lcopenai.New(lcopenai.WithHTTPClient(guarded))                                 // langchaingo
//	oc := api.NewClient(base, guarded)                                                       // ollama/api
//
// Nothing else changes in the program: it reads the SDK's responses and
// streams as before, through the SDK's own accessors (openai-go's
// AsFunction and ChatCompletionAccumulator, anthropic-sdk-go's AsToolUse,
// ToParam and Message.Accumulate), and they hold the corrected calls. A
// call the guard refuses reaches the program as the SDK's API error (see
// "Failing closed"); events go to each middleware's
// [guard.WithEventHandler], and to slog.Default at Warn when they mean a
// call passed unchecked. Runs and threads for the limits come from the
// request's context ([guard.WithRun], [guard.WithThread]): pass the
// context to the SDK's call (every SDK takes one). Give the SDK no retries
// of its own when ModelRetry is installed (see "Retries").
//
// # The tool stage
//
// httpguard guards what the model says; what the program then does with a
// call is the tool stage's: package toolstage, which keeps the program's
// own loop. Pass the context its Stage.Scope returns to each SDK call:
// the transport reads the stage's tool schemas and injected argument names
// from it ([guard.WithToolSchemas], [guard.WithInjectedArgs]), so the
// model is validated against the tools' own schemas (a typed tool's
// Validate hook included), never sees nor sets an injected argument (a
// value it sends anyway is dropped and reported), and the calls it
// validated are recorded ([guard.WithCallRecord]) so that Stage.Run does
// not check them again. A program with no stage that must hide arguments
// from the model names them with [guard.WithInjectedArgs] on the context.
//
// # Tested with
//
// Each host below ran through [New] against loopback servers that speak
// its wire protocol (package fakeprovider): a bad tool call re-asked and
// the corrected call read through the host's own accessors (an agent's
// tool run once, with it), sync and streaming; and, but for Genkit's
// Gemini plugin, a refusal surfaced as the host's own error, sent once.
// Ollama's native API was tested against loopback servers of its own in
// httpguard/sdktest (fakeprovider does not speak it). The tests are in
// the nested modules httpguard/sdktest and
// httpguard/frameworktest, whose go.mod files fix the versions below (a
// test in each checks this list against them). guarded is the
// *http.Client of "Using it with an SDK".
//
//	openai-go: Chat Completions, Responses          github.com/openai/openai-go/v3 v3.98.0
//	    openai.NewClient(option.WithHTTPClient(guarded), option.WithMaxRetries(0))
//	anthropic-sdk-go: Messages, BetaToolRunner      github.com/anthropics/anthropic-sdk-go/v2 v2.15.0
//	    anthropic.NewClient(option.WithHTTPClient(guarded), option.WithMaxRetries(0))
//	genai: generateContent, streams with alt=sse    google.golang.org/genai v1.77.0
//	    genai.NewClient(ctx, &genai.ClientConfig{HTTPClient: guarded})
//	aws-sdk-go-v2: Bedrock Converse, ConverseStream github.com/aws/aws-sdk-go-v2/service/bedrockruntime v1.63.13
//	    bedrockruntime.NewFromConfig(cfg, func(o *bedrockruntime.Options) { o.HTTPClient = guarded; o.RetryMaxAttempts = 1 })
//	    (guarded's New given WithSigner: see "Amazon Bedrock and request signing")
//	ADK-Go: through genai, not tested itself (its module is not served where the tests run)
//	    gemini.NewModel(ctx, "gemini-2.5-flash", &genai.ClientConfig{HTTPClient: guarded})
//	go-openai                                       github.com/sashabaranov/go-openai v1.43.0
//	    cfg := openai.DefaultConfig(key); cfg.HTTPClient = guarded
//	langchaingo: openai, anthropic                  github.com/tmc/langchaingo v0.1.14
//	    openai.New(openai.WithHTTPClient(guarded)); anthropic.New(anthropic.WithHTTPClient(guarded))
//	langchaingo: googleai, sync (streams unguarded) github.com/tmc/langchaingo v0.1.14
//	    googleai.New(ctx, googleai.WithRest(), googleai.WithHTTPClient(guarded))
//	ollama/api: Chat, sync and streamed (NDJSON)    github.com/ollama/ollama v0.17.4
//	    api.NewClient(base, guarded)
//	langchaingo: ollama (sends no tools)            github.com/tmc/langchaingo v0.1.14
//	    ollama.New(ollama.WithServerURL(url), ollama.WithHTTPClient(guarded))
//	Eino: a ReAct agent on eino-ext's OpenAI model  github.com/cloudwego/eino v0.7.36
//	                                                github.com/cloudwego/eino-ext/components/model/openai v0.1.7
//	    openai.NewChatModel(ctx, &openai.ChatModelConfig{HTTPClient: guarded, ...})
//	Genkit: OpenAI-compatible plugin                github.com/firebase/genkit/go v1.4.0
//	                                                github.com/openai/openai-go v1.8.2
//	    &compat_oai.OpenAICompatible{..., Opts: []option.RequestOption{option.WithHTTPClient(guarded), option.WithMaxRetries(0)}}
//	Genkit: Gemini plugin, through a proxy          github.com/firebase/genkit/go v1.4.0
//	    GOOGLE_GEMINI_BASE_URL=http://<a reverse proxy whose transport is httpguard, such as toolguard-proxy>
//
// langchaingo's googleai client speaks gRPC unless given WithRest, and
// streams a JSON array (streamGenerateContent without alt=sse), which
// passes through unguarded (see "Protocols"). langchaingo's native ollama
// client (llms/ollama) sends no tools and reads no tool calls, whatever
// the call options say: its requests offer nothing to guard and pass as
// they came; a langchaingo program calls tools on Ollama through its openai
// client and Ollama's /v1 endpoint, guarded as Chat Completions. Genkit's Gemini plugin makes
// its own *http.Client and takes none: it was tested behind an
// httputil.ReverseProxy whose Transport is httpguard's, as
// cmd/toolguard-proxy runs it. Their own retries, measured against a
// provider answering 429: openai-go, anthropic-sdk-go and Genkit's
// OpenAI-compatible plugin 2 (3 requests); genai none unless
// HTTPOptions.RetryOptions asks; go-openai, langchaingo's openai and
// anthropic clients and Eino's OpenAI model none; langchaingo's googleai
// none for a 429, but it repeats a 503 with backoff until the call's
// context ends (generative-ai-go's own retry), under ModelRetry too.
//
// # Protocols
//
// A request is recognised by its method, path and body: OpenAI Chat
// Completions (POST …/chat/completions, which OpenAI-compatible servers
// speak too), OpenAI Responses (POST …/responses), Anthropic Messages
// (POST …/v1/messages), Gemini (POST …/models/{model}:generateContent
// and :streamGenerateContent?alt=sse), Ollama's native chat (POST
// …/api/chat) and Amazon Bedrock Converse (POST …/model/{modelId}/converse
// and …/converse-stream, whose stream is an AWS event stream). Its body
// must parse as the protocol's. Anything else goes to the base transport untouched: the
// same *http.Request, or a clone carrying the same bytes when the body had
// to be read. A POST of JSON offering tools on a path the transport does
// not know is reported once per host and path, at Warn on slog.Default
// ("misconfigured"): a provider or a prefix httpguard does not recognise
// leaves its calls unguarded. A Transport remembers at most 4096 reports
// (8 bytes each, however long the path); past that it logs each one every
// time, so that a client sending ever new paths grows no memory.
//
// Ollama's native API differs from the others in three ways the guard
// follows. A request streams unless its body says "stream": false (a body
// without the member streams, as langchaingo's ollama client sends its
// sync calls). A stream is newline-delimited JSON (application/x-ndjson),
// one ChatResponse a line, the last with "done": true, done_reason and
// the counts (prompt_eval_count and eval_count are the usage); an
// {"error": "…"} line ends a stream that failed. A call's arguments are a
// JSON object, not a string, and its id may be missing (servers before
// 0.12 send none): such a call is matched by position and name, as
// Gemini's are, no id is ever added to what the client reads, and the
// re-ask answers it by tool_name alone.
//
// # What it cannot read, it does not pass
//
// An answer the guard cannot read is never taken for one without tool
// calls: a coding it cannot undo (see "Compressed answers"), a body past
// [MaxBody], the answer
// to a streaming request that is not labelled as an event stream (Gemini's
// JSON-array stream without alt=sse, which langchaingo's googleai client
// uses; for Ollama, as NDJSON), an Ollama stream that ends before its done
// line (a call may have been cut off with the rest), a shape it does not know (a legacy function_call, several
// choices or candidates that call tools, an output item or block of a
// type it does not know), a protocol key given twice or differing only in
// case from the protocol's spelling (the SDKs decode with encoding/json,
// which matches keys without regard to case and keeps the last of two:
// the guard would check one call while the SDK read another). With
// [guard.WithFailClosed] (given to ToolArgValidation, and to ToolCallLimit,
// which cannot count such an answer's calls either) the client gets an
// HTTP 502 in the protocol's error shape, type response_unguardable,
// x-should-retry: false, the reason in the message; failing open, the
// answer passes as it came with a [guard.EventUnguarded] naming the
// reason, every time (logged at Warn on slog.Default without a handler,
// counted by otelguard). A request that offers tools in a shape the guard
// cannot parse is sent as it came, and its answer is handled the same way.
// A stream that turns unreadable part-way (an event it cannot read) is
// refused in both modes: part of it was read, and what the client would
// read of the rest could not be checked. What the guard can read of a
// mixed answer it guards: function calls beside items that are not
// function calls (custom tools, shell and patch calls, computer use, MCP
// approvals, images) are validated, cleaned, re-asked and counted, and the
// other items pass as they are.
//
// A Chat Completions custom (freeform) tool call passes as it is, beside
// the function calls of its response, which are guarded as usual: its
// text is not validated and the limits do not count it; a re-ask replays
// it and answers it with a tool message saying it was not run.
//
// Headers, the query and every member of the JSON the guard does not
// rewrite pass through byte for byte. A response the guard accepts as it
// came reaches the client byte for byte; one it cleans differs only in the
// cleaned arguments (see package guard's ToolArgValidation), written where
// every SDK's accessor reads them.
//
// # Compressed answers
//
// An answer compressed by the provider or a gateway between (a client
// that sets Accept-Encoding gets the body encoded: Go's http.Transport
// decodes gzip itself only when it asked for it) is decoded before the
// guard reads it, sync and streamed (a stream as its bytes arrive): the
// codings its Content-Encoding lists (gzip, deflate with or without its
// zlib wrapper, br; at most three, in the order applied) are undone, last
// first. The client receives the decoded body in identity encoding, which
// every HTTP client reads: no Content-Encoding, and a sync answer's
// Content-Length is the decoded length. The bound (see Bounds) counts
// decoded bytes, so a small body that decodes past it (a decompression
// bomb) is read up to the bound and no further, as any body past it. An
// answer in a coding the guard does not decode (zstd, compress), or that
// does not decode, is an answer the guard cannot read. An upstream's
// error response (a status not 2xx) reaches the client as it came,
// compressed or not.
//
// # Re-asks
//
// Schemas come from the request's own tools: Chat Completions'
// function.parameters, Responses' parameters, Anthropic's input_schema,
// Gemini's parametersJsonSchema or its OpenAPI-subset parameters converted
// to JSON Schema (upper-case types, nullable), Ollama's function.parameters. A re-ask is a new request
// built from the client's original body — never from a previous re-ask —
// sent to the same URL with the same headers: the rejected turn replayed
// as the provider sent it (Anthropic thinking blocks and their signatures,
// Responses reasoning items with their encrypted content, Gemini thought
// signatures, call ids) and one tool result per call in the protocol's
// shape: Chat's tool message, Responses' function_call_output, Anthropic's
// tool_result (is_error: true for a refused call), Gemini's
// functionResponse, Ollama's tool message ({"role": "tool", "content",
// "tool_name", and "tool_call_id" when the call had an id; Ollama has no
// error flag, so a refusal is its text). The client reads only the accepted response: the
// re-ask's id, model and usage.
//
// Tools offered through tool search are guarded as the others. A
// Responses function with "defer_loading": true is read from tools as any
// function; a namespace's functions (tools[].tools[]), whose
// function_call names the namespace in a field of its own, are known to
// the guard as namespace.name (events, limits and the re-ask's feedback
// use that name; OpenAI's function names hold no '.', so it is no plain
// function's); the tools of
// the input's tool_search_output items (what a tool search the client ran
// loaded, plain or in a namespace) are read as the request's own. A
// hosted search's answer (tool_search_call and tool_search_output with
// execution "server") passes and a re-ask replays it; a search the client
// runs (execution "client") passes to the client, and a re-ask leaves it
// out as it leaves out a computer_call. An Anthropic tool with
// "defer_loading": true stays in tools with its input_schema, so its call,
// loaded by a tool_reference, is validated as any other. A call of a tool
// that is neither offered, deferred nor loaded (a namespace's function
// called without its namespace, say) follows the unknown-tool policy.
//
// A Responses answer's function calls are guarded beside its other items
// (custom_tool_call, shell_call, apply_patch_call, local_shell_call,
// computer_call, mcp_approval_request, and the tools OpenAI runs), which
// pass as they came: they are not validated, and not guard calls
// (ToolCallLimit does not count them). A re-ask answers each call of a tool
// the client runs with an output saying it was not run (the client never
// read it), in its type's shape, and leaves out computer_call and
// mcp_approval_request, whose outputs are a screenshot and a person's
// decision. A tool whose parameters the guard cannot read (a schema nested
// past encoding/json's 10,000 levels) costs its own calls only: they are
// refused, or passed, as for a schema that does not compile.
//
// # Calls the provider could not read
//
// Some providers parse the model's tool call themselves and, when they
// cannot, answer with a refusal in place of the call. [ToolArgValidation]
// re-asks such an attempt as it re-asks one with an invalid call, within
// the same [guard.WithMaxRetries], and reports a
// [guard.EventProviderMalformed]:
//
//   - OpenAI-compatible Chat Completions: Groq's 400 whose error.code is
//     tool_use_failed (the model's text in error.failed_generation; none
//     when Groq checked the call against the tool's schema itself), to a
//     streaming request the same error object as a data event of the
//     stream; Ollama's /v1 500 "error parsing tool call: raw='…', err=…"
//     (the model's text is raw). ModelRetry, inside, retries Ollama's
//     500 first, as any 5xx. vLLM hands a call its parser cannot read on
//     as the answer's content, which no guard can tell from text.
//   - Ollama's native /api/chat: the same message in its own shape,
//     {"error": "error parsing tool call: raw='…', err=…"}, a 500 to a
//     sync request or before a stream began, an error line once it has.
//   - Gemini: candidates[0].finishReason MALFORMED_FUNCTION_CALL (even
//     beside a functionCall part), sync and streamed, the model's text in
//     finishMessage after "Malformed function call: ". A stream's chunk
//     with that finish reason is held as a call is: its text passes, its
//     end waits for the stage's decision.
//
// The re-ask is the client's original body with two turns appended: the
// model's text as its own turn (Chat's and Ollama's assistant message,
// Gemini's model content with one text part), at most [guard.MaxMalformedGeneration]
// bytes of it, and none when the provider quotes nothing; then a user turn
// with the feedback (errfmt's, or [guard.WithFeedback]'s): the provider
// could not read the call, which must be a tool call whose arguments are
// one JSON object matching the tool's schema, and the provider's reason,
// quoted. When the last re-ask is refused too, the client reads the
// provider's refusal as it came, with a [guard.EventGiveUp] (failing
// open), or the guard's 422 invalid_tool_calls ([guard.WithFailClosed];
// once a stream began, its error event). Any other error status passes to
// the client unchanged, as before. OpenAI Responses and Anthropic Messages
// have no such refusal that httpguard knows.
//
// # Histories the provider would refuse
//
// A transcript with a tool call that has no result, a result whose call is
// not in it, a call id given twice, past arguments that are not a JSON
// object, or an Anthropic input that is null is refused by the provider
// with a 400 on that turn and every later one (a program stopped
// mid-batch, resumed after a crash, or whose history was edited).
// [HistoryCheck], placed outermost, checks the client's request before it
// is sent; a clean history goes byte for byte as it came. With
// [RepairHistory] it repairs what is unambiguous, never inventing
// arguments and never dropping what the client sent, each repair a
// [guard.EventHistoryRepaired] (to the context's handler, [guard.WithEvents])
// whose Paths name the message:
//
//   - a call without a result: an error result saying the call's outcome is
//     unknown, where the protocol wants it: Chat's tool message after the
//     turn's tool messages; Responses' function_call_output after the
//     turn's calls; Anthropic's tool_result (is_error) in the next user
//     message, before its other blocks (a string content becomes the
//     blocks and a text block; no next user message, one is added);
//     Gemini's functionResponse {"error": …} in the next user content,
//     after its responses (or a content added). Results spread over
//     consecutive user messages (Anthropic combines them) or contents
//     (a Gemini client that gives each response its own) count as the
//     turn's.
//   - a result without its call: a user note that quotes it whole: Chat
//     and Responses, a user message after the run of results it stood in;
//     Anthropic, a text block at the end of its message (text must follow
//     the tool_result blocks); Gemini, a text part at the end of its
//     content. An Anthropic result holding an image is refused: a note
//     cannot hold it.
//   - a call id an earlier turn used: the later call and its one result
//     renamed (id_2, …). Two calls of one turn with one id, two results
//     for one id, a Responses output after two calls with its id, Gemini
//     calls of one name without ids whose responses are fewer: refused,
//     since which result answers which call would be a guess.
//   - arguments that are not a JSON object: {} in the call ("{}" in Chat
//     and Responses), and the arguments as sent kept in a note: before the
//     result's text (Chat, Responses, Anthropic) or in the member
//     "toolguard_note" of Gemini's response object. An Anthropic input
//     that is null or missing becomes {} without a note.
//
// With [RefuseHistory], or for a fault it cannot repair, the client reads
// a 422 of type invalid_history in the protocol's error shape naming the
// message (messages[3]: unanswered_call (call "call_1")), with
// x-should-retry: false, and nothing is sent upstream. A repair that would
// make the request larger than [MaxBody] is refused (history_too_large);
// a request past MaxBody is not read, and passes as it came (see
// "Bounds"); the check is linear in the request's size. A request that
// continues server-side state (Responses' previous_response_id or
// conversation, an Anthropic thread) or refers to stored items (Responses'
// item_reference) is not checked: the server holds the rest of its
// history. Ollama's requests are not checked either: Ollama renders any
// sequence of messages through the model's template and refuses no
// unanswered call, orphaned result or repeated id.
//
// # Streaming
//
// A streaming request's client reads one well-formed stream, whatever
// happens upstream, that its SDK's accumulator takes whole. Text is passed
// on as it arrives. Tool-call parts are held until the call is complete
// and the stages have accepted it. A first attempt whose calls are
// accepted unchanged then reaches the client as the upstream sent it,
// event for event (each event is parsed once, and nothing is rebuilt); a
// call the stages cleaned, or one of a later attempt, is sent whole with
// the cleaned arguments in one fragment; a rejected attempt's calls never
// reach the client. Every event carries the first attempt's ids (the completion id,
// Anthropic's message id, Gemini's responseId) and continues its counters
// (Anthropic's block indexes, Responses' output_index and
// sequence_number). Responses' terminal event (response.completed) carries
// the accepted attempt's response id, the one a stored response is
// continued from with previous_response_id. An Ollama stream has no id to
// keep: its text and thinking lines pass as they came, its tool-call lines
// and its done line are held, and an accepted attempt is written as the
// held lines as they came when its calls are unchanged, else as at most
// three lines (the text the client has not read, the calls, the done line
// with the accepted attempt's counts).
//
// The text of a re-asked turn is the first attempt's: a re-ask's text is
// not streamed again, so the client never reads a preamble twice, and its
// tool calls are the accepted attempt's. One exception: a re-ask accepted
// without tool calls (the model, told its call was wrong, answers in text)
// streams its text after the first attempt's, since that text is the
// answer; without it a streaming client would end the turn on the first
// attempt's preamble while a sync client reads the answer. A stand-in
// answer (a limit's [guard.ExitEnd], [guard.ContinueOnFailure]) is
// streamed the same way, in place of the calls that were held. Thinking
// and reasoning of a re-ask are not streamed.
//
// Each stage that re-asks holds its own attempts (one gate per stage), so
// a ToolCallLimit outside ToolArgValidation holds the calls the validation
// accepted until the limit lets them through. The response is committed
// (RoundTrip returns its 200) at the first event that carries something of
// the answer; the events that only open a stream (message_start,
// response.created, a chunk with the role alone) wait for it. A call that
// ends before that — refused, failed upstream — ends as an HTTP response
// of its own, as a sync call does. After it, a refusal or a failure ends
// the stream with an error event in the protocol's stream shape (Chat's
// data: {"error": …}, Anthropic's event: error, Responses' error and
// response.failed, Gemini's error chunk), and an upstream stream's own
// error event reaches the client as it came. A client that closes the body
// cancels the call and its upstream request.
//
// # Amazon Bedrock and request signing
//
// Bedrock's Converse API is guarded as the others are: its tools'
// toolSpec.inputSchema.json are the schemas, the toolUse blocks of
// output.message the calls (a toolUse of type server_tool_use is
// Bedrock's own, not checked), and a re-ask appends the answer's message
// as it came (reasoning blocks with their signatures, toolUse ids) and one
// user message of toolResult blocks, one per call in order, status
// "error" for a refused call. The model id is read from the path (the
// AWS SDK escapes an ARN's ':' and '/'; the path goes upstream as it
// came). ConverseStream's AWS event stream (application/vnd.amazon.eventstream)
// is read message by message, each bounded by [MaxBody] from its prelude
// before anything past it is read, both CRCs checked: a malformed message
// is an answer the guard cannot read (502 response_unguardable), a message
// past the bound 502 response_too_large, and a stream cut inside a message
// a dropped connection, which [ModelRetry] makes again. Text and reasoning
// deltas pass as they come; a toolUse block's input fragments are held
// until the call is validated, then sent as they came (the call unchanged)
// or whole in one delta (cleaned, or a later attempt's). The guard's
// refusals are {"__type": type, "message": …} (the AWS SDK reads the type
// as the API error's ErrorCode()); in a stream that has begun, an
// exception message of that type. An exception Bedrock sends mid-stream
// (throttlingException, …) reaches the client as it came, and
// ModelRetry classifies it as the AWS SDK does.
//
// Bedrock's requests are signed with AWS Signature Version 4, whose
// signature covers the body: a re-ask, which changes the body, must be
// signed again, with the program's credentials, which the transport does
// not have. [WithSigner] is the hook: given to [New], it is called for
// every upstream request whose body differs from what the client signed
// (the client's own request, forwarded unchanged or retried, keeps the
// client's signature), after the transport removed the stale signature
// headers. Fill it with aws-sdk-go-v2's v4.NewSigner().SignHTTP, signing
// name "bedrock", and the program's aws.Config credentials and region (an
// example is on WithSigner). Without a signer, a SigV4-signed request
// whose answer needs a re-ask is never sent with its stale signature: the
// call is refused with a 422 of type signer_missing (ErrSignerMissing),
// failing open as closed, and misconfigured is logged at Warn once per
// host and path. Requests signed otherwise (Bedrock API keys, a bearer
// token) need no signer. The AWS SDK retries a 5xx, the guard's 502s
// included, by its own retryer: give it RetryMaxAttempts 1 when ModelRetry
// is installed (see "Retries").
//
// # Failing closed
//
// A refusal answers the client as the provider refuses a request: an HTTP
// error response in the protocol's own error shape, with x-should-retry:
// false, so the SDK surfaces it as its API error (openai-go's and
// anthropic-sdk-go's *Error, go-openai's *APIError, genai's APIError) and
// does not retry it — never a transport error, which SDKs retry as a
// dropped connection. Status 422 and the type (OpenAI's error.type and
// code, Anthropic's error.type, Gemini's ErrorInfo reason; Ollama's
// {"error": "…"} has one string, which the type leads: "invalid_tool_calls:
// …", read by ollama/api as an api.StatusError) say what was refused: invalid_tool_calls ([guard.WithFailClosed]), invalid_tool_schema,
// response_unguardable (status 502: see "What it cannot read, it does not
// pass"),
// tool_call_limit_exceeded and model_call_limit_exceeded
// ([guard.ExitError]), tool_calls_refused (see "Server-side state"); the
// message holds the violations, bounded. A limiter that cannot reach its
// store answers 503, type limit_store_unavailable (Gemini's status
// UNAVAILABLE), x-should-retry: false, with a fixed message naming the
// limiter: what the store's error says (an address, a port, a key naming
// the thread) reaches the events and the program, never the client. A server that puts the transport
// behind a handler of its own answers its own errors in the same shapes
// with [ErrorResponse].
//
// # Retries
//
// [ModelRetry] reads the status and retry hint from the response itself: a
// non-2xx answer is an *[UpstreamError] whose status retry.IsRetryable
// classifies (408, 409, 429, every 5xx but 501 and 505, 529 included;
// the provider's x-should-retry honoured) and whose retry-after-ms or
// Retry-After header raises the wait (retry.After). An upstream stream's
// error event before anything reached the client is retried too, as the
// status its type stands for (server_error 500, overloaded_error 529).
// When it gives up, the client receives the provider's last response as
// it came — status, headers, body — and the SDK handles it as it would
// without the guard.
//
// The SDKs retry too. openai-go and anthropic-sdk-go make up to 3 requests
// by default (408, 409, 429, 5xx and dropped connections, honouring
// x-should-retry and Retry-After); genai retries only with
// HTTPOptions.RetryOptions; go-openai and langchaingo's openai and
// anthropic clients do not retry, and langchaingo's googleai client
// repeats a 503 (not a 429) until the call's context ends ("Tested
// with"). Each SDK retry is a new request through the transport, so the
// attempts multiply: ModelRetry's 3 under openai-go's 3 is up to 9
// requests to a failing provider, and both sets of waits. Install
// ModelRetry and turn the SDK's retries off (openai-go and
// anthropic-sdk-go: option.WithMaxRetries(0)) to get one policy that
// reports every retry as an event and a span and honours
// retry-after-ms; or leave ModelRetry out and let the SDK retry. The
// guard's own refusals carry x-should-retry: false, so no SDK retries
// them either way.
//
// # Limits, runs and threads
//
// [ToolCallLimit] and [ModelCallLimit] count per run and per thread named
// on the request's context ([guard.WithRun], [guard.WithThread]), in a
// [guard.ThreadStore] (shared between replicas with guard/redisstore).
// Without them, the transcript in the body counts: the model's turns after
// the last user message are the run, all of them the thread (Chat's
// assistant messages, Anthropic's assistant messages, Responses' output
// items in a row, Gemini's model contents; tool results are not user
// turns). A transcript the client trims, or one kept server-side
// (previous_response_id), counts less: name the thread on the context.
//
// # Server-side state
//
// A request whose conversation the server holds — a Responses request that
// continues one (previous_response_id, or conversation), an Anthropic
// request on a message thread (thread, created or continued; the tool
// runner of anthropic-sdk-go uses one unless DisableThread) — is guarded
// without feedback:
// its calls are validated, and what stripping and coercion fix is written
// back, but a call still invalid, or over a limit with
// [guard.ExitContinue], is refused with a 422 of type tool_calls_refused
// (a *[ServerStateError] to the stages) instead of re-asked. The server
// keeps every request of such a conversation, so a re-ask would stay in
// it for every later turn the client pays for and the model reads (and a
// conversation would keep the rejected call without its answer); the
// program, which owns the conversation, gets the violations in the error
// and decides. A request that is only stored (store: true, Responses'
// default, or Chat's store) is re-asked as any other: the re-ask is
// stored too, and the client reads the accepted response's id, whose
// stored record holds the calls the client read.
//
// # Bounds
//
// The transport reads at most [MaxBody] (8 MiB) of one body to guard it: a
// request, a sync response, a stream's event (an Ollama stream's line) and
// its assembled response
// (a compressed answer's decoded bytes). A request past the bound passes
// through unguarded and untouched (never buffered whole), reported at Warn
// once per host and path; a sync response past it is an answer the guard
// cannot read (see above). A stream that offers no tools is handed on as
// the upstream sends it, with no gate and no bound. A stream whose
// assembled response (the calls and text it holds, not the events'
// envelopes; or one event) passes the bound cannot be guarded:
// before anything of it reached the client, the client gets an HTTP 502 in
// the protocol's error shape, type response_too_large, x-should-retry:
// false (the SDK surfaces its API error and does not retry: the same
// request would get as large an answer; ModelRetry does not repeat it
// either); once it has begun, it ends with an error event of that type.
// An upstream error body is kept up to the bound.
//
// # Credentials
//
// Authorization, x-api-key, api-key and x-goog-api-key (and a key in the
// query) go to the provider with every request and re-ask, and nowhere
// else: no event, log record or span holds them. An upstream error whose
// body quotes the key (OpenAI's 401 does) has it blanked in its text; the
// client still receives the body as it came. The transport's own reports
// name the host and path only.
//
// # Observability
//
// [Observe] installs a guard.Observer (otelguard's) outermost: it sees the
// stages' events, each logical call, and each upstream request with the
// model the request names and the response's token usage, stop reasons
// and, for an observer that records content, its output messages; so
// otelguard makes a "chat {model}" span per upstream request.
package httpguard
