package middleware

import (
	"context"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/retry"
)

// From adapts a middleware of package guard, written over langchaingo's
// requests and responses, to a [Middleware]. The constructors of this
// package are guard's stages given this package's codec through From.
func From(m guard.Middleware[*Request, *llms.ContentResponse]) Middleware {
	if m == nil {
		panic("middleware: From(nil)")
	}
	return Func(func(next Handler) Handler {
		return Handler(m(guard.Handler[*Request, *llms.ContentResponse](next)))
	})
}

// ToolArgValidation returns a middleware that makes sure the tool calls
// leaving the model have arguments their tool accepts: [guard.ToolArgValidation]
// over langchaingo's requests and responses, with the options it takes.
//
// Tool calls are read from every choice of a response (Anthropic returns
// one choice per content block; a choice with only the legacy FuncCall
// counts too); a call without an id gets a deterministic one ([ToolCalls]),
// written back. Schemas come from the request's tools (Function.Parameters
// as a map, raw JSON, a *validation.Schema or any JSON-marshalable value
// such as langchaingo's jsonschema.Definition), [guard.WithToolSchemas] and
// [guard.WithSchema]. Cleaned arguments are written back into each call's
// FunctionCall. A re-ask shows the model the original messages and its
// rejected response in the [ToolCallMessages] layout. When the request
// streams (llms.WithStreamingFunc), text streams at once and tool-call
// chunks are held until the response is accepted (package documentation,
// "Streaming").
func ToolArgValidation(opts ...guard.ValidationOption) Middleware {
	return From(guard.ToolArgValidation(codec{}, opts...))
}

// ModelRetry returns a middleware that calls the model again when a call
// fails with a transient error: [guard.ModelRetry] over langchaingo's
// requests and responses, with the options it takes. Without
// [guard.WithRetryIf], a failure is classified by [retry.IsRetryable],
// with a langchaingo *llms.Error's code read as the HTTP status it means
// (rate_limit as 429, provider_unavailable as 503, timeout as 504; every
// other code as a status that is not retried). [guard.WithOnFailure]'s text
// becomes a one-choice response that [StandInError] reads back.
// langchaingo's clients drop response headers: give the provider client a
// [retry.HTTPClient] so that ModelRetry reads Retry-After.
func ModelRetry(opts ...guard.RetryOption) Middleware {
	// The adapter's classifier first, so that a WithRetryIf of the
	// caller's overrides it.
	all := make([]guard.RetryOption, 0, 1+len(opts))
	all = append(all, guard.WithRetryIf(isRetryable))
	return From(guard.ModelRetry(codec{}, append(all, opts...)...))
}

// isRetryable is [retry.IsRetryable] that also reads a langchaingo
// *llms.Error's code as the status it means (llmsStatus).
func isRetryable(err error) bool { return retry.IsRetryableWith(err, llmsStatus) }

// ToolCallLimit returns a middleware that caps the tool calls leaving the
// model per run and per thread: [guard.ToolCallLimit] over langchaingo's
// requests and responses, with the options it takes. Without a run in the
// context ([guard.WithRun]) the run is read from the transcript: the tool
// calls of AI messages after the last human message, so an unchanged
// agents.Executor works. [guard.ExitEnd]'s answer is a one-choice text
// response that [StandInError] reads back.
func ToolCallLimit(opts ...guard.LimitOption) Middleware {
	return From(guard.ToolCallLimit(codec{}, opts...))
}

// ModelCallLimit returns a middleware that caps the model calls passing
// through it per run and per thread: [guard.ModelCallLimit] over
// langchaingo's requests and responses, with the options it takes. Without
// a run in the context, the AI messages after the last human message are
// the calls already made; as langchaingo records each parallel tool call
// as an AI message of its own, that is an upper bound.
func ModelCallLimit(opts ...guard.LimitOption) Middleware {
	return From(guard.ModelCallLimit(codec{}, opts...))
}

// OutputValidation returns a middleware that makes sure a model's final
// text answer is a JSON object that schema accepts: [guard.OutputValidation]
// over langchaingo's requests and responses, with the options it takes.
//
// Every choice that has text is an answer on its own — Choices[0] is what
// llms.GenerateFromSinglePrompt, chains and langchaingo's agents return,
// and a caller that asked for several choices (llms.WithN) reads each —
// and all must be valid; choices are never joined. Each cleaned answer is
// written back into its choice, and when Choices[0] has no text (a
// thinking block first) the first answer is moved there: what Choices[0],
// [ResponseText] and the stream show was checked. A re-ask shows the
// rejected text as an AI message and the violations as a human one.
// Streaming: each attempt's text chunks are held and, once an answer is
// accepted, Choices[0]'s answer is streamed as one chunk; reasoning chunks
// pass at once. Place it outside the limiters and ModelRetry so that their
// stand-in answers reach it:
//
//	Wrap(model, OutputValidation(schema), ToolCallLimit(...), ToolArgValidation(), ModelRetry())
func OutputValidation(schema any, opts ...guard.ValidationOption) Middleware {
	return From(guard.OutputValidation(codec{}, schema, opts...))
}

// Observe returns a middleware that installs o in the context of every call
// it handles and tells o of each call ([guard.Observe]); otelguard's
// observer gets a span per call and per request this way. Place it
// outermost. The middleware is a [guard.ObserverInstaller], so an agent
// given it (agent.WithMiddleware) observes its runs and tool calls too.
func Observe(o guard.Observer) Middleware {
	return &observing{Middleware: From(guard.Observe(codec{}, o)), o: o}
}

// observing is the middleware Observe returns.
type observing struct {
	Middleware
	o guard.Observer
}

// InstallObserver returns ctx carrying the middleware's observer.
func (m *observing) InstallObserver(ctx context.Context) context.Context {
	return guard.WithObserver(ctx, m.o)
}
