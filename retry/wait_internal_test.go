package retry

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"
)

func TestNextWaitBy(t *testing.T) {
	t.Parallel()
	hour := backoff.NewConstantBackOff(time.Hour)
	soon, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	later, cancel2 := context.WithTimeout(context.Background(), 3*time.Hour)
	defer cancel2()
	for _, tc := range []struct {
		name   string
		ctx    context.Context
		policy backoff.BackOff
		wait   time.Duration
		ok     bool
	}{
		{"no deadline", context.Background(), hour, time.Hour, true},
		{"deadline after the wait", later, hour, time.Hour, true},
		{"deadline before the wait ends", soon, hour, 0, false},
		{"the policy says stop", context.Background(), &backoff.StopBackOff{}, 0, false},
	} {
		wait, ok := NextWaitBy(tc.ctx, tc.policy, errors.New("503"))
		if wait != tc.wait || ok != tc.ok {
			t.Errorf("%s: Next = %v, %v; want %v, %v", tc.name, wait, ok, tc.wait, tc.ok)
		}
	}
}

// A cancelled context ends the wait at once (an hour here: the test would
// time out if it did not).
func TestSleepCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("Sleep = %v, want context.Canceled", err)
	}
	if err := Sleep(context.Background(), 0); err != nil {
		t.Errorf("Sleep(0) = %v, want nil", err)
	}
}
