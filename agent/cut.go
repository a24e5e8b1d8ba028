package agent

import (
	"context"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/errfmt"
	"github.com/toolguard/toolguard/toolstage"
)

// cutTurn records turn t, whose batch ended the run with err: the batch
// was cut short (t.batch.cut says how far each call got), and returns err.
//
// A run whose context ended is cut off, to be continued by
// [Agent.Resume]: Result.Messages ends before the turn and Result.Steps
// gets the calls that finished; the stages are given (cutOff) the turn,
// open, with every call that finished (its result) or never started (it
// did not run), and Resume leaves the calls that were running, whose
// outcome is unknown ([ErrCallInterrupted]), and those a stage settles
// after the batch (an answer), to the resumed turn.
//
// A run that ErrStopRun or a panic ended is over: the turn is closed in
// Result.Messages and Steps, every call with its outcome — its result, a
// panic's or a cut-off call's unknown outcome, or, for a call that never
// started, that it did not run — so that the next run on the thread (or
// the caller's next RunMessages) shows the model what ran.
func (r *run) cutTurn(ctx context.Context, t *turn, err error) error {
	a, b := r.a, t.batch
	calls := a.withoutForged(t.calls) // the calls that never started still hold them
	if ctx.Err() != nil {
		ot := &openTurn{Number: t.number, Text: t.text, Calls: calls}
		for i, c := range calls {
			if c.FunctionCall == nil || t.plan(i) == callLater {
				continue // settled when the turn is (Resume)
			}
			switch b.cut[i] {
			case callFinished:
				r.res.Steps = append(r.res.Steps, b.steps[i])
				if _, ok := a.stage.Tool(c.FunctionCall.Name); ok { // an unknown tool's call is answered again on Resume
					ot.Finished = append(ot.Finished, a.doneCall(i, b.steps[i], b.answers[i], b.direct == i))
				}
			case callNotStarted:
				ot.Finished = append(ot.Finished, a.doneCall(i, unranStep(c, t.number, toolstage.ErrCallNotStarted), errfmt.CallNotStarted, false))
			}
		}
		r.cutOff(runState{Messages: r.res.Messages, Running: true, Turns: t.number - 1, Turn: ot})
		return err
	}
	for i, c := range calls {
		switch b.cut[i] {
		case callCutOff:
			b.steps[i], b.answers[i] = unranStep(c, t.number, toolstage.ErrCallInterrupted), errfmt.CallInterrupted
		case callNotStarted:
			b.steps[i], b.answers[i] = unranStep(c, t.number, toolstage.ErrCallNotStarted), errfmt.CallNotStarted
		}
	}
	b.direct = -1 // the run ended with err, not with a Direct result
	recordTurn(r.res, t.text, calls, b)
	return err
}

// unranStep returns the Step of call c of turn whose outcome is err, the
// tool stage having no more to say of it: it never started
// (ErrCallNotStarted), or its outcome is unknown (ErrCallInterrupted).
func unranStep(c llms.ToolCall, turn int, err error) Step {
	s := Step{CallID: c.ID, Turn: turn, Message: -1, Err: err}
	if c.FunctionCall != nil {
		s.Tool, s.Arguments, s.ModelArguments = c.FunctionCall.Name, c.FunctionCall.Arguments, c.FunctionCall.Arguments
	} else {
		s.Err = errNoFunction
	}
	return s
}
