package guard

import "context"

// scopes says where the counts of one model call come from.
type scopes struct {
	run    counter // nil: the run is read from the transcript
	thread counter // nil: the thread is the whole transcript
	// The transcript counts, used where the counter is nil.
	transcriptRun, transcriptThread int
}

// scopes returns the counters of ctx's run and thread; transcript counts
// the run and the thread in the transcript, and is called only when one of
// them has no counter, or a resumed run's count starts from it.
func (c *limitConfig) scopes(ctx context.Context, transcript func() (run, thread int)) scopes {
	var sc scopes
	if r := runFrom(ctx); r != nil {
		sc.run = r
		r.start(c.runKey(), func() int {
			if c.kind == CountModelCalls {
				return r.modelCalls
			}
			run, _ := transcript()
			return run
		})
	}
	if id := threadFrom(ctx); id != "" {
		sc.thread = storeCounter{c.store}
	}
	if sc.run == nil || sc.thread == nil {
		sc.transcriptRun, sc.transcriptThread = transcript()
	}
	return sc
}

// reserveFunc reserves n calls of key in ctr against limit, as
// [ThreadStore.Reserve] does.
type reserveFunc func(ctx context.Context, ctr counter, key ThreadKey, n, limit int) (count int, ok bool, err error)

// admit reserves n calls in every limited scope of sc with reserve. It
// returns nil if they all fit, else the exceeded limit with the fewest calls
// left (the thread's on a tie); the caller then releases what was reserved.
// A store that fails makes admit return a *[StoreError], unless the limiter
// fails open ([WithStoreFailOpen]): then that scope lets the calls pass.
func (c *limitConfig) admit(ctx context.Context, who string, sc scopes, n int, reserve reserveFunc) (*LimitExceededError, error) {
	var worst *LimitExceededError
	check := func(scope LimitScope, limit, transcript int, ctr counter, key ThreadKey) error {
		if limit == 0 {
			return nil
		}
		count, ok := transcript, transcript+n <= limit
		if ctr != nil {
			var err error
			if count, ok, err = reserve(ctx, ctr, key, n, limit); err != nil {
				if err := c.storeFailed(ctx, who, key, err); err != nil {
					return err
				}
				return nil // fail open
			}
		}
		if !ok {
			e := &LimitExceededError{Tool: c.tool, Kind: c.kind, Scope: scope, Limit: limit, Count: count, Requested: n}
			if worst == nil || e.Limit-e.Count <= worst.Limit-worst.Count {
				worst = e
			}
		}
		return nil
	}
	key := c.runKey()
	if err := check(ScopeRun, c.run, sc.transcriptRun, sc.run, key); err != nil {
		return nil, err
	}
	key.Thread = threadFrom(ctx)
	if err := check(ScopeThread, c.thread, sc.transcriptThread, sc.thread, key); err != nil {
		return nil, err
	}
	return worst, nil
}

// runKey is the key of the limiter's count in a run scope.
func (c *limitConfig) runKey() ThreadKey {
	return ThreadKey{Thread: c.runOwner, Tool: c.tool, Kind: c.kind}
}
