package agent

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/errfmt"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/toolstage"
)

// A turnStage is a run-level feature of the agent loop: one that acts on a
// whole run or a whole model turn, where a [ToolMiddleware] acts on one
// tool call (adk-go's request and response processors are the model).
// Checkpoints (checkpoint.go), approval (approval.go) and structured output
// (output.go) are turn stages, each written against this mechanism alone:
// the loop calls none of them by name, and they share nothing with it or
// with each other through the context.
//
// New puts an agent's stages in one ordered list: checkpoints, approval,
// structured output, each only when its options are given. When a run
// starts (RunMessages, Resume), each stage returns its hooks for that run,
// which hold its state for the run (startRun). The loop calls them, in list
// order, at these points of each turn and only there:
//
//	response     a model turn's response arrived, its text and calls
//	             collected once (turn.text, turn.calls). A stage may take
//	             the turn over: record it itself and let the run go on
//	             (turn.settle), or end the run.
//	beforeBatch  the turn's calls are about to run. A stage saves the
//	             turn, takes calls out of the batch (turn.wait: they do not
//	             run in this run; turn.later: the stage settles them after
//	             the batch), and refuses calls that must never run
//	             (turn.refuse: the tool stage checks their arguments, tells
//	             the model what is wrong with them, and never runs the tool).
//	afterBatch   every call left in the batch has its outcome (turn.batch).
//	             A stage settles the calls it took for later and decides
//	             whether the turn ends the run (turn.finish with the
//	             answer, turn.fail), or ends the run before the turn is
//	             recorded (a pause: the steps of the calls that ran are
//	             kept, nothing else). Then the loop records the turn.
//	turnDone     the turn is recorded and the run goes on: a stage saves.
//
// and at these points of the run:
//
//	keep         a stage that pauses the run asks the others to keep the
//	             state it continues from (run.keep; runState is the state's
//	             form, checkpoint.go); one that keeps state does.
//	cutOff       the run's context ended inside a batch: the state to
//	             continue from, the calls that finished and those that never
//	             started recorded.
//	end          the run ends (run.exhausted: at WithMaxIterations): a stage
//	             saves, or wraps the run's error. End hooks run in reverse
//	             list order, as deferred calls do.
//
// A hook that returns an error ends the run with it; the later stages'
// hooks of that point are not called. A hook must not keep the turn it is
// given: the run reuses it for its next turn.
//
// A run that continues a paused or cut off one (Resume) starts from its
// saved state (run.from) and first finishes the turn it stopped in: that
// turn (turn.resumed) was saved and judged before it stopped, so it starts
// at beforeBatch, with the outcomes known so far (turn.known) and the calls
// a person approved pinned to their arguments (turn.pin), and the stages
// that save or judge a new turn leave it alone.
type turnStage interface {
	// startRun returns the stage's hooks for the run r, which starts on
	// ctx. It may put messages before the run's own in r.res (a thread's
	// saved conversation); an error ends the run before it starts.
	startRun(ctx context.Context, r *run) (stageRun, error)
}

// stageRun is one stage in one run: its hooks (see [turnStage]), which
// hold its state for the run. A nil hook is not called.
type stageRun struct {
	response    func(ctx context.Context, t *turn) error
	beforeBatch func(ctx context.Context, t *turn) error
	afterBatch  func(ctx context.Context, t *turn) error
	turnDone    func(ctx context.Context, t *turn) error
	// keep keeps st, the state a paused run continues from; paused is the
	// error the run returns once st is kept (its *Interrupt). It reports
	// whether it kept st.
	keep func(ctx context.Context, st runState, paused error) (bool, error)
	// cutOff is given the state to continue from when the run's context
	// ended inside a batch.
	cutOff func(st runState)
	// end is given the error the run ends with, and returns the run's.
	end func(ctx context.Context, err error) error
}

