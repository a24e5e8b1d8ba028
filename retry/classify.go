package retry

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"syscall"
)

// IsRetryable reports whether a model call that failed with err may succeed
// if it is made again unchanged: rate limits, overloaded or failing servers,
// timeouts and broken connections are retryable; authentication, invalid
// requests, content filters, context length, billing quotas, an *[Error]
// (a retry loop already gave up on it) and anything it does not recognise
// are not. It is [IsRetryableWith] without a [StatusFunc]. The package
// documentation ("Classification") lists the rules in the order they are
// applied.
//
// context.DeadlineExceeded counts as a timeout, hence retryable: an inner
// HTTP client or per-attempt timeout expired. Whether it is the caller's own
// deadline only the caller's context can tell, so a retry loop must stop when
// ctx.Err() != nil whatever IsRetryable says; middleware.ModelRetry does.
func IsRetryable(err error) bool { return IsRetryableWith(err) }

// IsRetryableWith is [IsRetryable] with an adapter's knowledge: status are
// asked, in order, for the HTTP status of err before the classifier looks
// for one itself ([Status]), so an adapter passes the extractor of its
// host's error type (nil entries are skipped). Unless an earlier rule of
// the package's "Classification" decides first (an *[Error],
// context.Canceled, a server's x-should-retry header), the status found
// decides: 408, 409, 429 and every 5xx but 501 and 505 are retryable, a
// 429 whose message says a billing quota is exhausted is not, and neither
// is any other status. It is safe for concurrent use when status are.
func IsRetryableWith(err error, status ...StatusFunc) bool {
	if err == nil {
		return false
	}
	var re *Error
	if errors.As(err, &re) {
		return false
	}
	msg := err.Error()
	lower := strings.ToLower(msg)
	if strings.Contains(lower, "streaming func returned an error") ||
		strings.Contains(lower, "streaming reasoning func returned an error") {
		return false
	}
	if errors.Is(err, context.Canceled) {
		return false
	}
	if retryable, ok := shouldRetryHeader(err); ok {
		return retryable
	}
	if code, ok := typedStatus(err, status); ok {
		return retryableResponse(code, err, lower)
	}
	if retryable, ok := awsCode(err); ok {
		return retryable
	}
	if retryable, ok := transportError(err); ok {
		return retryable
	}
	return retryableMessage(err, msg, lower)
}

// retryableResponse classifies a failed response by its status; a 429 that
// is a billing quota is not retryable.
func retryableResponse(code int, err error, lower string) bool {
	if code == http.StatusTooManyRequests {
		return !billingQuota(err, lower)
	}
	return retryableStatus(code)
}

// billingQuota reports whether a rate-limit error is in fact an exhausted
// billing quota, which no wait fixes: OpenAI's insufficient_quota 429 "You
// exceeded your current quota, please check your plan and billing details".
// A retry hint overrides it (Google uses the same words for per-minute
// limits and adds "retry in 24s").
func billingQuota(err error, lower string) bool {
	if _, ok := After(err); ok {
		return false
	}
	for _, p := range billingPatterns {
		if strings.Contains(lower, p) {
			return true
		}
	}
	return false
}

var billingPatterns = []string{
	"exceeded your current quota",
	"insufficient_quota",
	"check your plan and billing",
	"credit balance",
}

// isAWSRetryableCode reports the AWS error codes worth a retry: the SDK's own throttle and retryable codes
// (aws/retry.DefaultThrottleErrorCodes, DefaultRetryableErrorCodes) and the
// transient Bedrock Runtime exceptions.
func isAWSRetryableCode(code string) bool {
	switch code {
	case "Throttling", "ThrottlingException", "ThrottledException",
		"RequestThrottledException", "TooManyRequestsException",
		"ProvisionedThroughputExceededException", "TransactionInProgressException",
		"RequestLimitExceeded", "BandwidthLimitExceeded", "LimitExceededException",
		"RequestThrottled", "SlowDown", "PriorRequestNotComplete", "EC2ThrottledException",
		"RequestTimeout", "RequestTimeoutException", "ServiceUnavailableException",
		"InternalServerException", "ModelNotReadyException", "ModelTimeoutException",
		"ModelStreamErrorException":
		return true
	}
	return false
}

// awsCode classifies an error carrying an AWS error code. Codes not listed
// decide nothing (ok false), so a status or message may still.
func awsCode(err error) (retryable, ok bool) {
	var e interface{ ErrorCode() string }
	if !errors.As(err, &e) || !isAWSRetryableCode(e.ErrorCode()) {
		return false, false
	}
	return true, true
}

