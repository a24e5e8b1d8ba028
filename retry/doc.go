// Package retry decides whether a failed model call is worth another attempt
// and how long to wait before it. It is the engine behind
// [github.com/toolguard/toolguard/middleware.ModelRetry] and names no host's
// types: it imports no SDK, so any retry loop around any model client can
// use it.
//
// # Classification
//
// A failed call is classified by the HTTP status of its response wherever
// one can be found, and by its text otherwise. SDKs carry the status in
// their error types: a field (openai-go's and anthropic-sdk-go's *Error,
// go-openai's *APIError, genai's APIError), a method (the AWS SDK, Google's
// apierror), or an error type only its host's adapter knows, whose status
// the adapter supplies with a [StatusFunc] ([IsRetryableWith]; the
// langchaingo adapter maps *llms.Error codes this way). Other clients
// return plain errors such as langchaingo's
//
//	API returned unexpected status code: 429: Rate limit reached for gpt-4o ...
//
// and [IsRetryable] reads what is there: a status, a net.Error timeout or a
// broken connection, and failing those the message text of every provider
// (OpenAI, Azure OpenAI, Anthropic, Google AI, Vertex AI, Ollama, Mistral,
// Bedrock). It decides on the first of these that applies:
//
//  1. nil, and an *[Error] (a retry loop already gave up on it, so nested
//     loops do not multiply): not retryable.
//  2. An error from the caller's own streaming function ("streaming func
//     returned an error"): not retryable.
//  3. context.Canceled: not retryable.
//  4. The server's own word: the x-should-retry header ("true" or "false")
//     of the response an SDK error keeps in an exported field Response
//     *http.Response (openai-go, anthropic-sdk-go), honoured as those SDKs
//     honour it.
//  5. An HTTP status from the error's types ([Status]): a [StatusFunc]
//     given to [IsRetryableWith], then a method HTTPStatusCode() int (AWS),
//     HTTPCode() int (Google's apierror) or StatusCode() int, then an
//     exported int field StatusCode or HTTPStatusCode of an error struct in
//     the chain (Code on genai's APIError): see below.
//  6. An AWS error code (a method ErrorCode() string): throttling codes,
//     ServiceUnavailableException, InternalServerException,
//     ModelNotReadyException, ModelTimeoutException,
//     ModelStreamErrorException and RequestTimeout are retryable.
//  7. context.DeadlineExceeded, a net.Error whose Timeout() is true, a
//     temporary DNS failure, a refused, reset or aborted connection, a
//     broken pipe, io.ErrUnexpectedEOF, and an HTTP request that ended in
//     io.EOF: retryable. A host that does not exist is not.
//  8. The message: an HTTP status in it ("status code: 429", "(HTTP Error
//     503)", "googleapi: Error 429", "StatusCode: 503", "503 Service
//     Unavailable"), then a gRPC code ("rpc error: code = Unavailable"),
//     then phrases: rate limits, "overloaded", "service unavailable", "server
//     busy", "internal server error", timeouts, broken connections,
//     "unexpected EOF" are retryable; a billing quota ("exceeded your current
//     quota") and AWS's client-side "retry quota exceeded" are not.
//  9. Anything else: not retryable.
//
// HTTP statuses: 408, 409 and 429 are retryable, as is every 5xx but 501
// and 505 (so Anthropic's 529 "overloaded" is); every other status is not,
// 425 included. These are the statuses openai-go and anthropic-sdk-go retry
// by default. A 429 (or gRPC ResourceExhausted) whose message says a
// billing quota is exhausted is not retryable unless the error also carries
// a retry hint ([After]): Google answers per-minute limits with the same
// words and a "retry in 24s".
//
// # Waiting
//
// The wait before the next attempt comes from a backoff.BackOff (package
// github.com/cenkalti/backoff/v4). A BackOff is stateful, so a retry loop
// gets a fresh one per logical call from a factory such as [DefaultBackOff]:
// exponential, 1s, 2s, 4s, … capped at 60s, each wait jittered by ±25% (the
// defaults of LangChain's ModelRetryMiddleware). [NextWait] combines the
// policy's wait with the server's own hint: the hint is a floor on the
// wait, capped at the policy's maximum delay.
//
// # Retry hints
//
// These sources of a hint are honoured, and nothing else:
//
//   - the error's text ([After]): "Please try again in 1.2s" and "try again
//     in 20ms" (OpenAI's body), "retry after 6 seconds" (Azure OpenAI),
//     "Retry-After: 20", "retry in 24s" (Google AI's RetryInfo as the genai
//     client prints it), and a "retryDelay": "24s" field of a Google API
//     error body;
//   - a method RetryAfter() time.Duration of an error in the chain ([After]);
//   - the "retry-after-ms" (milliseconds) or else "Retry-After" (seconds or
//     an HTTP date) header of a failed response (408, 409, 429, 5xx but 501
//     and 505), recorded by a client made with [HTTPClient] into the
//     [HeaderHint] of the request's context ([WithHeaderHint]).
//     langchaingo's provider clients drop response headers, so the header
//     is honoured only when the provider client is given such a client
//     (openai.WithHTTPClient, anthropic.WithHTTPClient, ollama.WithHTTPClient)
//     and the retry loop puts a HeaderHint in each attempt's context, as
//     middleware.ModelRetry does. When the header and the error both carry
//     a hint, the longer wins.
//
// # Errors
//
// A retry loop that gives up returns an *Error carrying the number of
// attempts; errors.Is and errors.As reach the last attempt's error through
// it.
package retry
