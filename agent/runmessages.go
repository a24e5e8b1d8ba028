package agent

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/guard"
)

// ErrNoMessages is returned by [Agent.RunMessages] when it is given no
// message to answer.
var ErrNoMessages = errors.New("agent: RunMessages: no messages to answer")

// RunMessages continues a conversation: it answers msgs — the history so
// far, such as the Messages of an earlier [Result], followed by the new
// human message — as [Agent.Run] answers its input, and returns a Result
// whose Messages are msgs followed by this run's turns, the history to pass
// to the next RunMessages. msgs itself is not modified. The system prompt
// ([WithSystemPrompt]) is put first unless msgs already starts with a
// system message.
//
// opts are call options for this run only, applied after [WithCallOptions]
// (so they win) and before the agent's tools: for instance a
// llms.WithStreamingFunc that streams this run's model calls to one
// client.
//
// Each RunMessages is a run of its own ([guard.WithRun]); name a thread
// with [guard.WithThread] in ctx so that ToolCallLimit's thread limit
// spans the conversation. It returns [ErrNoMessages] (and a nil Result) when
// msgs is empty.
//
// A run started from inside a tool call of another run — a sub-agent used
// as a tool, given the tool's ctx — runs in its own thread scope: the
// calling run's thread is not its thread, so it runs without one (its
// limiters count the thread from its own transcript, and a [Checkpointer]
// does not save it: the calling run's checkpoint records the tool call,
// whose result is the sub-agent's answer), unless the tool names a thread
// of its own with [guard.WithThread]. The same holds for
// [Agent.Resume], [Agent.Pending] and [Agent.Abandon] called there.
func (a *Agent) RunMessages(ctx context.Context, msgs []llms.MessageContent, opts ...llms.CallOption) (*Result, error) {
	if len(msgs) == 0 {
		return nil, ErrNoMessages
	}
	ctx, calls := a.runContext(ownThread(ctx))
	// Hook (checkpoint.go): a thread's saved conversation comes first.
	s, saved, err := a.openSession(ctx)
	if err != nil {
		return nil, err
	}
	res := &Result{Messages: make([]llms.MessageContent, 0, len(saved)+len(msgs)+4)}
	res.Messages = append(res.Messages, saved...)
	if a.system != "" && len(saved) == 0 && msgs[0].Role != llms.ChatMessageTypeSystem {
		res.Messages = append(res.Messages, llms.TextParts(llms.ChatMessageTypeSystem, a.system))
	}
	res.Messages = append(res.Messages, msgs...)
	callOpts := a.callOpts
	if len(opts) > 0 {
		callOpts = slices.Concat(a.callOpts[:len(a.callOpts)-a.toolOpts()], nonNil(opts), a.callOpts[len(a.callOpts)-a.toolOpts():])
	}
	err = a.loop(ctx, res, callOpts, s)
	res.ModelCalls = int(calls.Load())
	return res, err
}

// runContext returns ctx set up for a run (RunMessages, Resume): a run
// scope, the tools' schemas, the ledger of checked calls, the event
// handler, and the run's model-call counter.
func (a *Agent) runContext(ctx context.Context) (context.Context, *atomic.Int64) {
	ctx = guard.WithRun(ctx)
	ctx = guard.WithToolSchemas(ctx, a.schemas)
	ctx = a.withOutput(ctx) // structured output (output.go)
	// Injected arguments (inject.go). Always set, nil included: a
	// sub-agent's tools are not its caller's.
	ctx = guard.WithInjectedArgs(ctx, a.injected)
	ctx, ledger := guard.WithCallRecord(ctx)
	ctx = context.WithValue(ctx, ledgerKey{}, ledger)
	// Both stages' events reach the agent's handler, else the context's;
	// a sub-agent run from a tool of another agent reports to its own
	// handler, not its caller's.
	if _, inTool := CallFrom(ctx); a.events != nil || inTool {
		ctx = guard.WithEvents(ctx, a.events)
	}
	calls := new(atomic.Int64)
	ctx = context.WithValue(ctx, modelCallsKey{}, calls)
	return ctx, calls
}

// toolOpts is the number of options at the end of a.callOpts that offer the
// tools: 1 with tools, 0 without.
func (a *Agent) toolOpts() int {
	if len(a.defs) > 0 {
		return 1
	}
	return 0
}

func nonNil(opts []llms.CallOption) []llms.CallOption {
	out := make([]llms.CallOption, 0, len(opts))
	for _, o := range opts {
		if o != nil {
			out = append(out, o)
		}
	}
	return out
}

// ownThread returns ctx for a run, Resume, Pending or Abandon of an agent
// called from inside a tool call of another run (a sub-agent used as a
// tool): the calling run's thread is not the sub-agent's, so ctx names no
// thread unless the tool named one of its own. Elsewhere it returns ctx.
func ownThread(ctx context.Context) context.Context {
	st := callStateFrom(ctx)
	if st == nil || st.info.Thread == "" || guard.ThreadFrom(ctx) != st.info.Thread {
		return ctx
	}
	return guard.WithThread(ctx, "")
}