// transportError classifies timeouts and broken connections.
func transportError(err error) (retryable, ok bool) {
	if errors.Is(err, context.DeadlineExceeded) {
		return true, true
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return dns.IsTimeout || dns.IsTemporary, true
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true, true
	}
	for _, target := range []error{syscall.ECONNREFUSED, syscall.ECONNRESET, syscall.ECONNABORTED, syscall.EPIPE, syscall.ETIMEDOUT, io.ErrUnexpectedEOF} {
		if errors.Is(err, target) {
			return true, true
		}
	}
	// The server closed the connection before answering: Go's HTTP client
	// reports `Post "…": EOF`.
	var ue *url.Error
	if errors.As(err, &ue) && errors.Is(ue.Err, io.EOF) {
		return true, true
	}
	return false, false
}

var (
	// "API returned unexpected status code: 429" (OpenAI, Anthropic),
	// "(HTTP Error 429)" (Mistral), "googleapi: Error 429:" and "googleapi:
	// got HTTP response code 503" (Google), "StatusCode: 429" (AWS),
	// "status 503", "status=503".
	statusInText = regexp.MustCompile(`(?i)(?:status ?code|\bstatus|http error|googleapi: error|response code)\s*[:=]?\s*(\d{3})\b`)
	// "503 Service Unavailable" (Ollama's StatusError, net/http's Status).
	statusLineInText = regexp.MustCompile(`\b([45]\d\d) ([A-Za-z][A-Za-z' -]*)`)
	// "rpc error: code = Unavailable desc = …" (gRPC, Vertex AI).
	grpcCodeInText = regexp.MustCompile(`rpc error: code = (\w+)`)
)

// textStatus finds an HTTP status written in an error message.
func textStatus(msg string) (int, bool) {
	if m := statusInText.FindStringSubmatch(msg); m != nil {
		if code, err := strconv.Atoi(m[1]); err == nil && validStatus(code) {
			return code, true
		}
	}
	for _, m := range statusLineInText.FindAllStringSubmatch(msg, -1) {
		code, err := strconv.Atoi(m[1])
		if err != nil || !validStatus(code) {
			continue
		}
		if text := http.StatusText(code); text != "" && strings.HasPrefix(strings.ToLower(m[2]), strings.ToLower(text)) {
			return code, true
		}
	}
	return 0, false
}

func retryableMessage(err error, msg, lower string) bool {
	if code, ok := textStatus(msg); ok {
		return retryableResponse(code, err, lower)
	}
	if m := grpcCodeInText.FindStringSubmatch(msg); m != nil {
		switch m[1] {
		case "ResourceExhausted":
			return !billingQuota(err, lower)
		case "Unavailable", "DeadlineExceeded", "Aborted", "Internal":
			return true
		default:
			return false
		}
	}
	for _, p := range permanentPhrases {
		if strings.Contains(lower, p) {
			return false
		}
	}
	if billingQuota(err, lower) {
		return false
	}
	for _, p := range retryablePhrases {
		if strings.Contains(lower, p) {
			return true
		}
	}
	return false
}

// permanentPhrases win over retryablePhrases in a message without a status.
var permanentPhrases = []string{
	"retry quota exceeded", // AWS SDK: its client-side retry budget is spent; respect it
	"request cancelled",    // OpenAI client: the request's context was cancelled
	"context canceled",
}

var retryablePhrases = []string{
	"rate limit", "rate_limit", "ratelimit", "too many requests",
	"overloaded", // Anthropic 529 "Overloaded", stream "overloaded_error"; Gemini "The model is overloaded"
	"resource has been exhausted", "resource_exhausted",
	"service unavailable", "temporarily unavailable", "server busy",
	"internal server error", "bad gateway", "gateway timeout",
	"api_error", // Anthropic stream error event type for a 500
	"try again later",
	"throttl", // AWS ThrottlingException, "Throttling"
	"serviceunavailableexception", "internalserverexception", "modelnotreadyexception",
	"modeltimeoutexception", "modelstreamerrorexception",
	"timeout", "timed out", "deadline exceeded",
	"connection reset", "connection refused", "broken pipe", "unexpected eof",
	"failed to reach api server", // OpenAI client's sanitised network error
	"goaway",                     // HTTP/2 server shutting the connection down
}
