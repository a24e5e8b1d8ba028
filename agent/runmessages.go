package agent

import (
	"context"
	"errors"
	"slices"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/toolstage"
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
	callOpts := a.callOpts
	if len(opts) > 0 {
		callOpts = slices.Concat(a.callOpts[:len(a.callOpts)-a.toolOpts()], nonNil(opts), a.callOpts[len(a.callOpts)-a.toolOpts():])
	}
	ctx, r := a.newRun(ownThread(ctx), callOpts)
	r.res.Messages = make([]llms.MessageContent, 0, len(msgs)+4)
	// A stage may put messages first (a thread's saved conversation).
	if err := r.start(ctx); err != nil {
		return nil, err
	}
	if a.system != "" && len(r.res.Messages) == 0 && msgs[0].Role != llms.ChatMessageTypeSystem {
		r.res.Messages = append(r.res.Messages, llms.TextParts(llms.ChatMessageTypeSystem, a.system))
	}
	r.res.Messages = append(r.res.Messages, msgs...)
	return r.loop(ctx)
}

// newRun returns ctx set up for a run (RunMessages, Resume) — a run scope,
// the tools' schemas, the record of checked calls, the event handler, the
// run's model-call counter — and the run, whose model calls get opts.
func (a *Agent) newRun(ctx context.Context, opts []llms.CallOption) (context.Context, *run) {
	ctx = guard.WithRun(ctx)
	// The tools' schemas and injected arguments, the record of checked
	// calls and the stage's event handler (toolstage.Stage.Scope): both
	// stages' events reach it, else the context's handler; a sub-agent run
	// from a tool of another agent reports to its own, not its caller's.
	ctx = a.stage.Scope(ctx)
	ctx = a.withOutput(ctx) // structured output (output.go)
	r := &run{a: a, res: &Result{}, opts: opts, record: guard.CallRecordFrom(ctx)}
	ctx = context.WithValue(ctx, modelCallsKey{}, &r.modelCalls)
	return ctx, r
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
	info, ok := toolstage.CallFrom(ctx)
	if !ok || info.Thread == "" || guard.ThreadFrom(ctx) != info.Thread {
		return ctx
	}
	return guard.WithThread(ctx, "")
}
