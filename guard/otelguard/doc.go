// Package otelguard makes what toolguard's stages do visible in
// OpenTelemetry traces and metrics: every re-ask, retry and blocked tool
// call, and every request that really reaches the model.
//
// [New] returns a guard.Observer, which an adapter installs outermost in
// its stack: middleware.Observe(otelguard.New()) for langchaingo,
// httpguard.Observe(otelguard.New()) at the wire. It is the only toolguard
// package that imports OpenTelemetry: the stages report to a
// guard.Observer carried by the context, and the adapter gives it the model
// name and the token usage of each request (guard.ModelResult).
//
// # Spans
//
//   - [CallSpanName] ("toolguard.generate_content", kind Internal): one per
//     call through the stack, with gen_ai.request.model, toolguard.requests
//     (the requests that reached the model), and error.type and an error
//     status when the call fails. Every toolguard event becomes a span event
//     on it named [EventPrefix] + kind ("toolguard.retry",
//     "toolguard.invalid", "toolguard.reask", "toolguard.stripped",
//     "toolguard.limit", …) with toolguard.middleware, toolguard.attempt,
//     gen_ai.tool.name, gen_ai.tool.call.id, toolguard.paths (JSON
//     Pointers: the event's paths, or the violations'), toolguard.keywords
//     (the violated schema keywords), toolguard.retry.wait (seconds, on
//     every retry event, 0 included),
//     toolguard.limit.scope/.max/.count and error.type, as they apply.
//   - "chat {model}" ("chat" when the request names no model; kind Client):
//     one per request that reaches the model, under the call's span, by the
//     GenAI semantic conventions: gen_ai.operation.name = "chat",
//     gen_ai.request.model, gen_ai.usage.input_tokens,
//     gen_ai.usage.output_tokens (when reported), gen_ai.response.finish_reasons,
//     and error.type and an error status when the request fails.
//   - "invoke_agent" and "execute_tool {name}" (kind Internal): when an
//     agent.Agent is given the observer (agent.WithMiddleware(middleware.Observe(o))), one span
//     per run and, under it, one per tool execution with gen_ai.tool.name,
//     gen_ai.tool.call.id, gen_ai.tool.type and error.type on a tool error.
//     The observing middleware may be given inside a middleware.Chain. A tool
//     execution's span covers the agent's whole tool stage (its tool
//     middlewares, every attempt of toolstage.ToolRetry) and carries the tool
//     stage's events as span events, with the attributes above:
//     "toolguard.tool_retry", "toolguard.tool_outcome_unknown",
//     "toolguard.tool_denied", "toolguard.args_rewritten",
//     "toolguard.args_rejected", "toolguard.run_stopped".
//
// error.type is the code of a provider's error in the error's chain (an
// error struct with a string field Code: langchaingo's providers map their
// errors to an *llms.Error with one, "rate_limit", "provider_unavailable",
// "authentication", …), "canceled" or "timeout"
// for a context's errors, "_OTHER"
// for untyped errors (errors.New, fmt.Errorf), else the error's Go type
// ("*retry.Error", "*validation.Error", "*guard.LimitExceededError").
// gen_ai.provider.name is set on chat spans and the GenAI metrics only
// with [WithProviderName]: the middleware cannot tell which provider the
// wrapped model calls. gen_ai.request.model is the model a request names
// (llms.WithModel); a model configured on the client only (openai.WithModel)
// is not seen.
//
// # Metrics
//
//   - [DurationMetric] (gen_ai.client.operation.duration, histogram, s): one
//     point per request that reaches the model.
//   - [TokenUsageMetric] (gen_ai.client.token.usage, histogram, {token}):
//     per request and gen_ai.token.type, where the provider reports usage.
//   - [EventsMetric] (toolguard.events, counter): every toolguard event, by
//     toolguard.event.kind and toolguard.middleware.
//
// Every label comes from a closed set, so that what a client sends cannot
// grow the metrics: gen_ai.request.model, which at the wire is the model a
// client named, is cut to [MaxModelLabel] bytes, and only the first
// [MaxModels] distinct models an Observer sees are named; the rest are
// recorded as [OtherModel]. Spans carry the model as the request named it.
//
// # Token usage
//
// The adapter reads each response's usage. langchaingo reports it in
// llms.ContentChoice.GenerationInfo under keys
// that differ by provider. In v0.1.14:
//
//	provider                    input tokens                  output tokens
//	openai                      PromptTokens                  CompletionTokens
//	anthropic                   InputTokens                   OutputTokens
//	googleai, vertex            input_tokens (PromptTokens)   output_tokens (CompletionTokens)
//	ollama                      PromptTokens                  CompletionTokens
//	mistral                     usage.prompt_tokens           usage.completion_tokens
//	bedrock (anthropic, meta,   input_tokens                  output_tokens
//	  amazon, nova, ai21)
//	bedrock (cohere)            not reported                  not reported
//
// The first choice that reports any of them gives the response's usage
// (providers that return several choices repeat it in each).
//
// # Privacy
//
// By default no span, span event, attribute or metric records what the
// model or the user sent: not the arguments, not values echoed from them
// (validation violations quote them), not the feedback text, and not error
// texts, which may quote the model's output (a status description is then
// the error.type). [WithCaptureContent] opts in: gen_ai.output.messages
// (the answer's text and tool calls, in the conventions' JSON form) on chat
// spans, feedback and error texts on the span events, error texts as span
// errors, and gen_ai.tool.call.arguments and gen_ai.tool.call.result on
// execute_tool spans.
//
// # Overhead
//
// Per model call over the bare wrapped model (BenchmarkOverhead; medians
// on a 2-core VM at load average 1.3–1.7):
//
//	go test -run '^$' -bench BenchmarkOverhead -benchmem -count 5 ./guard/otelguard
//
//	                     time              memory             allocations
//	bare                 0.58 µs           1,112 B             9
//	no-op providers      1.88 µs (+1.30)   1,928 B (+816)     28 (+19)
//	SDK, recording all   6.65 µs (+6.07)   4,440 B (+3,328)   42 (+33)
//
// (the SDK line's memory and allocations measured again once the metrics'
// attribute sets were built once per model, its time not yet).
//
// The stages do not import OpenTelemetry: they report to a guard.Observer
// in the context, which this package's observer is.
package otelguard
