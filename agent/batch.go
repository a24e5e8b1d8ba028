package agent

import (
	"context"
	"errors"
	"slices"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/toolstage"
)

// errNoFunction is the Step.Err of a tool call that came without a function.
var errNoFunction = errors.New("agent: the tool call has no function name")

// batch is what the tool stage made of one model turn's calls, in call
// order.
type batch struct {
	steps   []Step
	answers []string // the tool messages' contents
	direct  int      // index of the first Direct result; -1 if none
	// cut is nil for a batch whose calls all finished; for a batch cut
	// short (the run ended inside it: ErrStopRun, a tool's panic, its
	// context), how far each call got. steps and answers hold the
	// outcome of the calls that finished.
	cut []progress
	// paused is the tool stage's interrupt when calls of the batch wait
	// for a person; waiting are their places in the turn.
	paused  *toolstage.Interrupt
	waiting []int
}

// progress is how far a call of a batch cut short got.
type progress uint8

const (
	callFinished   progress = iota // it finished: its step holds its outcome
	callCutOff                     // it started and had not finished: its outcome is unknown
	callNotStarted                 // it never started
)

// runTools runs the calls of t that the stages left in its batch through
// the agent's tool stage ([toolstage.Stage.Run]) and writes their steps
// and tool-message contents into t.batch, by place; calls that wait for a
// person are left in t.batch.paused. A call without a function is
// answered without it; a call a stage took out (later) or whose outcome
// is known does not run.
//
// It returns the stage's error: ctx's when ctx ended inside the batch,
// that of a call that wraps ErrStopRun or whose stage panicked. The batch
// is then cut short: it holds the outcome of every call that finished and
// says which calls were cut off and which never started.
func (r *run) runTools(ctx context.Context, t *turn) error {
	calls, b := t.calls, t.outcomes()
	sent := make([]guard.Call, 0, len(calls))
	at := make([]int, 0, len(calls)) // each sent call's place in the turn
	for i, c := range calls {
		if p := t.plan(i); p == callKnown || p == callLater {
			continue
		}
		if c.FunctionCall == nil {
			b.steps[i] = Step{CallID: c.ID, Turn: t.number, Message: -1, Err: errNoFunction}
			continue
		}
		sent = append(sent, guard.Call{ID: c.ID, Name: c.FunctionCall.Name, Args: []byte(c.FunctionCall.Arguments)})
		at = append(at, i)
	}
	if len(sent) == 0 {
		r.reportUnclaimed(ctx)
		return nil
	}
	// The tools read the transcript so far (TranscriptFrom): the batch's
	// calls share one copy.
	ctx = context.WithValue(ctx, transcriptKey{}, slices.Clone(r.res.Messages))
	out, err := r.a.stage.Run(ctx, sent)
	if out == nil {
		out = &toolstage.Batch{}
	}
	have := t.take(out.Outcomes, at, false, err)
	if err != nil {
		return err
	}
	if out.Interrupt != nil {
		b.paused = out.Interrupt
		for k, ok := range have {
			if !ok {
				b.waiting = append(b.waiting, at[k])
				t.wait(at[k])
			}
		}
	}
	return nil
}

// take writes outcomes, the tool stage's for the calls of t at places at
// (the place in the turn of the stage's call Index), into t.batch, and
// returns which of the stage's calls had one. edits: the outcome's call
// may hold a person's edit, which the transcript records, where its step
// keeps the model's arguments. When err (the stage's) ended the batch,
// the batch says which calls were cut off and which never started.
func (t *turn) take(outcomes []toolstage.Outcome, at []int, edits bool, err error) []bool {
	b := t.outcomes()
	have := make([]bool, len(at))
	if err != nil {
		b.cut = make([]progress, len(t.calls))
	}
	for _, o := range outcomes {
		if o.Index < 0 || o.Index >= len(at) {
			continue
		}
		i := at[o.Index]
		if t.plan(i) == callKnown {
			continue // restored from the turn's own record
		}
		have[o.Index] = true
		model := t.calls[i].FunctionCall.Arguments
		t.record(i, o)
		s := stepOf(o, t.number)
		if edits {
			s.ModelArguments = model
		}
		b.steps[i], b.answers[i] = s, o.Content
		if err != nil {
			switch {
			case errors.Is(o.Err, toolstage.ErrCallNotStarted):
				b.cut[i] = callNotStarted
			case errors.Is(o.Err, toolstage.ErrCallInterrupted):
				b.cut[i] = callCutOff
			}
		}
		if o.Direct && o.Err == nil && (b.direct < 0 || i < b.direct) {
			b.direct = i
		}
	}
	return have
}

// reportUnclaimed reports the values the model stage dropped for injected
// arguments of calls that never reach the tool stage ([toolstage.Stage.Run]
// with no calls).
func (r *run) reportUnclaimed(ctx context.Context) {
	_, _ = r.a.stage.Run(ctx, nil)
}

// record writes into the turn's call i what the tool stage made of it: the
// arguments the transcript records (the model's, less values it sent for
// injected arguments; a person's edit).
func (t *turn) record(i int, o toolstage.Outcome) {
	c := t.calls[i]
	if c.FunctionCall == nil || c.FunctionCall.Arguments == string(o.Call.Args) {
		return
	}
	fc := *c.FunctionCall
	fc.Arguments = string(o.Call.Args)
	t.calls[i].FunctionCall = &fc
}

// stepOf returns the Step of outcome o of a call of turn.
func stepOf(o toolstage.Outcome, turn int) Step {
	s := Step{CallID: o.Call.ID, Tool: o.Call.Name, ModelArguments: string(o.Call.Args), Arguments: string(o.Call.Args),
		Artifact: o.Artifact, Turn: turn, Message: -1, Err: o.Err}
	if o.Args != nil {
		s.Arguments = string(o.Args)
	}
	if o.Err == nil {
		s.Result = o.Content
	}
	return s
}

// transcriptKey is the context key of the run's transcript, for the tools
// of a batch (TranscriptFrom).
type transcriptKey struct{}

// TranscriptFrom returns the transcript of the agent's run before the
// model turn whose call ctx is running (LangGraph's ToolRuntime state):
// inside a tool's Call or a tool middleware of an agent's run; false
// elsewhere. The slice is a copy shared by the calls of one batch, whose
// elements must not be modified.
func TranscriptFrom(ctx context.Context) ([]llms.MessageContent, bool) {
	m, ok := ctx.Value(transcriptKey{}).([]llms.MessageContent)
	return m, ok
}
