package middleware

import (
	"errors"
	"net/http"

	"github.com/tmc/langchaingo/llms"
)

// llmsStatus is the langchaingo adapter's [retry.StatusFunc]: it maps the
// code of the first *llms.Error in err's chain to the HTTP status that
// means the same, so that [retry.IsRetryableWith] decides by it as by a
// response's status.
//
//   - rate_limit: 429; provider_unavailable: 503 (both retryable).
//   - timeout: 504. langchaingo gives this code to a context deadline or a
//     net.Error timeout (llms.ErrorMapper): the client stopped waiting for
//     the provider's answer, which is a gateway's 504 ("no timely response
//     from upstream"), not 408 (the server stopped waiting for the
//     client's request). Both are retryable.
//   - authentication: 401; resource_not_found: 404; not_implemented: 501;
//     canceled: 499 (a client that closed the request, as nginx and
//     grpc-gateway write it); every other code, present or future
//     (invalid_request, content_filter, token_limit, quota_exceeded): 400.
//     None is retryable.
//   - unknown, or no code: no status, so the error's cause and text decide
//     (langchaingo's MapError wraps what it does not recognise this way).
func llmsStatus(err error) (int, bool) {
	var le *llms.Error
	if !errors.As(err, &le) {
		return 0, false
	}
	switch le.Code {
	case llms.ErrCodeUnknown, "":
		return 0, false
	case llms.ErrCodeRateLimit:
		return http.StatusTooManyRequests, true
	case llms.ErrCodeProviderUnavailable:
		return http.StatusServiceUnavailable, true
	case llms.ErrCodeTimeout:
		return http.StatusGatewayTimeout, true
	case llms.ErrCodeAuthentication:
		return http.StatusUnauthorized, true
	case llms.ErrCodeResourceNotFound:
		return http.StatusNotFound, true
	case llms.ErrCodeNotImplemented:
		return http.StatusNotImplemented, true
	case llms.ErrCodeCanceled:
		return statusClientClosedRequest, true
	default:
		return http.StatusBadRequest, true
	}
}

// statusClientClosedRequest is nginx's 499: the client closed the request
// before the answer came.
const statusClientClosedRequest = 499
