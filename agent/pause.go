package agent

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/toolstage"
)

// pause ends the run whose turn t has calls waiting for a person
// (t.batch.paused, the tool stage's interrupt) once the state to resume
// from is kept: by a stage that keeps state (the thread's checkpoint,
// which holds the interrupt whole), else in the interrupt itself
// ([toolstage.Stage.Attach]). It returns the interrupt the caller gets: a
// checkpointed one without the states the store keeps.
func (r *run) pause(ctx context.Context, t *turn) error {
	a, b := r.a, &t.batch
	in := b.paused
	ot := &openTurn{Number: t.number, Text: t.text, Calls: a.withoutForged(t.calls), Interrupt: in.ID, Waiting: b.waiting}
	for i := range t.calls {
		if t.plan(i) == callRuns {
			// Injected values never travel in an interrupt (nor rest in a
			// checkpoint): the resumed Step.Arguments of such a call lack them.
			ot.Finished = append(ot.Finished, a.doneCall(i, b.steps[i], b.answers[i], b.direct == i))
		}
	}
	st := runState{Format: stateFormat, Messages: r.res.Messages, Running: true, Turns: t.number - 1, Turn: ot}
	kept := *ot
	kept.Paused = in
	stored := st
	stored.Turn = &kept
	shown := withoutState(in)
	ok, err := r.keep(ctx, stored, shown)
	if err != nil {
		return err
	}
	if ok {
		return shown
	}
	data, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("agent: encode interrupt state: %w", err)
	}
	a.stage.Attach(in, data)
	return in
}

// withoutState returns a copy of in without the states a checkpoint keeps
// (the stage's and the agent's): what a caller of a checkpointed run gets.
// Its signature still binds them: Resume verifies it against the stored
// interrupt.
func withoutState(in *toolstage.Interrupt) *toolstage.Interrupt {
	c := *in
	c.State, c.Host = nil, nil
	return &c
}

// withoutForged returns calls with the values the model sent for injected
// arguments dropped, for a checkpoint saved before the calls run, or a
// turn cut off: copies where it drops any; calls itself is not modified,
// and nothing is reported (the tool stage does both).
func (a *Agent) withoutForged(calls []llms.ToolCall) []llms.ToolCall {
	var out []llms.ToolCall
	for i, c := range calls {
		if c.FunctionCall == nil {
			continue
		}
		args := string(a.stage.WithoutInjected(guard.Call{ID: c.ID, Name: c.FunctionCall.Name, Args: []byte(c.FunctionCall.Arguments)}).Args)
		if args == c.FunctionCall.Arguments {
			continue
		}
		if out == nil {
			out = make([]llms.ToolCall, len(calls))
			copy(out, calls)
		}
		fn := *c.FunctionCall
		fn.Arguments = args
		out[i].FunctionCall = &fn
	}
	if out == nil {
		return calls
	}
	return out
}
