package middleware

import (
	"fmt"
	"testing"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/retry"
)

// llmsStatus maps each *llms.Error code to the status that means the same;
// retry.Status reports it through the adapter's StatusFunc.
func TestLLMSStatus(t *testing.T) {
	t.Parallel()
	tests := []struct {
		code   llms.ErrorCode
		status int // 0: none
	}{
		{llms.ErrCodeRateLimit, 429},
		{llms.ErrCodeProviderUnavailable, 503},
		{llms.ErrCodeTimeout, 504},
		{llms.ErrCodeAuthentication, 401},
		{llms.ErrCodeResourceNotFound, 404},
		{llms.ErrCodeNotImplemented, 501},
		{llms.ErrCodeCanceled, 499},
		{llms.ErrCodeInvalidRequest, 400},
		{llms.ErrCodeContentFilter, 400},
		{llms.ErrCodeTokenLimit, 400},
		{llms.ErrCodeQuotaExceeded, 400},
		{"some_future_code", 400},
		{llms.ErrCodeUnknown, 0},
		{"", 0},
	}
	for _, tc := range tests {
		t.Run(string(tc.code), func(t *testing.T) {
			t.Parallel()
			err := fmt.Errorf("call: %w", llms.NewError(tc.code, "openai", "something happened"))
			got, ok := llmsStatus(err)
			if got != tc.status || ok != (tc.status != 0) {
				t.Errorf("llmsStatus(%q) = %d, %v, want %d, %v", err, got, ok, tc.status, tc.status != 0)
			}
			if got, ok := retry.Status(err, llmsStatus); got != tc.status || ok != (tc.status != 0) {
				t.Errorf("retry.Status(%q, llmsStatus) = %d, %v, want %d, %v", err, got, ok, tc.status, tc.status != 0)
			}
		})
	}
	if got, ok := llmsStatus(fmt.Errorf("plain")); ok {
		t.Errorf("llmsStatus(plain error) = %d, true, want none", got)
	}
}
