package agent

import (
	"context"
	"fmt"
	"slices"

	"github.com/toolguard/toolguard/errfmt"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/toolstage"
)

// abandonedAnswer is what the model reads of a call that awaited a
// person's decision when its run was abandoned.
const abandonedAnswer = "This call was waiting for a person's approval when the run was abandoned, so it did not run."

// Pending returns the [*Interrupt] the thread named in ctx
// ([guard.WithThread]) awaits decisions on, read back from the
// agent's [Checkpointer]: the interrupt Run or Resume returned when the
// run paused, or would have returned had the caller seen it (the store
// applied the save and its reply was lost, the process died right after
// it). Decide on its pending calls and pass it to [Agent.Resume] as any
// interrupt; it is signed with [WithInterruptKey]'s key, if any, and
// carries no state (the store keeps it).
//
// It returns an error wrapping [ErrRunUnfinished] when the thread's run
// was cut off without awaiting decisions (continue it with Resume and a
// nil interrupt, or end it with [Agent.Abandon]), one wrapping
// [ErrNothingToResume] when the thread has no unfinished run, or when the
// agent has no Checkpointer or ctx no thread, and the store's error when
// the state cannot be read. Pending changes nothing.
func (a *Agent) Pending(ctx context.Context) (*toolstage.Interrupt, error) {
	s, st, err := a.loadThread(ownThread(ctx), "Pending")
	if err != nil {
		return nil, err
	}
	if st.Turn == nil || st.Turn.Interrupt == "" || st.Turn.Paused == nil {
		return nil, fmt.Errorf("%w (thread %q): it awaits no decision; continue it with Resume and a nil interrupt", ErrRunUnfinished, s.thread)
	}
	return withoutState(st.Turn.Paused), nil
}

// Abandon ends the unfinished run of the thread named in ctx without
// running anything more, and returns what the run did as a *[Result]: a
// thread whose run awaits decisions no one will make, or was cut off and
// should not go on, is reset to a finished conversation, which the next
// Run continues.
//
// Nothing is forgotten and the model is told no untruth: the turn the run
// stopped in is recorded whole in the thread's transcript (and in
// Result.Messages and Steps), each call with its outcome as far as it is
// known. A call that finished keeps its result. A call that awaited a
// person's decision, or never started, did not run ([toolstage.ErrCallNotStarted]);
// the model reads so. A call that was running when the run was cut off,
// or that a Resume had claimed to run, has an unknown outcome
// ([ErrCallInterrupted]): the model reads that it must check before
// calling it again. A pending [Interrupt] can no longer be resumed
// ([ErrInterruptRefused]); a run still going on elsewhere on the thread
// stops at its next save ([ErrCheckpointConflict]).
//
// It returns an error wrapping [ErrNothingToResume] when the thread has no
// unfinished run, or when the agent has no Checkpointer or ctx no thread;
// [ErrCheckpointConflict] when another run or resume saved the thread
// meanwhile (nothing changed: call it again); the store's error when the
// state cannot be read or saved. A state the agent cannot decode is left
// alone: delete it in the store.
func (a *Agent) Abandon(ctx context.Context) (*Result, error) {
	s, st, err := a.loadThread(ownThread(ctx), "Abandon")
	if err != nil {
		return nil, err
	}
	res := &Result{Messages: slices.Clone(st.Messages)}
	if st.Turn != nil {
		a.abandonTurn(res, st.Turn)
	}
	if err := s.save(ctx, runState{Messages: res.Messages}); err != nil {
		return nil, err
	}
	return res, nil
}

// loadThread loads the state of the thread named in ctx, for who (Pending,
// Abandon): an error unless it has an unfinished run.
func (a *Agent) loadThread(ctx context.Context, who string) (*session, *runState, error) {
	thread := guard.ThreadFrom(ctx)
	if a.checkpoints == nil || thread == "" {
		return nil, nil, fmt.Errorf("%w: %s needs an agent with a Checkpointer and a thread in the context", ErrNothingToResume, who)
	}
	s := &session{cp: a.checkpoints.cp, thread: thread}
	st, err := s.load(ctx)
	if err != nil {
		return nil, nil, err
	}
	if st == nil || !st.Running {
		return nil, nil, fmt.Errorf("%w (thread %q)", ErrNothingToResume, thread)
	}
	return s, st, nil
}

// abandonTurn records ot, the turn an abandoned run stopped in, in res,
// each call with its outcome as far as it is known (see Abandon). A
// record of the state that names no call of the turn is ignored: the call
// it would have named has an unknown outcome.
func (a *Agent) abandonTurn(res *Result, ot *openTurn) {
	n := ot.Number
	b := batch{steps: make([]Step, len(ot.Calls)), answers: make([]string, len(ot.Calls)), direct: -1}
	have := make([]bool, len(ot.Calls))
	for _, d := range ot.Finished {
		if d.Index >= 0 && d.Index < len(ot.Calls) && !have[d.Index] {
			have[d.Index] = true
			b.steps[d.Index], b.answers[d.Index] = d.step(n), d.Answer
		}
	}
	pending := make(map[int]bool)
	if ot.Interrupt != "" {
		for _, i := range ot.Waiting {
			pending[i] = true
		}
	}
	for i, c := range ot.Calls {
		switch {
		case have[i]:
		case c.FunctionCall == nil:
			b.steps[i] = unranStep(c, n, errNoFunction)
		case pending[i]:
			b.steps[i], b.answers[i] = unranStep(c, n, toolstage.ErrCallNotStarted), abandonedAnswer
		case a.output.isAnswer(c):
			b.steps[i], b.answers[i] = unranStep(c, n, toolstage.ErrCallNotStarted), errfmt.CallNotStarted
		case !a.hasTool(c.FunctionCall.Name):
			b.steps[i] = unranStep(c, n, fmt.Errorf("%w %q", toolstage.ErrUnknownTool, c.FunctionCall.Name))
			b.answers[i] = errfmt.UnknownTool(c.FunctionCall.Name, a.toolNames())
		default:
			b.steps[i], b.answers[i] = unranStep(c, n, toolstage.ErrCallInterrupted), errfmt.CallInterrupted
		}
	}
	recordTurn(res, ot.Text, ot.Calls, b)
}

// hasTool reports whether the agent's stage has a tool sent as name.
func (a *Agent) hasTool(name string) bool {
	_, ok := a.stage.Tool(name)
	return ok
}

// toolNames returns the names of the stage's tools, sorted, for the
// unknown-tool message.
func (a *Agent) toolNames() []string {
	defs := a.stage.Definitions()
	names := make([]string, len(defs))
	for i, d := range defs {
		names[i] = d.Name
	}
	slices.Sort(names)
	return names
}
