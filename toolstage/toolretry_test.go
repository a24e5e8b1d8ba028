package toolstage_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/cenkalti/backoff/v4"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/retry"
	"github.com/toolguard/toolguard/toolstage"
)

// noWait is a ToolRetry backoff that never waits, so tests never sleep.
func noWait() backoff.BackOff { return &backoff.ZeroBackOff{} }

// ToolRetry through a Stage repeats a call only when a repeat is safe: an
// Idempotent tool's transient failure (a timeout), or any tool's error
// wrapping ErrNotRun. A tool that is not idempotent and times out runs
// once: its outcome is unknown (*OutcomeUnknownError), and the model
// reads that it must check before repeating it. A failure that is not
// transient is never repeated; one that stays transient is given up on
// after 1 + WithMaxRetries attempts (*retry.Error).
func TestToolRetryThroughStage(t *testing.T) {
	t.Parallel()
	timeout := fmt.Errorf("payments API: %w", context.DeadlineExceeded)
	notRun := fmt.Errorf("%w: payments API refused the request: 503", toolstage.ErrNotRun)
	for _, tc := range []struct {
		name       string
		idempotent bool
		fails      []error // the error of each attempt, nil past the end
		attempts   []int
		check      func(t *testing.T, o toolstage.Outcome)
		event      guard.EventKind
	}{
		{"idempotent, timeout", true, []error{timeout}, []int{1, 2}, func(t *testing.T, o toolstage.Outcome) {
			if o.Err != nil || o.Content != "ok" {
				t.Errorf("outcome = %q, %v; want ok after a retry", o.Content, o.Err)
			}
		}, guard.EventToolRetry},
		{"not idempotent, timeout", false, []error{timeout}, []int{1}, func(t *testing.T, o toolstage.Outcome) {
			var unknown *toolstage.OutcomeUnknownError
			if !errors.As(o.Err, &unknown) || unknown.Tool != "transfer_money" || !errors.Is(o.Err, context.DeadlineExceeded) {
				t.Errorf("Err = %v, want an *OutcomeUnknownError for transfer_money wrapping the timeout", o.Err)
			}
			if !strings.Contains(o.Content, "outcome is unknown") || !strings.Contains(o.Content, "check whether it took effect") {
				t.Errorf("Content = %q, want the model told the outcome is unknown and to check first", o.Content)
			}
		}, guard.EventToolOutcomeUnknown},
		{"not idempotent, ErrNotRun", false, []error{notRun}, []int{1, 2}, func(t *testing.T, o toolstage.Outcome) {
			if o.Err != nil || o.Content != "ok" {
				t.Errorf("outcome = %q, %v; want ok after a retry", o.Content, o.Err)
			}
		}, guard.EventToolRetry},
		{"idempotent, not transient", true, []error{errors.New("insufficient funds")}, []int{1}, func(t *testing.T, o toolstage.Outcome) {
			if o.Err == nil || o.Err.Error() != "insufficient funds" {
				t.Errorf("Err = %v, want the tool's own error, not retried", o.Err)
			}
		}, ""},
		{"idempotent, always timing out", true, []error{timeout, timeout, timeout}, []int{1, 2, 3}, func(t *testing.T, o toolstage.Outcome) {
			var re *retry.Error
			if !errors.As(o.Err, &re) || re.Attempts != 3 || !errors.Is(o.Err, context.DeadlineExceeded) {
				t.Errorf("Err = %v, want a *retry.Error after 3 attempts wrapping the timeout", o.Err)
			}
		}, guard.EventToolRetry},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			var attempts []int
			var pay toolstage.Tool = toolstage.NewSchemaTool("transfer_money", "Pays.", nil, func(ctx context.Context, _ map[string]any) (string, error) {
				info, _ := toolstage.CallFrom(ctx)
				mu.Lock()
				defer mu.Unlock()
				attempts = append(attempts, info.Attempt)
				if n := len(attempts); n <= len(tc.fails) && tc.fails[n-1] != nil {
					return "", tc.fails[n-1]
				}
				return "ok", nil
			})
			if tc.idempotent {
				pay = toolstage.Idempotent(pay)
			}
			var events eventLog
			stage := toolstage.New([]toolstage.Tool{pay}, toolstage.WithEventHandler(events.handle),
				toolstage.WithToolMiddleware(toolstage.ToolRetry(toolstage.WithBackOff(noWait))))
			b, err := stage.Run(context.Background(), []guard.Call{call("call_1", "transfer_money", `{}`)})
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, b.Outcomes[0])
			if !slices.Equal(attempts, tc.attempts) {
				t.Errorf("attempts = %v, want %v", attempts, tc.attempts)
			}
			if tc.event != "" {
				if ev := events.of(tc.event); len(ev) == 0 || ev[0].CallID != "call_1" || ev[0].Attempt != 1 {
					t.Errorf("%s events = %+v, want one for call_1's first attempt", tc.event, ev)
				}
			}
		})
	}
}
