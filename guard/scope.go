package guard

import (
	"context"
	"sync"
)

// runKey and threadKey are the context keys of [WithRun] and [WithThread].
type (
	runKey    struct{}
	threadKey struct{}
)

// WithRun returns a copy of ctx that starts a new run: one user turn of an
// agent, however many model calls it takes. Every [ToolCallLimit] and
// [ModelCallLimit] that sees a context derived from it counts its run limit
// ([WithRunLimit]) against this run; calls made under different WithRun contexts never share a run count.
//
// Without a run in the context, ToolCallLimit reads the run from the
// transcript instead: the tool calls in the model's messages after the
// last user turn (a message the run added itself, as the note package
// middleware adds on calls without a function or an agent's re-ask for its
// structured answer, does not start a run; see [TranscriptReader]). That is what an agent loop that resends
// its whole transcript on each model call (langchaingo's agents.Executor)
// needs; an agent loop that trims or summarises its transcript should call
// WithRun.
//
// A WithRun inside a run (a sub-agent used as a tool, say) starts a run of
// its own: the sub-agent's calls do not count against its parent's run. The
// run's counts are safe for concurrent use by the model calls of one run.
func WithRun(ctx context.Context) context.Context {
	ctx = context.WithValue(ctx, runKey{}, &runScope{})
	// A new run is a new conversation for the limiters below it: they must
	// not mistake it for a re-ask of an enclosing model call.
	return context.WithValue(ctx, limitCallKey{}, (*limitCall)(nil))
}

// WithResumedRun returns a copy of ctx that continues a run paused
// earlier (an agent's run resumed after a pause for approval) in a new run
// scope whose counts start where the run left off: each [ModelCallLimit]'s
// at modelCalls, the model calls the run made before the pause (one per
// response, however many tool calls it held: a transcript cannot tell, as
// it records each parallel call as an AI message of its own); each
// [ToolCallLimit]'s at the calls it covers in the transcript of the first
// model call it sees, read as without [WithRun]. From there on the scope
// counts as WithRun's does. A negative modelCalls counts as 0. A
// ModelCallLimit placed inside ToolArgValidation or ModelRetry, which
// counts requests, starts at modelCalls too: the re-asks and retries
// before the pause are not known.
func WithResumedRun(ctx context.Context, modelCalls int) context.Context {
	ctx = context.WithValue(ctx, runKey{}, &runScope{resumed: true, modelCalls: max(modelCalls, 0)})
	return context.WithValue(ctx, limitCallKey{}, (*limitCall)(nil))
}

// WithThread returns a copy of ctx that names the conversation thread id
// (a chat session, say) the calls made with it belong to. [ToolCallLimit]
// and [ModelCallLimit] count their thread limit ([WithThreadLimit]) per
// thread id in their [ThreadStore], so the count holds across runs and, with
// a shared store, across replicas. An empty id means no thread: the limiters
// then count the thread from the transcript, every tool call (or, for
// ModelCallLimit, every message of the model) passed in.
func WithThread(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, threadKey{}, id)
}

func runFrom(ctx context.Context) *runScope {
	r, _ := ctx.Value(runKey{}).(*runScope)
	return r
}

func threadFrom(ctx context.Context) string { return ThreadFrom(ctx) }

// ThreadFrom returns the thread id ctx names ([WithThread]), or "" when it
// names none.
func ThreadFrom(ctx context.Context) string {
	id, _ := ctx.Value(threadKey{}).(string)
	return id
}

// runScope holds the counts of one run, per key: Thread is "" for
// ToolCallLimit's counts, which stacked limiters share, and names the
// limiter for ModelCallLimit's, which each layer keeps apart (see
// limitConfig.runOwner).
type runScope struct {
	mu     sync.Mutex
	counts map[ThreadKey]int
	// A resumed run ([WithResumedRun]) starts each key's count at what the
	// run made before its pause, once: started lists the keys done.
	resumed    bool
	modelCalls int
	started    map[ThreadKey]bool
}

// start adds to the count of key, the first time a resumed run sees it,
// the calls the run made before its pause: made(), called under r's lock.
func (r *runScope) start(key ThreadKey, made func() int) {
	if !r.resumed {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.started[key] {
		return
	}
	if r.started == nil {
		r.started = make(map[ThreadKey]bool)
	}
	if r.counts == nil {
		r.counts = make(map[ThreadKey]int)
	}
	r.started[key] = true
	r.counts[key] += made()
}

func (r *runScope) reserve(_ context.Context, key ThreadKey, n, limit int) (int, bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	count := r.counts[key]
	if count+n > limit {
		return count, false, nil
	}
	if r.counts == nil {
		r.counts = make(map[ThreadKey]int)
	}
	r.counts[key] = count + n
	return count, true, nil
}

func (r *runScope) release(_ context.Context, key ThreadKey, n int) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.counts != nil {
		r.counts[key] = max(r.counts[key]-n, 0)
	}
	return nil
}

func (r *runScope) same(c counter) bool {
	o, ok := c.(*runScope)
	return ok && o == r
}
