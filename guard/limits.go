package guard

import (
	"context"
	"fmt"
	"strconv"
)

// ExitBehavior says what [ToolCallLimit] does with a model response whose tool
// calls would exceed a limit.
type ExitBehavior int

const (
	// ExitContinue calls the model again, inside the same model call, with
	// the blocked response replayed: each call over the limit is answered
	// "Tool call limit exceeded: …", each other call is told it was not
	// executed (and, for calls of the limited tool, how many remain). If
	// the new response fits, it is returned; if it still exceeds a limit,
	// [ExitEnd] applies. This is the default.
	ExitContinue ExitBehavior = iota
	// ExitEnd returns a response without tool calls whose text says which
	// limit was reached ("Tool call limit reached: run limit exceeded (2/2
	// calls)."), so that the agent loop ends with it as its answer.
	ExitEnd
	// ExitError returns a *[LimitExceededError].
	ExitError
)

// String returns the constant's name.
func (b ExitBehavior) String() string {
	switch b {
	case ExitContinue:
		return "ExitContinue"
	case ExitEnd:
		return "ExitEnd"
	case ExitError:
		return "ExitError"
	}
	return "ExitBehavior(" + strconv.Itoa(int(b)) + ")"
}

// LimitScope names what a tool call limit counts over.
type LimitScope string

const (
	// ScopeRun counts the calls of one run ([WithRun], or the transcript after
	// the last human message).
	ScopeRun LimitScope = "run"
	// ScopeThread counts the calls of one thread ([WithThread], or the whole
	// transcript).
	ScopeThread LimitScope = "thread"
)

// LimitExceededError reports a model response that [ToolCallLimit] blocked,
// or a model call that [ModelCallLimit] blocked (Kind [CountModelCalls],
// Tool "", Requested 1). [ExitError] returns it; every exit behaviour
// reports it in an [EventLimit].
type LimitExceededError struct {
	Tool      string     // the limited tool; "" when the limit covers all tools
	Scope     LimitScope // the scope whose limit the response would exceed
	Limit     int        // the limit of that scope
	Count     int        // calls made in the scope before the response
	Requested int        // calls of the response that the limit covers
	Kind      CountKind  // what the limit counts: tool calls ("") or model calls
}

// Error says which limit the response would exceed, e.g. "guard: tool
// call limit exceeded: 'search' run limit of 2 calls (2 made, 1 more
// requested)", or "guard: model call limit exceeded: …" for
// [ModelCallLimit].
func (e *LimitExceededError) Error() string {
	tool, calls := "", "calls"
	if e.Tool != "" {
		tool = "'" + e.Tool + "' "
	}
	if e.Limit == 1 {
		calls = "call"
	}
	what := "tool"
	if e.Kind == CountModelCalls {
		what = "model"
	}
	return fmt.Sprintf("guard: %s call limit exceeded: %s%s limit of %d %s (%d made, %d more requested)",
		what, tool, e.Scope, e.Limit, calls, e.Count, e.Requested)
}

// text describes the limit for the texts the model reads.
func (e *LimitExceededError) text() limitText {
	return limitText{Tool: e.Tool, Scope: string(e.Scope), Limit: e.Limit, Count: e.Count}
}

// reached is the [ExitEnd] answer's text.
func (e *LimitExceededError) reached() string {
	if e.Kind == CountModelCalls {
		return modelLimitText{Scope: string(e.Scope), Limit: e.Limit, Count: e.Count}.Reached()
	}
	return e.text().Reached()
}

// limitConfig holds the options of [ToolCallLimit] and [ModelCallLimit].
type limitConfig struct {
	events   eventOption
	run      int // 0: no run limit
	thread   int // 0: no thread limit
	tool     string
	exit     ExitBehavior
	store    ThreadStore
	failOpen bool // WithStoreFailOpen
	// failClosed: WithFailClosed; a response the codec cannot read is
	// refused (ToolCallLimit) instead of passed uncounted.
	failClosed bool
	kind       CountKind // set by the constructor, not an option
	// runOwner, when set, keeps this limiter's run count apart from other
	// limiters' in the same run (the Thread of its run key): stacked
	// ModelCallLimits count different things (steps, requests).
	runOwner string
}

