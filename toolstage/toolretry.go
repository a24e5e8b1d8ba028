package toolstage

import (
	"context"
	"errors"
	"fmt"

	"github.com/cenkalti/backoff/v4"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/retry"
	"github.com/toolguard/toolguard/validation"
)

// ErrNotRun is what a tool wraps in its error when it failed before doing
// anything: it could not reach its server, the server refused the request
// before acting on it (a 429, a 503 with no work done), a precondition
// failed. [ToolRetry] may run such a call again whatever the tool, since no
// effect of the failed attempt can be repeated:
//
//	return "", fmt.Errorf("%w: payments API: %w", toolstage.ErrNotRun, err)
var ErrNotRun = errors.New("toolstage: the tool did not run")

// Idempotent returns t marked as idempotent: running it twice with the same
// arguments has the same effect as running it once (a read, a lookup, a PUT
// of a whole value, a payment carrying an idempotency key). [ToolRetry]
// retries an idempotent tool's transient failures, timeouts included; a
// tool not so marked is retried only when its error wraps [ErrNotRun].
//
// The result is t in every other way (name, description, schema, the
// one-check path of [NewTool] and [NewSchemaTool] tools, and for a stage a
// [ResultTool]'s CallResult, though the result does not assert to
// ResultTool itself). The mark is seen
// through [Renamed] and the stage's own renaming ([WithToolNames]); a tool
// middleware that replaces ToolCall.Tool with a wrapper of its own hides it
// unless it wraps the result in Idempotent again. Idempotent of a tool
// already marked returns it unchanged. It panics if t is nil.
func Idempotent(t Tool) Tool {
	if t == nil {
		panic("toolstage: Idempotent(nil): needs a tool")
	}
	if isIdempotent(t) {
		return t
	}
	return &idempotentTool{Tool: t}
}

type idempotentTool struct{ Tool }

func (t *idempotentTool) unwrapTool() Tool { return t.Tool }

func (t *idempotentTool) compiledSchema() *validation.Schema { return compiledSchema(t.Tool) }

func (t *idempotentTool) callChecked(ctx context.Context, args []byte, value map[string]any) (string, error) {
	return callWrapped(ctx, t.Tool, args, value)
}

// toolWrapper is implemented by the stage's own wrappers of a tool
// ([Renamed], [Idempotent]): unwrapTool returns the tool they wrap, so that
// a mark on the inner tool stays visible.
type toolWrapper interface {
	unwrapTool() Tool
}

// findWrapped returns t, or the first tool t wraps through the stage's
// wrappers, that is a T.
func findWrapped[T any](t Tool) (T, bool) {
	for t != nil {
		if x, ok := t.(T); ok {
			return x, true
		}
		w, ok := t.(toolWrapper)
		if !ok {
			break
		}
		t = w.unwrapTool()
	}
	var zero T
	return zero, false
}

// callWrapped runs t, the tool one of the stage's wrappers wraps, with
// arguments the tool stage checked: through its unchecked path when it has
// one.
func callWrapped(ctx context.Context, t Tool, args []byte, value map[string]any) (string, error) {
	if u, ok := t.(uncheckedCaller); ok {
		return u.callChecked(ctx, args, value)
	}
	return t.Call(ctx, string(args))
}

// isIdempotent reports whether t, or a tool it wraps through the stage's
// wrappers, was marked with [Idempotent].
func isIdempotent(t Tool) bool {
	_, ok := findWrapped[*idempotentTool](t)
	return ok
}

// OutcomeUnknownError is the error of a call that [ToolRetry] did not
// repeat because its tool is not idempotent and failed in a way that
// leaves its outcome unknown (a timeout, a connection lost after the
// request went out): it may have taken effect. The model reads that the
// outcome is unknown and must be checked before any repeat; Err is the
// tool's error, for the program.
type OutcomeUnknownError struct {
	Tool string // the tool's name as sent to the model
	Err  error  // the tool's error
}

// Error names the tool and its failure and tells the model to check whether
// the call took effect before calling it again.
func (e *OutcomeUnknownError) Error() string {
	return fmt.Sprintf("toolstage: tool %q failed and its outcome is unknown (%v): it may have taken effect. "+
		"It was not run again; check whether it took effect before calling it again", e.Tool, e.Err)
}

