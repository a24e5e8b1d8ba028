package retry_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/toolguard/toolguard/retry"
)

func TestError(t *testing.T) {
	t.Parallel()
	errLast := errors.New("API returned unexpected status code: 503")
	tests := []struct {
		name     string
		err      *retry.Error
		wantText string
		wantIs   []error
		wantNot  []error
	}{
		{
			name:     "gave up",
			err:      &retry.Error{Attempts: 3, Err: errLast},
			wantText: "retry: failed after 3 attempts: API returned unexpected status code: 503",
			wantIs:   []error{errLast},
			wantNot:  []error{context.Canceled, context.DeadlineExceeded},
		},
		{
			name:     "one attempt",
			err:      &retry.Error{Attempts: 1, Err: errLast},
			wantText: "retry: failed after 1 attempt: API returned unexpected status code: 503",
			wantIs:   []error{errLast},
		},
		{
			name:     "cancelled while waiting",
			err:      &retry.Error{Attempts: 2, Err: errLast, ContextErr: context.Canceled},
			wantText: "retry: context canceled after 2 attempts; last error: API returned unexpected status code: 503",
			wantIs:   []error{errLast, context.Canceled},
			wantNot:  []error{context.DeadlineExceeded},
		},
		{
			name:     "attempt failed with the context's error",
			err:      &retry.Error{Attempts: 1, Err: fmt.Errorf("send request: %w", context.DeadlineExceeded), ContextErr: context.DeadlineExceeded},
			wantText: "retry: failed after 1 attempt: send request: context deadline exceeded",
			wantIs:   []error{context.DeadlineExceeded},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := tc.err.Error(); got != tc.wantText {
				t.Errorf("Error() = %q, want %q", got, tc.wantText)
			}
			wrapped := fmt.Errorf("agent: %w", tc.err)
			for _, target := range tc.wantIs {
				if !errors.Is(wrapped, target) {
					t.Errorf("errors.Is(%v, %v) = false, want true", wrapped, target)
				}
			}
			for _, target := range tc.wantNot {
				if errors.Is(wrapped, target) {
					t.Errorf("errors.Is(%v, %v) = true, want false", wrapped, target)
				}
			}
			var re *retry.Error
			if !errors.As(wrapped, &re) || re.Attempts != tc.err.Attempts {
				t.Errorf("errors.As(%v, *retry.Error) = %v, want Attempts %d", wrapped, re, tc.err.Attempts)
			}
			if errors.Unwrap(tc.err) != tc.err.Err {
				t.Errorf("Unwrap() = %v, want the last attempt's error %v", errors.Unwrap(tc.err), tc.err.Err)
			}
		})
	}
}
