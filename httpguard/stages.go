package httpguard

import "github.com/toolguard/toolguard/guard"

// Middleware is one stage of a [Transport]'s stack: one of package guard's
// stages over the wire protocols, made by this package's constructors and
// given to [New], the first the outermost. Its zero value does nothing (New
// skips it). A Middleware is safe for concurrent use and may be given to
// several Transports; the stages that count (the limits' default stores)
// then count across them.
type Middleware struct {
	m guard.Middleware[*request, *response]
}

// ToolArgValidation returns a middleware that makes sure the tool calls in
// the provider's responses have arguments their tool accepts:
// [guard.ToolArgValidation] at the wire, with the options it takes.
//
// Schemas come from the request's own tools (Chat Completions'
// function.parameters, Responses' parameters, Anthropic's input_schema,
// Gemini's parametersJsonSchema or its OpenAPI-subset parameters
// converted), [guard.WithToolSchemas] on the request's context and
// [guard.WithSchema]. Cleaned arguments (empty values stripped, coercions)
// are written back into the response JSON, so every SDK's accessor reads
// them. A re-ask is a new request built from the client's original body:
// the rejected turn replayed as the provider sent it (thinking blocks and
// signatures, reasoning items, call ids) and one tool result per call in
// the protocol's shape (Anthropic's with is_error: true for a refused call).
// A call the provider itself could not read (Groq's 400 tool_use_failed,
// Ollama's "error parsing tool call", Gemini's MALFORMED_FUNCTION_CALL) is
// re-asked the same way, with the model's text as its turn (package
// documentation, "Calls the provider could not read").
// With [guard.WithFailClosed], calls still invalid after the last re-ask
// are answered with an HTTP 422 in the protocol's error shape, type
// invalid_tool_calls and x-should-retry: false (package documentation,
// "Failing closed").
func ToolArgValidation(opts ...guard.ValidationOption) Middleware {
	return Middleware{guard.ToolArgValidation(codec{}, opts...)}
}

// ModelRetry returns a middleware that makes the upstream request again
// when it fails with a transient error: [guard.ModelRetry] at the wire,
// with the options it takes. A response whose status is not 2xx is an
// *[UpstreamError] to it, classified by its status (408, 409, 429 and 5xx
// but 501 and 505, 529 included) and x-should-retry header; its
// retry-after-ms or Retry-After header raises the wait. When it gives up,
// the client receives the last failed response as the provider sent it.
// Place it innermost. The SDKs retry too: see the package documentation
// ("Retries").
func ModelRetry(opts ...guard.RetryOption) Middleware {
	return Middleware{guard.ModelRetry(codec{}, opts...)}
}

// ToolCallLimit returns a middleware that caps the tool calls leaving the
// provider per run and per thread: [guard.ToolCallLimit] at the wire, with
// the options it takes. The run and thread are the request context's
// ([guard.WithRun], [guard.WithThread]); without them they are read from
// the transcript in the request's body: the model's turns after the last
// user message, and all of them. [guard.ExitEnd] answers with a response
// in the protocol's shape whose text says which limit was reached;
// [guard.ExitError] with an HTTP 422 of type tool_call_limit_exceeded.
func ToolCallLimit(opts ...guard.LimitOption) Middleware {
	return Middleware{guard.ToolCallLimit(codec{}, opts...)}
}

// ModelCallLimit returns a middleware that caps the requests reaching the
// provider per run and per thread: [guard.ModelCallLimit] at the wire,
// with the options it takes. Outermost, it counts the client's requests;
// inside ToolArgValidation or ModelRetry, every upstream request, re-asks
// and retries included. Runs and threads are found as for
// [ToolCallLimit]. [guard.ExitEnd] (the default) answers with a response
// in the protocol's shape whose text says which limit was reached;
// [guard.ExitError] with an HTTP 422 of type model_call_limit_exceeded.
func ModelCallLimit(opts ...guard.LimitOption) Middleware {
	return Middleware{guard.ModelCallLimit(codec{}, opts...)}
}

// Observe returns a middleware that installs o in the context of every
// logical call and tells it of each ([guard.Observe]); the transport tells
// it of each upstream request, with the model the request names and the
// token usage and stop reasons of the response. otelguard's observer makes
// a span per call and a "chat {model}" span per upstream request this way:
//
//	httpguard.New(nil, httpguard.Observe(otelguard.New()), httpguard.ToolArgValidation(), httpguard.ModelRetry())
//
// Place it outermost.
func Observe(o guard.Observer) Middleware {
	return Middleware{guard.Observe(codec{}, o)}
}
