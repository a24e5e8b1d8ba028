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
//   - package httpguard: the OpenAI, Anthropic and Gemini wire protocols,
//     as an http.RoundTripper for any Go client, and cmd/toolguard-proxy
//     for any language;
//   - package agent: the tool stage of langchaingo's agent loop, built on
//     middleware.
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
// # Validation
//
// A tool's schema is any form [validation.Compile] takes (a map, raw JSON,
// a *validation.Schema from [validation.Typed], a JSON-marshalable value).
// It comes from the request's tools ([Codec.Tools]), a context's
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
// the last user turn, [Codec.Transcript]); threads from [WithThread],
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
// An adapter is a [Codec] (plus, where its host streams, a [Stream]), an
// innermost handler that calls the model and reports the request to the
// observers ([ObserveModelCall]), and its tests: package guard/guardtest
// runs the same scenarios against any codec, and every adapter's tests run
// it. Everything in this package is safe for concurrent use.
package guard