// run is one run of the loop, as the turn stages see it.
type run struct {
	a    *Agent
	res  *Result
	opts []llms.CallOption // every model call's
	// record is what the model stage tells the tool stage of the calls it
	// checked (guard.WithCallRecord).
	record *guard.CallRecord
	// from is the saved state a continued run starts from (Resume); nil
	// for a new run.
	from *resumeFrom
	// exhausted: the run ended at WithMaxIterations.
	exhausted  bool
	hooks      []stageRun   // the stages', in list order
	modelCalls atomic.Int64 // the calls that reached the model (Result.ModelCalls)
	// cur is the turn under way, reused from turn to turn.
	cur turn
}

// start asks each of the agent's stages for its hooks for r.
func (r *run) start(ctx context.Context) error {
	for _, s := range r.a.stages {
		h, err := s.startRun(ctx, r)
		if err != nil {
			return err
		}
		r.hooks = append(r.hooks, h)
	}
	return nil
}

// at calls, in order, the turn hook each stage has at one point (pick
// returns it), until one returns an error.
func (r *run) at(ctx context.Context, t *turn, pick func(stageRun) func(context.Context, *turn) error) error {
	for _, h := range r.hooks {
		if f := pick(h); f != nil {
			if err := f(ctx, t); err != nil {
				return err
			}
		}
	}
	return nil
}

// The turn hooks of a stageRun, for run.at.
func (h stageRun) atResponse() func(context.Context, *turn) error    { return h.response }
func (h stageRun) atBeforeBatch() func(context.Context, *turn) error { return h.beforeBatch }
func (h stageRun) atAfterBatch() func(context.Context, *turn) error  { return h.afterBatch }
func (h stageRun) atTurnDone() func(context.Context, *turn) error    { return h.turnDone }

// keep asks the stages to keep st, the state the run pauses in; paused is
// the error the run returns. It reports whether one kept it.
func (r *run) keep(ctx context.Context, st runState, paused error) (bool, error) {
	for _, h := range r.hooks {
		if h.keep == nil {
			continue
		}
		if kept, err := h.keep(ctx, st, paused); kept || err != nil {
			return kept, err
		}
	}
	return false, nil
}

// cutOff gives the stages the state a run cut off inside a batch continues
// from.
func (r *run) cutOff(st runState) {
	for _, h := range r.hooks {
		if h.cutOff != nil {
			h.cutOff(st)
		}
	}
}

// end gives the stages, last first, the error the run ends with, and
// returns the run's.
func (r *run) end(ctx context.Context, err error) error {
	for i := len(r.hooks) - 1; i >= 0; i-- {
		if h := r.hooks[i]; h.end != nil {
			err = h.end(ctx, err)
		}
	}
	return err
}

// turn is one model turn of a run, from its response to its record.
type turn struct {
	number int    // from 1, as Step.Turn
	text   string // the response's text
	// resp is the model's response; nil for a turn resumed from a saved
	// state.
	resp *llms.ContentResponse
	// calls are the response's tool calls as the transcript records them
	// (the tool stage drops the values the model sent for injected
	// arguments).
	calls []llms.ToolCall
	// resumed: the turn a continued run stopped in, saved and judged
	// before.
	resumed bool
	// plans are what the stages decided for each call, by its place in
	// calls: a call's id alone is ambiguous (a model may send one id
	// twice). nil: every call runs.
	plans []callPlan
	// batch is each call's outcome, by place in calls.
	batch batch

	// What the turn does to the run, as a stage decided.
	settled bool   // a stage recorded the turn itself: no batch
	ends    bool   // the turn, once recorded, ends the run
	output  string // with this answer, when err is nil
	err     error
}

// callPlan is what the stages decided to do with a call of a turn.
type callPlan uint8

const (
	callRuns  callPlan = iota // it runs in the turn's batch
	callWaits                 // it waits (for a person): it does not run in this run
	callLater                 // a stage settles it after the batch (afterBatch)
	callKnown                 // its outcome is known already, in the batch (a resumed turn)
)

// plan returns what the stages decided for call i.
func (t *turn) plan(i int) callPlan {
	if i >= len(t.plans) {
		return callRuns
	}
	return t.plans[i]
}

func (t *turn) setPlan(i int, p callPlan) {
	if t.plans == nil {
		t.plans = make([]callPlan, len(t.calls))
	}
	t.plans[i] = p
}

// wait takes call i out of the batch: it does not run in this run.
func (t *turn) wait(i int) { t.setPlan(i, callWaits) }

