// Package guard is toolguard's model stage, written once for every host:
// the middlewares that make sure only well-formed, allowed tool calls leave
// a model, whatever client calls it.
//
//   - [ToolArgValidation] validates every tool call against its tool's JSON
//     Schema, strips hallucinated empty values, repairs what the schema
//     alone decides ("5" for an integer), and re-asks the model with
//     feedback naming every violation, inside one logical call;
//   - [ModelRetry] retries transient model errors (429, 5xx, 529,
//     timeouts) with backoff, jitter and the server's retry hint;
//   - [ToolCallLimit] and [ModelCallLimit] cap tool calls and model calls
//     per run and per thread, shared by replicas through a [ThreadStore];
//   - [OutputValidation] makes a final text answer a JSON object its schema
//     accepts.
//
// Each is generic over a [Codec]: how a host's requests and responses
// hold tool calls, and how a re-ask is built. An adapter writes the codec
// once and gets every stage:
//
//   - package middleware: langchaingo's llms.Model (middleware.Wrap);
//   - package httpguard: the OpenAI Chat Completions and Responses,
//     Anthropic Messages, Gemini, Ollama and Bedrock Converse wire
//     protocols, as an http.RoundTripper for any Go client, and
//     cmd/toolguard-proxy for any language;
//   - package mcpguard: MCP's tools/call, whose calls are the tool stage's
//     at the MCP wire (its limits are this package's ToolCallLimit).
//
// Package toolstage is the tool stage for every host; package agent is
// langchaingo's agent loop over it and middleware.
//
// # Order
//
// [Chain] composes middlewares; the first is the outermost. The built-in
// ones go in this order:
//
//	Chain(ToolCallLimit(c, ...), ToolArgValidation(c, ...), ModelRetry(c, ...))
//
// The limiter counts only calls that passed validation and will run;
// validation sees every raw response; retry absorbs the transient errors of
// each attempt, re-asks included. Everything inside a middleware that calls
// its next handler more than once runs once per attempt.
//
// # What each stage does
//
// [ToolArgValidation] parses each tool call's arguments, strips empty values
// where that fixes the call (strip.SchemaAware: a required [] or a nullable
// null is never touched), validates against the tool's JSON Schema and
// reports every violation at once, with JSON Pointer paths:
//
//	Invalid arguments for tool "get_weather": 2 errors.
//	- /city: expected string, got 75001
//	- /units: expected one of "celsius", "fahrenheit", got "kelvin"
//	Call get_weather again with corrected arguments.
//
// (When a violation is about a null, {} or [] the model sent, the last line
// also asks it to omit optional fields rather than send them.) Arguments
// over 64 KiB are replayed as {}, as broken JSON is, and the tool result
// says how large they were, so a re-ask stays small whatever the model
// sent. After [WithMaxRetries] (default 2) it fails open, or closed with
// [WithFailClosed]. A failing call whose fault is what the schema alone
// decides — "5" for a number, "true" or "True" for a boolean, "['M', 'L']"
// or "[\"M\", \"L\"]" for an array, the arguments object sent as a JSON
// string — is coerced without a model call and reported ([EventRepaired]);
// beside other faults, the coercion is made and only the rest is fed back.
// A single value for an array and an enum member in another case are
// re-asked (package repair's table, beside pydantic's lax mode). A valid
// call is never touched. Opt in to WithRepair(repair.Default()) to also fix
// code fences, prose, trailing commas and Python literals, and to
// [WithClosedObjects] to re-ask parameters a schema does not list.
//
// [ModelRetry] retries transient model errors (rate limits, 5xx, 529,
// timeouts) with exponential backoff and jitter, waits at least what the
// provider asked (capped at the policy's maximum, 60 s by default), and
// gives up early rather than sleep past the context's deadline (the error
// then says what the provider asked for and how much time was left). The
// provider's hint is read from the error's text ("Please try again in
// 1.2s" in OpenAI's body, "retry after 6 seconds" from Azure, Gemini's
// RetryInfo "retryDelay"), an error with a RetryAfter() time.Duration
// method, and the retry-after-ms / Retry-After headers of a 408, 409, 429 or
// 5xx (not 501, 505) response, which the adapter reads (httpguard from the
// response itself; package middleware through retry.HTTPClient). Retries
// multiply across layers: everything inside a re-invoking middleware runs
// once per attempt, and so does every retry below it, a client's own
// included (openai-go and anthropic-sdk-go retry twice by default). Lower
// WithMaxRetries, or the client's own retries, where a client already
// retries, and bound the whole call with a context deadline.
//
// [ToolCallLimit] caps tool calls per run and per thread, for all tools or
// one, re-asking, ending the run cleanly or returning an error; a
// [WithToolName] that names none of a request's tools is reported
// ([EventMisconfigured]). [ModelCallLimit] caps model calls per run and per
// thread (an agent that loops without end, a budget per conversation),
// ending the run cleanly or returning an error; a blocked call never
// reaches the model. [OutputValidation] holds a final text answer to a
// schema, re-asked like tool arguments, and fails closed.
//
// # Closed objects
//
// By JSON Schema's rules an object schema without "additionalProperties"
// accepts any other key, and most MCP and BFCL schemas say nothing, so a
// parameter the model invents reaches the tool. [WithClosedObjects] treats
// every object schema that lists its properties as closed, as OpenAI's
// strict mode declares every object, and re-asks the invented key. It
// leaves open what closing would break: free-form objects ({"type":
// "object"} with no properties), schemas combined with others (allOf, $ref
// beside other keywords, if/then, properties beside anyOf/oneOf) and
// schemas whose required names a property they do not list
// (validation.WithClosedObjects gives the rule). OpenAI's "strict" also
// makes every property required, and pydantic's "strict" means no
// coercion: this option does neither. It is unsafe for schemas that do not
// list every parameter their tool accepts, and off by default for that
// reason: on the shipped corpus it rejects 85 of the 4,439 distinct
// ground-truth calls (86 of all 9,523 in the full corpus;
// validation.TestClosedObjectsBFCL). 81 of them are BFCL's multi-turn
// "composite" tests, whose API docs leave out parameters the functions
// take; the other 4 use a parameter their schema omits. In the evaluation
// (examples/eval) it catches all 4,326 calls given an invented key on the
// open schema, which every other configuration hands to the tool. Turn it
// on where schemas are generated from the code that runs the tool;
// validation.Typed schemas are closed already.
//
// # Validation
//
// A tool's schema is any form [validation.Compile] takes (a map, raw JSON,
// a *validation.Schema from [validation.Typed], a JSON-marshalable value).
// It comes from the request's tools ([RequestInfo].Tools), a context's
// [WithToolSchemas], or [WithSchema], the last winning. Schemas are compiled
// lazily, once per middleware value, and recognised by identity with a
// content fingerprint behind it; schema compilation never loads anything
// from the network or the file system.
//
// A call's arguments go through the argument pipeline ([CheckArgs], public
// for programs with a loop of their own): decoded exactly (a valid call is
// only validated, in one pass over the bytes), empty values stripped where
// that removes violations and adds none ([WithStripEmpty]), repaired as the
// schema alone decides ([WithRepair]: package repair's table compares each
// coercion with pydantic's lax mode). What is cleaned is written back
// ([Codec.Accept]) so every accessor of the host's response reads it. A
// re-ask is not cumulative: the model sees the original request and its
// latest rejected response, each call answered by its violations or, for a
// valid sibling, a note that it was not executed ([Codec.Reask]).
//
// # Injected arguments
//
// A tool's injected arguments ([WithInjectedArgs]) are properties the
// program supplies at run time and the model must neither see nor set. A
// value the model sends for one is dropped ([DropInjected]), reported once
// as [EventForgedArgument], and never quoted in feedback, events or logs
// ([RedactInjected]); arguments that may hide one are withheld from what a
// program keeps ([WithholdInjected]).
//
// # Streaming
//
// A host whose requests stream gives the stages a [Stream]: each attempt
// of a stage that re-asks streams through a [Gate] of its own, so text
// reaches the caller at once while tool-call parts wait ([HoldToolCalls])
// until the response is accepted; a rejected attempt's calls never reach
// the caller. Before a re-ask, [EventReask] reaches the context's observers
// before any part of the new attempt, so a streaming UI can discard what
// it showed of the call.
//
// # Limits
//
// Limiters of one model call share a ledger in the context: when a limiter
// blocks a response, everything the limiters inside it counted for that
// response is taken back, so blocked calls never count and limiters stack.
// Runs come from [WithRun] (or the transcript: the model's messages after
// the last user turn, [TranscriptReader]); threads from [WithThread],
// counted in a [ThreadStore] ([MemoryThreadStore] by default; package
// guard/redisstore shares it between replicas, and package guard/storetest
// holds a store to the contract, faults included). A store that fails
// fails the call with a *[StoreError] unless [WithStoreFailOpen].
//
// # Events and observers
//
// Every stage reports what it does as an [Event]. Give one handler for all
// of them, and for an agent's tool stage too, on the context
// ([WithEvents]; package agent's WithEventHandler does it for its runs), or
// one per middleware ([WithEventHandler]); [LogEvents] adapts slog. Without
// any handler, the events that mean a protection did not hold (a give-up or
// a schema error failing open, a store failing open, a forged injected
// argument, a refused approval, a miswired stack) are logged to
// slog.Default at Warn, and the rest go nowhere.
//
// An [Observer] in the context ([WithObserver], installed outermost by
// [Observe]) sees every event and every request that reaches the model:
// package guard/otelguard turns them into OpenTelemetry spans and metrics
// without this package importing OpenTelemetry.
//
// # Writing an adapter
//
// Users of an adapter need none of this section. An adapter is a [Codec],
// an innermost handler that calls the model and reports the request to the
// observers ([ObserveModelCall]), and its tests. The Codec has five
// methods:
//
//	Request(ctx, req) RequestInfo      // tools offered, model, stream
//	Response(req, resp) ResponseInfo   // tool calls, text, unreadable, stand-in
//	Accept(resp, verdicts) (resp, err) // write cleaned arguments back
//	Reask(req, resp, answers) (req, err)
//	End(req, text, cause) resp         // a stand-in answer
//
// Everything else is optional, found by type assertion, so that a method
// added later is a new interface, not a break: [AnswerCodec] for
// [OutputValidation] (which requires it), [TranscriptReader] for the limits
// to read a conversation the context does not name, [MalformedReader] for
// calls the provider refused itself, [Advisor] for the miswirings the
// host's users commonly make; a host that streams returns a
// [Stream] in its RequestInfo, whose [Gate] holds what a re-ask must not
// show. Each stage calls Request once per logical call and Response,
// Accept or Reask at most once per attempt. Package guard/guardtest runs
// the same scenarios against any codec, once as written and once stripped
// to the five methods, and every adapter's tests run it. Everything in this
// package is safe for concurrent use.
package guard