// Unwrap returns Err, the tool's error.
func (e *OutcomeUnknownError) Unwrap() error { return e.Err }

// ToolRetryOption configures [ToolRetry].
type ToolRetryOption func(*toolRetryConfig)

type toolRetryConfig struct {
	tools      map[string]bool // nil: every tool
	maxRetries int
	newBackOff func() backoff.BackOff
	retryIf    func(error) bool
}

// WithRetryTools limits [ToolRetry] to the tools named (as sent to the model);
// calls of other tools pass through it untouched. The default is every
// tool. Several WithRetryTools add up. It panics when given no name or an
// empty one.
func WithRetryTools(names ...string) ToolRetryOption {
	if len(names) == 0 {
		panic("toolstage: WithRetryTools(): name at least one tool")
	}
	for _, n := range names {
		if n == "" {
			panic("toolstage: WithRetryTools: a tool name is empty")
		}
	}
	return func(c *toolRetryConfig) {
		if c.tools == nil {
			c.tools = make(map[string]bool, len(names))
		}
		for _, n := range names {
			c.tools[n] = true
		}
	}
}

// WithMaxRetries sets how many times [ToolRetry] runs a failed call again
// (default 2, so at most 3 attempts; 0 never retries but still reports
// an unknown outcome). It panics if n is negative.
func WithMaxRetries(n int) ToolRetryOption {
	if n < 0 {
		panic(fmt.Sprintf("toolstage: WithMaxRetries(%d): the number of retries must not be negative", n))
	}
	return func(c *toolRetryConfig) { c.maxRetries = n }
}

// WithBackOff sets the policy for the waits between [ToolRetry]'s
// attempts, as [guard.WithBackOff] does for ModelRetry: newBackOff is
// called once per call that fails (a backoff.BackOff is stateful), Reset,
// and asked for each wait; backoff.Stop means give up. The default is
// [retry.DefaultBackOff] (1s, 2s, 4s, … capped at 60s, ±25% jitter). Tests
// pass func() backoff.BackOff { return &backoff.ZeroBackOff{} } to retry
// without waiting. It panics if newBackOff is nil or returns nil.
func WithBackOff(newBackOff func() backoff.BackOff) ToolRetryOption {
	if newBackOff == nil {
		panic("toolstage: WithBackOff(nil): the backoff factory must not be nil")
	}
	if newBackOff() == nil {
		panic("toolstage: WithBackOff: the backoff factory returned a nil backoff.BackOff")
	}
	return func(c *toolRetryConfig) { c.newBackOff = newBackOff }
}

// WithRetryIf sets the retry rule of [ToolRetry]: which failures are transient,
// those a repeat may fix. The default, [IsTransientToolError], takes an
// error wrapping [ErrNotRun] and those [retry.IsRetryable] accepts
// (timeouts, broken connections, rate limits, 5xx). The rule says what is
// worth repeating, never what is safe: a transient failure is repeated
// only when its error wraps ErrNotRun or the tool is [Idempotent], and is
// reported as an unknown outcome otherwise. fn must be safe for concurrent
// use; nil panics.
func WithRetryIf(fn func(err error) bool) ToolRetryOption {
	if fn == nil {
		panic("toolstage: WithRetryIf(nil): the rule must not be nil")
	}
	return func(c *toolRetryConfig) { c.retryIf = fn }
}

// IsTransientToolError is [ToolRetry]'s default rule: err wraps [ErrNotRun],
// or [retry.IsRetryable] accepts it. A *[retry.Error] (a retry loop gave up
// on it already) and an *[OutcomeUnknownError] (a retry loop refused to
// repeat it) are not transient, so nested retries neither multiply nor
// report one unknown outcome twice.
func IsTransientToolError(err error) bool {
	var re *retry.Error
	var unknown *OutcomeUnknownError
	if errors.As(err, &re) || errors.As(err, &unknown) {
		return false
	}
	return errors.Is(err, ErrNotRun) || retry.IsRetryable(err)
}

// toolRetryName is the Middleware of ToolRetry's events.
const toolRetryName = "ToolRetry"

