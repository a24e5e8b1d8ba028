package middleware

// retryConfig holds ModelRetry's options.
type retryConfig struct {
	maxRetries int
	events     eventOption
}
