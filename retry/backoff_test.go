package retry_test

import (
	"errors"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/toolguard/toolguard/retry"
)

func TestDefaultBackOff(t *testing.T) {
	t.Parallel()
	b, ok := retry.DefaultBackOff().(*backoff.ExponentialBackOff)
	if !ok {
		t.Fatalf("DefaultBackOff() = %T, want *backoff.ExponentialBackOff", retry.DefaultBackOff())
	}
	if b.InitialInterval != time.Second || b.Multiplier != 2 || b.MaxInterval != time.Minute ||
		b.RandomizationFactor != 0.25 || b.MaxElapsedTime != 0 {
		t.Errorf("DefaultBackOff() = {Initial %v, x%v, Max %v, jitter %v, MaxElapsed %v}, want {1s, x2, 1m0s, 0.25, 0}",
			b.InitialInterval, b.Multiplier, b.MaxInterval, b.RandomizationFactor, b.MaxElapsedTime)
	}
	if retry.DefaultBackOff() == retry.DefaultBackOff() {
		t.Error("DefaultBackOff() returned the same BackOff twice, want a fresh one per call")
	}

	// 1s, 2s, 4s, … each within ±25%, never above 60s.
	base := time.Second
	for i := range 12 {
		d, ok := retry.NextWait(b, errors.New("API returned unexpected status code: 503"))
		if !ok {
			t.Fatalf("NextWait #%d: stop, want a wait", i+1)
		}
		lo, hi := base*3/4, min(base*5/4, time.Minute)
		if base >= time.Minute {
			lo = 45 * time.Second
		}
		if d < lo || d > hi {
			t.Errorf("NextWait #%d = %v, want within [%v, %v]", i+1, d, lo, hi)
		}
		base = min(2*base, time.Minute)
	}
}

func TestNextWait(t *testing.T) {
	t.Parallel()
	errHint := func(s string) error { return errors.New("API returned unexpected status code: 429: " + s) }
	tests := []struct {
		name   string
		policy backoff.BackOff
		err    error
		want   time.Duration
		wantOK bool
	}{
		{"policy wait without hint", backoff.NewConstantBackOff(3 * time.Second), errHint("slow down"), 3 * time.Second, true},
		{"hint raises the wait", backoff.NewConstantBackOff(time.Second), errHint("Please try again in 20s."), 20 * time.Second, true},
		{"hint below the policy wait", backoff.NewConstantBackOff(5 * time.Second), errHint("retry after 1"), 5 * time.Second, true},
		{"hint capped at 60s for other policies", &backoff.ZeroBackOff{}, errHint("retry after 300"), time.Minute, true},
		{"custom policy's own wait is not capped", backoff.NewConstantBackOff(2 * time.Minute), errHint("no hint"), 2 * time.Minute, true},
		{"hint capped at MaxInterval", exponential(time.Second, 10*time.Second), errHint("Please try again in 6m0s."), 10 * time.Second, true},
		{"stop", &backoff.StopBackOff{}, errHint("retry after 5"), 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, ok := retry.NextWait(tc.policy, tc.err)
			if got != tc.want || ok != tc.wantOK {
				t.Errorf("NextWait(%T, %q) = %v, %v, want %v, %v", tc.policy, tc.err, got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

func exponential(initial, max time.Duration) *backoff.ExponentialBackOff {
	return backoff.NewExponentialBackOff(backoff.WithInitialInterval(initial), backoff.WithMaxInterval(max),
		backoff.WithRandomizationFactor(0), backoff.WithMaxElapsedTime(0))
}