// ToolRetry returns a tool middleware that runs a failed tool call again,
// with ModelRetry's policy, but only when a repeat is safe.
//
// A call is repeated when the rule ([WithRetryIf]) says its failure is
// transient and either its error wraps [ErrNotRun] (any tool: nothing
// happened) or its tool is [Idempotent] (a repeat does no harm). It makes
// at most 1 + [WithMaxRetries] (default 2) attempts, waiting between them as the
// backoff policy says ([WithBackOff]; default 1s, 2s, … capped at 60s,
// ±25% jitter, raised to a server's retry hint in the error). It gives up
// when the wait would end after the context's deadline; a cancelled
// context ends a wait at once. Each attempt after the first runs with
// [CallFrom](ctx).Attempt set to its number; [guard.EventToolRetry]
// is reported before each wait ([ReportEvent]).
//
// A tool that is not idempotent and fails transiently without ErrNotRun
// (a timeout, a connection lost after the request went out) is never run
// again: its outcome is unknown, so the call fails with an
// *[OutcomeUnknownError], whose text tells the model to check whether the
// call took effect before repeating it, and
// [guard.EventToolOutcomeUnknown] is reported. (LangChain's
// ToolRetryMiddleware repeats it: one payment asked for, three made.)
//
// When it gives up on a call it retried it returns a *[retry.Error]
// (attempts made; Unwrap gives the last error), which no other retry
// loop retries again; a failure that is not transient, and an error
// wrapping [ErrStopRun], are returned as they are, after one attempt.
//
// Everything inside it in the [WithToolMiddleware] chain runs once per
// attempt, the check of the arguments included. Place it innermost unless
// a middleware inside must see each attempt. It is safe for concurrent
// use.
func ToolRetry(opts ...ToolRetryOption) ToolMiddleware {
	cfg := toolRetryConfig{
		maxRetries: 2,
		newBackOff: retry.DefaultBackOff,
		retryIf:    IsTransientToolError,
	}
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	return &toolRetry{cfg: cfg}
}

type toolRetry struct {
	cfg toolRetryConfig
}

func (r *toolRetry) WrapToolCall(next ToolHandler) ToolHandler {
	return func(ctx context.Context, call *ToolCall) (*ToolResult, error) {
		if call == nil || (r.cfg.tools != nil && !r.cfg.tools[call.Name]) {
			return next(ctx, call)
		}
		first := 1
		if info, ok := CallFrom(ctx); ok && info.Attempt > 0 {
			first = info.Attempt
		}
		var policy backoff.BackOff // made on the first failure to retry
		for attempt := first; ; attempt++ {
			attemptCtx := ctx
			if attempt != first {
				attemptCtx = withAttempt(ctx, attempt)
			}
			res, err := next(attemptCtx, call)
			if err == nil || ctx.Err() != nil || errors.Is(err, ErrStopRun) || !r.cfg.retryIf(err) {
				return res, err
			}
			made := attempt - first + 1
			if !errors.Is(err, ErrNotRun) && !r.idempotent(ctx, call) {
				ReportEvent(attemptCtx, guard.Event{Kind: guard.EventToolOutcomeUnknown, Middleware: toolRetryName, Attempt: attempt, Err: err})
				return nil, &OutcomeUnknownError{Tool: call.Name, Err: err}
			}
			if made > r.cfg.maxRetries {
				return nil, &retry.Error{Attempts: made, Err: err}
			}
			if policy == nil {
				policy = r.cfg.newBackOff()
				policy.Reset()
			}
			wait, ok := retry.NextWaitBy(ctx, policy, err)
			if !ok {
				return nil, &retry.Error{Attempts: made, Err: err}
			}
			ReportEvent(attemptCtx, guard.Event{Kind: guard.EventToolRetry, Middleware: toolRetryName, Attempt: attempt, Err: err, Wait: wait})
			if serr := retry.Sleep(ctx, wait); serr != nil {
				return nil, &retry.Error{Attempts: made, Err: err, ContextErr: contextErr(ctx, serr)}
			}
		}
	}
}

// idempotent reports whether the call's tool is marked [Idempotent]: the
// tool the call carries, or the stage's tool of that name when it carries
// none.
func (r *toolRetry) idempotent(ctx context.Context, call *ToolCall) bool {
	if call.Tool != nil {
		return isIdempotent(call.Tool)
	}
	if st := callStateFrom(ctx); st != nil {
		return isIdempotent(st.tool)
	}
	return false
}

// contextErr returns ctx's error, or fallback when ctx has none.
func contextErr(ctx context.Context, fallback error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return fallback
}
