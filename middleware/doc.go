// Package middleware wraps any langchaingo llms.Model in a chain of
// wrap-model-call middlewares that make sure only well-formed, allowed tool
// calls leave the model:
//
//   - [ToolArgValidation] validates every tool call against its tool's JSON
//     Schema, strips hallucinated empty values, and re-asks the model with
//     feedback naming every violation;
//   - [ModelRetry] retries transient model errors (429, 5xx, timeouts) with
//     backoff, jitter and the server's retry hint (Retry-After headers
//     through [retry.HTTPClient]);
//   - [ToolCallLimit] caps tool calls per run and per thread, for all tools
//     or one;
//   - [ModelCallLimit] caps model calls per run and per thread;
//   - [OutputValidation] makes a final text answer a JSON object its schema
//     accepts (repaired, re-asked, held from the stream until accepted),
//     for callers without package agent.
//
// [Wrap] returns an llms.Model, so the result drops into langchaingo's agents
// and chains or any loop of your own:
//
//	guarded := middleware.Wrap(llm,
//		middleware.ToolCallLimit(guard.WithRunLimit(20)),
//		middleware.ToolArgValidation(),
//		middleware.ModelRetry(),
//	)
//
// The order matters; [Chain] states the rule and why this order is the one
// to use. Writing a middleware takes one function ([Func], [Handler]);
// events from the built-in ones reach [guard.WithEventHandler] ([guard.LogEvents] adapts
// slog). Everything in the package is safe for concurrent use. The package
// imports langchaingo's llms only: not its agents, chains or tools. For
// tests, package fakemodel provides a scripted tool-calling model.
//
// # Validation
//
// A tool's schema may be a map[string]any, json.RawMessage, []byte, string,
// a *[validation.Schema] (from [validation.Typed] or [validation.Compile]) or
// any JSON-marshalable value such as langchaingo's jsonschema.Definition.
// [guard.WithSchema] overrides the request's schema for a tool, and
// [guard.WithToolSchemas] lets an agent that sends maps (langchaingo's googleai
// provider takes nothing else) hand over the originals, so that a typed
// schema keeps its [validation.Validator] hook. Schemas are compiled lazily,
// once per middleware value, and recognised by identity with a content
// fingerprint behind it; a schema whose "$schema" names no known draft is
// enforced with the default draft ([guard.EventSchemaFallback]).
//
// Empty values are stripped per [strip.Mode]: strip.SchemaAware (the
// default) touches only invalid calls and removes a null, {} or [] only where
// that removes violations and adds none; strip.Recursive applies LangChain's
// rule to every call; strip.Off never strips. Then an invalid call is
// repaired per [guard.WithRepair]: by default repair.Coercions turns "5" into 5
// and "true" or "True" into true where the schema wants a number or a
// boolean, decodes an array or object sent as a string (JSON, or a Python
// literal: "['M', 'L']") where the schema wants one, and decodes an
// arguments object sent as a JSON string, when the call then validates
// ([guard.EventRepaired]; package repair compares it with pydantic's lax mode). [guard.WithClosedObjects] makes an undeclared parameter a violation. A re-ask is not cumulative:
// the model sees the original messages and its latest rejected response,
// one AI message per tool call (the first also carrying the response's
// text), each followed by a tool message — the layout OpenAI, Anthropic and
// Google accept alike ([ToolCallMessages]).
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
// # Limits
//
// ToolCallLimit and the limits of one model call share a ledger in the
// context: when a limiter blocks a response, everything the limiters inside
// it counted for that response is taken back. So limiters stack:
//
//	Wrap(model,
//		ToolCallLimit(WithRunLimit(10)),
//		ToolCallLimit(WithToolName("search"), WithRunLimit(3)),
//	)
//
// caps all calls at 10 and searches at 3 per run. Each layer sees the
// response the layers inside it let out and re-asks through them. Limiters
// sharing a count (the same run, or a [guard.ThreadStore] both were given) count
// each call once. Place limiters outside re-invoking middlewares: a
// middleware outside a limiter that discards its response would leave
// counted calls that never ran.
//
// Each [ModelCallLimit] keeps its own run count, so an outer one (agent
// steps) and an inner one (requests, re-asks included; without [guard.WithRun] a
// re-ask counts as the AI messages it replays) may be stacked in one run.
// Stacked ones with thread limits in one store share the thread's count,
// each adding every request it sees: give such layers separate stores
// ([guard.WithThreadStore], a redisstore with its own prefix, say).
//
// Thread counts live in a [guard.ThreadStore]: in each limiter's memory by
// default, or shared by replicas serving the same threads (package
// redisstore keeps them in Redis). ToolCallLimit and ModelCallLimit may
// share one store: their counts have different keys ([guard.ThreadKey].Kind). A
// store that fails fails the model call with a *[guard.StoreError], so that
// nothing leaves unlimited; [guard.WithStoreFailOpen] lets calls through instead
// ([guard.EventStoreError]).
//
// # Provider clients
//
// langchaingo's clients hide two things the middlewares need. Their errors
// carry no response headers, so ModelRetry reads a Retry-After header only
// when the provider client was given a [retry.HTTPClient]
// (openai.WithHTTPClient(retry.HTTPClient(nil)), likewise for anthropic and
// ollama). And the native ollama client sends no tools and drops the tool
// calls of Ollama's answer, with no error: use langchaingo's openai client
// with Ollama's OpenAI-compatible endpoint
// (openai.WithBaseURL("http://localhost:11434/v1")) for tool calling.
// ToolArgValidation reports such an answer ([guard.EventEmptyResponse]).
//
// Mistakes in wiring are reported, never guessed around: a schema that is
// not one (a Go struct value as Parameters), a [guard.WithToolName] that names no
// offered tool, a ToolCallLimit inside a ToolArgValidation, a thread limit
// with no thread id in the context, two offered tools of one name. Without
// an event handler they are logged to slog.Default at Warn, with the
// fail-open events ([guard.WithEventHandler]); wire [guard.LogEvents] (or an
// [guard.Observer]) to see the rest.
package middleware
