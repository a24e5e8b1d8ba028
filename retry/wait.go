package retry

import (
	"context"
	"time"

	"github.com/cenkalti/backoff/v4"
)

// NextWaitBy returns how long a retry loop waits before the attempt that
// follows a failure with err, as policy says ([NextWait]: the policy's next
// wait, raised to a server's hint in err). It returns false when the policy
// says stop, and when the wait would end at or after ctx's deadline, since
// the next attempt could not start in time. The model stage's ModelRetry
// and the tool stage's ToolRetry wait this way.
func NextWaitBy(ctx context.Context, policy backoff.BackOff, err error) (time.Duration, bool) {
	wait, ok := NextWait(policy, err)
	if !ok {
		return 0, false
	}
	if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) <= wait {
		return 0, false
	}
	return wait, true
}

// Sleep waits d, or until ctx is done, whichever comes first; it returns
// ctx's error when ctx ended the wait (or was done already), else nil: the
// wait of a retry loop, which a cancelled context ends at once.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
