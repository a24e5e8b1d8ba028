// Package retry decides whether a failed model call is worth another attempt
// and how long to wait before it. It is the engine behind
// middleware.ModelRetry and has no dependency on it: use it in any retry loop
// around an llms.Model.
//
// # Classification
//
// langchaingo's providers return plain errors such as
//
//	API returned unexpected status code: 429: Rate limit reached for gpt-4o ...
//
// and never call the MapError helpers that would turn them into *llms.Error.
// IsRetryable reads what is there: an *llms.Error code, a status code from a
// typed error (the AWS and Google SDKs expose one), a net.Error timeout or a
// broken connection, and failing those the message text of every provider
// (OpenAI, Azure OpenAI, Anthropic, Google AI, Vertex AI, Ollama, Mistral,
// Bedrock). Rate limits, overloads, server errors and timeouts are
// retryable; authentication, invalid requests, content filters, context
// length, billing quotas and anything it does not recognise are not.
//
// # Waiting
//
// The wait before the next attempt comes from a backoff.BackOff (package
// github.com/cenkalti/backoff/v4). A BackOff is stateful, so a retry loop
// gets a fresh one per logical call from a factory such as DefaultBackOff:
// exponential, 1s, 2s, 4s, … capped at 60s, each wait jittered by ±25% (the
// defaults of LangChain's ModelRetryMiddleware). NextWait combines the
// policy's wait with the server's own hint (After): "Please try again in
// 1.2s", "retry after 6 seconds", "retry in 24s", a RetryAfter method. The
// hint is a floor on the wait, capped at the policy's maximum delay.
//
// # Errors
//
// A retry loop that gives up returns an *Error carrying the number of
// attempts; errors.Is and errors.As reach the last attempt's error through
// it.
package retry