// newLimitConfig applies opts over the defaults (exit behaviour exit) and
// panics, naming who, if the limits given make no sense.
func newLimitConfig(who string, kind CountKind, exit ExitBehavior, opts []LimitOption) limitConfig {
	cfg := limitConfig{exit: exit, kind: kind}
	for _, o := range opts {
		if o != nil {
			o.applyLimit(&cfg)
		}
	}
	switch {
	case cfg.run == 0 && cfg.thread == 0:
		panic("guard: " + who + ": set WithRunLimit, WithThreadLimit or both")
	case cfg.run != 0 && cfg.thread != 0 && cfg.run > cfg.thread:
		panic(fmt.Sprintf("guard: %s: the run limit (%d) exceeds the thread limit (%d); a run is part of a thread, so it can never be reached",
			who, cfg.run, cfg.thread))
	}
	if cfg.store == nil {
		cfg.store = NewMemoryThreadStore(DefaultThreadStoreCapacity)
	}
	return cfg
}

type limitOption func(*limitConfig)

func (o limitOption) applyLimit(c *limitConfig) { o(c) }

// WithRunLimit caps the calls (tool calls for [ToolCallLimit], model calls
// for [ModelCallLimit]) of one run (see [WithRun]) at n. n must be
// at least 1, and no larger than a thread limit given with it; WithRunLimit
// and [ToolCallLimit] panic otherwise. The default is no run limit.
func WithRunLimit(n int) LimitOption {
	checkLimit("WithRunLimit", n)
	return limitOption(func(c *limitConfig) { c.run = n })
}

// WithThreadLimit caps the calls of one thread (see [WithThread]) at n. n
// must be at least 1; WithThreadLimit panics otherwise. The default is no
// thread limit. A call whose context names no thread counts the thread from
// the transcript it carries, which trimming or summarising shortens: the
// limiter reports that once, in an [EventMisconfigured] wrapping
// [ErrNoThread].
func WithThreadLimit(n int) LimitOption {
	checkLimit("WithThreadLimit", n)
	return limitOption(func(c *limitConfig) { c.thread = n })
}

func checkLimit(who string, n int) {
	if n < 1 {
		panic(fmt.Sprintf("guard: %s(%d): the limit must be at least 1 (to forbid a tool, do not offer it to the model)", who, n))
	}
}

// WithToolName makes the limits count the calls of the named tool only;
// calls of other tools pass untouched and do not count. The default is to
// count the calls of every tool together. Names match regardless of case,
// as langchaingo's agents.Executor matches them (it runs a call of "Search"
// with the tool "search"), so changing case never escapes the limit. A name
// that none of a request's tools has is reported, once per limiter, in an
// [EventMisconfigured].
func WithToolName(name string) LimitOption {
	if name == "" {
		panic("guard: WithToolName(\"\"): the tool name must not be empty (leave the option out to limit all tools)")
	}
	return limitOption(func(c *limitConfig) { c.tool = name })
}

// WithExitBehavior sets what happens to a response that would exceed a limit
// (default [ExitContinue] for [ToolCallLimit], [ExitEnd] for [ModelCallLimit]).
func WithExitBehavior(b ExitBehavior) LimitOption {
	switch b {
	case ExitContinue, ExitEnd, ExitError:
	default:
		panic(fmt.Sprintf("guard: WithExitBehavior(%v): unknown exit behaviour", b))
	}
	return limitOption(func(c *limitConfig) { c.exit = b })
}

// WithThreadStore sets where [ToolCallLimit] or [ModelCallLimit] keeps its
// thread counts. The
// default is a [MemoryThreadStore] of its own, of [DefaultThreadStoreCapacity]
// keys. Limiters may share a store: a limiter nested in another recognises
// the store (by ==) and does not count the same calls twice.
func WithThreadStore(s ThreadStore) LimitOption {
	if s == nil {
		panic("guard: WithThreadStore(nil)")
	}
	return limitOption(func(c *limitConfig) { c.store = s })
}

// transcript returns what c reads of req's messages for the limits
// ([TranscriptReader]); nil when c reads none.
func transcript[Req, Resp any](ctx context.Context, c Codec[Req, Resp], req Req) []Message {
	if tr, ok := any(c).(TranscriptReader[Req]); ok {
		return tr.Transcript(ctx, req)
	}
	return nil
}
