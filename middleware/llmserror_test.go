package middleware_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"syscall"
	"testing"

	"github.com/cenkalti/backoff/v4"
	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/fakemodel"
	"github.com/toolguard/toolguard/retry"
)

// retriedOnce reports whether ModelRetry, with its default classifier, made
// a second attempt after a first one failed with err; it fails the test
// when the outcome is neither a retried success nor a give-up after one
// attempt that reaches err.
func retriedOnce(t *testing.T, err error) bool {
	t.Helper()
	model := fakemodel.New(fakemodel.Fail(err), fakemodel.Text("ok"))
	llm := middleware.Wrap(model, middleware.ModelRetry(
		guard.WithBackOff(func() backoff.BackOff { return &backoff.ZeroBackOff{} })))
	resp, got := llm.GenerateContent(context.Background(), retryQuestion())
	switch n := len(model.Requests()); {
	case n == 2 && got == nil:
		if text(t, resp) != "ok" {
			t.Errorf("retried call answered %q, want ok", text(t, resp))
		}
		return true
	case n == 1 && got != nil:
		if re := asRetryError(t, got); re.Attempts != 1 || !errors.Is(got, err) {
			t.Errorf("error = %v (attempts %d), want a give-up after 1 attempt reaching %v", got, re.Attempts, err)
		}
		return false
	default:
		t.Fatalf("model calls = %d, error %v: want a retried success or a give-up after one attempt", n, got)
		return false
	}
}

// ModelRetry's default classifier, the langchaingo adapter's, reads an
// *llms.Error's code: rate_limit, timeout and provider_unavailable are
// retried; every other known code is not; unknown lets the rest decide.
func TestModelRetryLLMErrorCodes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		code llms.ErrorCode
		want bool
	}{
		{llms.ErrCodeRateLimit, true},
		{llms.ErrCodeTimeout, true},
		{llms.ErrCodeProviderUnavailable, true},
		{llms.ErrCodeAuthentication, false},
		{llms.ErrCodeInvalidRequest, false},
		{llms.ErrCodeResourceNotFound, false},
		{llms.ErrCodeContentFilter, false},
		{llms.ErrCodeTokenLimit, false},
		{llms.ErrCodeQuotaExceeded, false},
		{llms.ErrCodeNotImplemented, false},
		{llms.ErrCodeCanceled, false},
		{"some_future_code", false},
		{llms.ErrCodeUnknown, false}, // nothing else known about it
		{"", false},
	}
	for _, tc := range tests {
		t.Run(string(tc.code), func(t *testing.T) {
			t.Parallel()
			// The message is neutral so that only the code decides.
			err := llms.NewError(tc.code, "openai", "something happened")
			if got := retriedOnce(t, err); got != tc.want {
				t.Errorf("ModelRetry retried %q: %v, want %v", err, got, tc.want)
			}
			wrapped := fmt.Errorf("call: %w", err)
			if got := retriedOnce(t, wrapped); got != tc.want {
				t.Errorf("ModelRetry retried %q: %v, want %v", wrapped, got, tc.want)
			}
		})
	}
	t.Run("code wins over message", func(t *testing.T) {
		t.Parallel()
		err := llms.NewError(llms.ErrCodeAuthentication, "openai", "API returned unexpected status code: 503")
		if retriedOnce(t, err) {
			t.Errorf("ModelRetry retried %q, want not", err)
		}
	})
}

// langchaingo's MapError helpers wrap what they do not recognise in an
// *llms.Error with code unknown, and what they do recognise by its text;
// either way the provider's error decides as it would unwrapped.
func TestModelRetryMappedProviderErrors(t *testing.T) {
	t.Parallel()
	connRefused := &url.Error{Op: "Post", URL: "https://api.anthropic.com/v1/messages", Err: &net.OpError{
		Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}}
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"anthropic 529 overloaded", errors.New("anthropic: failed to create message: API returned unexpected status code: 529: Overloaded"), true},
		{"openai 503", err503, true},
		{"openai 429", err429, true},
		{"openai 401", err401, false},
		{"openai 429 insufficient quota", errors.New("API returned unexpected status code: 429: You exceeded your current quota, please check your plan and billing details."), false},
		{"googleai 400 api key", errors.New("googleapi: Error 400: API key not valid. Please pass a valid API key."), false},
		{"connection refused", connRefused, true},
		{"caller's streaming func", fmt.Errorf("streaming func returned an error: %w", syscall.ECONNRESET), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := retry.IsRetryable(tc.err); got != tc.want {
				t.Fatalf("IsRetryable(%q) = %v, want %v: the case is wrong", tc.err, got, tc.want)
			}
			unknown := llms.NewError(llms.ErrCodeUnknown, "test", tc.err.Error()).WithCause(tc.err)
			if got := retriedOnce(t, unknown); got != tc.want {
				t.Errorf("ModelRetry retried %q (code unknown): %v, want %v", unknown, got, tc.want)
			}
			mapped := llms.NewErrorMapper("openai").WrapError(tc.err)
			if got := retriedOnce(t, mapped); got != tc.want {
				t.Errorf("ModelRetry retried %q (mapped, code %q): %v, want %v", mapped, codeOf(mapped), got, tc.want)
			}
		})
	}
}

func codeOf(err error) llms.ErrorCode {
	var le *llms.Error
	if errors.As(err, &le) {
		return le.Code
	}
	return ""
}
