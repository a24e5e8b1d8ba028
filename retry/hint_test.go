package retry_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/toolguard/toolguard/retry"
)

type retryAfterErr time.Duration

func (e retryAfterErr) Error() string             { return "API returned unexpected status code: 429" }
func (e retryAfterErr) RetryAfter() time.Duration { return time.Duration(e) }

func TestAfter(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		err    error
		want   time.Duration
		wantOK bool
	}{
		{"nil", nil, 0, false},
		{"no hint", errors.New("API returned unexpected status code: 503"), 0, false},
		{"RetryAfter method", retryAfterErr(7 * time.Second), 7 * time.Second, true},
		{"RetryAfter method wrapped", fmt.Errorf("call: %w", retryAfterErr(3*time.Second)), 3 * time.Second, true},
		{"RetryAfter method zero ignored", retryAfterErr(0), 0, false},
		{"Retry-After header text", errors.New("429 Too Many Requests; Retry-After: 20"), 20 * time.Second, true},
		{"retry after N", errors.New("rate limited, retry after 20"), 20 * time.Second, true},
		{"retry after fractional seconds", errors.New("retry after 1.5s"), 1500 * time.Millisecond, true},
		{"retry after ms", errors.New("retry after 250ms"), 250 * time.Millisecond, true},
		{"azure openai", errors.New("API returned unexpected status code: 429: Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2024-02-01 have exceeded token rate limit of your current OpenAI S0 pricing tier. Please retry after 6 seconds."), 6 * time.Second, true},
		{"openai seconds", errors.New("API returned unexpected status code: 429: Rate limit reached for gpt-4o in organization org-abc on tokens per min (TPM): Limit 30000, Used 29000, Requested 1500. Please try again in 1.2s. Visit https://platform.openai.com/account/rate-limits to learn more."), 1200 * time.Millisecond, true},
		{"openai milliseconds", errors.New("API returned unexpected status code: 429: Rate limit reached for gpt-4o-mini on requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in 20ms."), 20 * time.Millisecond, true},
		{"openai minutes", errors.New("API returned unexpected status code: 429: Rate limit reached for gpt-4o on tokens per day (TPD): Limit 90000, Used 89000, Requested 2000. Please try again in 6m0s."), 6 * time.Minute, true},
		{"try again in words", errors.New("too many requests, try again in 20 seconds"), 20 * time.Second, true},
		{"google retry info", errors.New("googleapi: Error 429: You exceeded your current quota.\nerror details: retry in 24s"), 24 * time.Second, true},
		{"google retryDelay json", errors.New(`googleapi: Error 429: quota. Details: [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "35s"}]`), 35 * time.Second, true},
		{"try again later has no number", errors.New("The model is overloaded. Please try again later."), 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, ok := retry.After(tc.err)
			if got != tc.want || ok != tc.wantOK {
				t.Errorf("After(%v) = %v, %v, want %v, %v", tc.err, got, ok, tc.want, tc.wantOK)
			}
		})
	}
}
