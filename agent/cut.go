package agent

import (
	"context"
	"fmt"

	"github.com/tmc/langchaingo/llms"
)

// ToolPanicError is the error of a tool call whose tool stage panicked —
// the tool, a tool middleware or an injector — and of the run it ended
// (errors.As). The panic is recovered on the call's goroutine: the
// process goes on, the run's other running calls finish and are recorded,
// calls not yet started never start, and [Agent.Run] returns this error
// with the partial *[Result]. What the call did before it panicked is
// unknown: the model reads that its outcome is unknown and must be checked
// before it is called again. A panic is never retried ([ToolRetry] does
// not see it). A panic on a goroutine the tool starts itself is beyond
// recovery: it crashes the process, as in any Go program.
type ToolPanicError struct {
	// Tool is the tool's name as sent to the model; CallID the call's id.
	Tool, CallID string
	// Value is what was passed to panic.
	Value any
	// Stack is the panicking goroutine's stack (runtime/debug.Stack).
	Stack []byte
}

func (e *ToolPanicError) Error() string {
	return fmt.Sprintf("agent: tool %q panicked: %v", e.Tool, e.Value)
}

// Unwrap returns Value when it is an error (a runtime.Error, say), else
// nil.
func (e *ToolPanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// ErrCallNotStarted is the Step.Err of a call of a batch the run ended
// inside ([ErrStopRun], a [*ToolPanicError], a cancelled context, an
// abandoned run) before the call started: it did not run, and the model
// reads so. It wraps [ErrNotRun].
var ErrCallNotStarted = fmt.Errorf("%w: the run ended before the call started", ErrNotRun)

// notStartedAnswer is what the model reads of a call in ErrCallNotStarted.
const notStartedAnswer = "The run stopped before this call started, so it did not run."

// cutTurn records a model turn whose batch ended the run with err, and
// returns err. b covers all of calls, at their indexes; b.cut nil means
// the batch itself finished and the run ended after it (it paused for
// approval, or that pause could not be saved): its steps are recorded as
// they are, and the session settles the rest.
//
// A run whose context ended is cut off, to be continued by
// [Agent.Resume]: Result.Messages ends before the turn and Result.Steps
// gets the calls that finished; the session is given the turn, open, with
// every call that finished (its result) or never started (it did not
// run), and leaves the calls that were running to Resume, which tells the
// model their outcome is unknown ([ErrCallInterrupted]).
//
// A run that ErrStopRun or a panic ended is over: the turn is closed in
// Result.Messages and Steps, every call with its outcome — its result, a
// panic's or a cut-off call's unknown outcome, or, for a call that never
// started, that it did not run — so that the next run on the thread (or
// the caller's next RunMessages) shows the model what ran.
func (a *Agent) cutTurn(ctx context.Context, s *session, res *Result, turn int, text string, calls []llms.ToolCall, b batch, err error) error {
	if b.cut == nil {
		res.Steps = append(res.Steps, b.steps...)
		return err
	}
	calls = a.withoutForged(calls) // the calls that never started still hold them
	if ctx.Err() != nil {
		ot := &openTurn{Number: turn, Text: text, Calls: calls}
		for i, c := range calls {
			if c.FunctionCall == nil || a.isAnswer(c) {
				continue // the answer is settled when the turn is (resumeTurn)
			}
			switch b.cut[i] {
			case callFinished:
				res.Steps = append(res.Steps, b.steps[i])
				if a.tools[c.FunctionCall.Name] != nil { // an unknown tool's call is answered again on Resume
					ot.Finished = append(ot.Finished, a.doneCall(i, b.steps[i], b.answers[i], b.direct == i))
				}
			case callNotStarted:
				ot.Finished = append(ot.Finished, a.doneCall(i, unranStep(c, turn, ErrCallNotStarted), notStartedAnswer, false))
			}
		}
		s.cutOff(runState{Messages: res.Messages, Running: true, Turns: turn - 1, Turn: ot})
		return err
	}
	for i, c := range calls {
		switch b.cut[i] {
		case callCutOff:
			b.steps[i], b.answers[i] = unranStep(c, turn, ErrCallInterrupted), interruptedAnswer
		case callNotStarted:
			b.steps[i], b.answers[i] = unranStep(c, turn, ErrCallNotStarted), notStartedAnswer
		}
	}
	b.direct = -1 // the run ended with err, not with a Direct result
	recordTurn(res, text, calls, b)
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