// later takes call i out of the batch: the stage settles it after the
// batch, writing its step and answer into t.batch.
func (t *turn) later(i int) { t.setPlan(i, callLater) }

// known records the outcome of call i, which does not run again: its step,
// the tool message the model reads, and whether its result is Direct.
func (t *turn) known(i int, s Step, answer string, direct bool) {
	t.setPlan(i, callKnown)
	b := t.outcomes()
	b.steps[i], b.answers[i] = s, answer
	if direct && (b.direct < 0 || i < b.direct) {
		b.direct = i
	}
}

// outcomes returns the turn's batch, made for its calls on first use.
func (t *turn) outcomes() *batch {
	if t.batch.steps == nil {
		t.batch = batch{steps: make([]Step, len(t.calls)), answers: make([]string, len(t.calls)), direct: -1}
	}
	return &t.batch
}

// ranSteps returns the steps of the calls that ran in the batch, in call
// order.
func (t *turn) ranSteps() []Step {
	var out []Step
	for i := range t.calls {
		if t.plan(i) == callRuns {
			out = append(out, t.batch.steps[i])
		}
	}
	return out
}

// settle says a stage recorded the turn itself: there is no batch, and the
// run goes on.
func (t *turn) settle() { t.settled = true }

// finish makes the turn, once recorded, end the run with output as its
// answer.
func (t *turn) finish(output string) { t.ends, t.output, t.err = true, output, nil }

// fail makes the turn, once recorded, end the run with err.
func (t *turn) fail(err error) { t.ends, t.err = true, err }

// resumeFrom is the saved state a continued run starts from (run.from):
// the run as it stopped, its open turn, if any, with the outcomes known so
// far (Finished), and for a run paused for approval the stage's interrupt
// and the decisions to resume it with.
type resumeFrom struct {
	state runState
	// decided resumes the open turn's batch (toolstage.Decided.Run); nil
	// for a run cut off.
	decided *toolstage.Decided
	// version is the version of the thread's checkpoint the state was
	// saved as, for a stage that keeps state (checkpoints).
	version int64
}

// continuedTurn returns the turn a continued run (r.from) stopped in, to
// finish first, and the number of model turns the run had made; nil and 0
// for a new run. The turn's calls that finished before are known; for a
// run paused for approval, the rest of the batch is the tool stage's to
// resume (resumeBatch); for a run cut off, the calls that had started, or
// may have, are known as interrupted (their outcome is unknown: they never
// run again), and the rest run: those without a function or of an unknown
// tool, which the model is told about, and those a stage settles (an
// answer).
func (r *run) continuedTurn() (*turn, int, error) {
	if r.from == nil {
		return nil, 0, nil
	}
	st := r.from.state
	ot := st.Turn
	if ot == nil {
		return nil, st.Turns, nil
	}
	n := ot.Number
	r.cur = turn{number: n, text: ot.Text, calls: slices.Clone(ot.Calls), resumed: true}
	t := &r.cur
	t.outcomes()
	for _, d := range ot.Finished {
		if d.Index < 0 || d.Index >= len(ot.Calls) || t.plan(d.Index) == callKnown {
			return nil, 0, fmt.Errorf("agent: resume: the saved turn's call %d is not a call of the turn", d.Index)
		}
		t.known(d.Index, d.step(n), d.Answer, d.Direct)
	}
	if r.from.decided != nil {
		return t, st.Turns, nil // the stage resumes the rest of the batch
	}
	for i, c := range ot.Calls {
		if t.plan(i) == callKnown || c.FunctionCall == nil {
			continue
		}
		if _, ok := r.a.stage.Tool(c.FunctionCall.Name); !ok {
			continue
		}
		// A call that started, or may have, before the run was cut off.
		t.known(i, Step{CallID: c.ID, Tool: c.FunctionCall.Name, Arguments: c.FunctionCall.Arguments,
			ModelArguments: c.FunctionCall.Arguments, Turn: n, Message: -1, Err: toolstage.ErrCallInterrupted}, errfmt.CallInterrupted, false)
	}
	return t, st.Turns, nil
}
