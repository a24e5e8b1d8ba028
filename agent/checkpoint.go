package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/guard"
)

// Checkpointer keeps the state of an agent's threads ([WithCheckpointer]):
// for each thread id ([guard.WithThread]), one opaque value — the
// thread's transcript, the run under way and any [Interrupt] awaiting
// decisions, encoded by the agent — and its version, a counter the store
// increments on each save. The contract is plain data (strings, bytes,
// integers), so a store needs nothing from this package: redisstore's
// Checkpointer satisfies it without importing agent.
//
// Implementations must be safe for concurrent use, and Save must be
// atomic: of two saves made from the same version, one succeeds and the
// other reports saved == false. That is how two replicas resuming the same
// interrupt, or two runs on one thread, never both run its calls. Test an
// implementation with agent/checkpointtest.
type Checkpointer interface {
	// Load returns the latest state saved for thread and its version; a
	// thread never saved has state nil and version 0. The returned bytes
	// are the caller's.
	Load(ctx context.Context, thread string) (state []byte, version int64, err error)
	// Save stores state as thread's version version+1 if the thread's
	// saved version is still version (0: never saved), and reports whether
	// it did. It must not keep state after it returns (copy it). An error
	// means the state may or may not have been saved: after an error, or a
	// false, the agent loads the thread and takes a state byte for byte
	// its own (each carries a random stamp) at version+1 as saved.
	Save(ctx context.Context, thread string, version int64, state []byte) (saved bool, err error)
}

// ErrRunUnfinished is returned by [Agent.Run] and [Agent.RunMessages] on
// a thread whose last run did not finish: it awaits decisions on an
// [Interrupt] ([Agent.Pending] returns it), or it was cut off. Continue it
// with [Agent.Resume], or end it with [Agent.Abandon].
var ErrRunUnfinished = errors.New("agent: the thread's last run did not finish; continue it with Resume")

// ErrCheckpointConflict is returned when the thread's saved state changed
// under a run (another run or resume on the same thread saved first): the
// run stops, and what it would have done next is left to the other.
var ErrCheckpointConflict = errors.New("agent: the thread's checkpoint was changed by another run")

// ErrNothingToResume is returned by [Agent.Resume] given a nil interrupt,
// [Agent.Pending] and [Agent.Abandon] when the thread in the context has no
// unfinished run, or the agent has no [Checkpointer] (or the context no
// thread).
var ErrNothingToResume = errors.New("agent: no unfinished run to resume")

// ErrCallInterrupted is the Step.Err of a call that had started, or may
// have, when its run was cut off (the process died or the context was
// cancelled mid-batch) or abandoned ([Agent.Abandon]). Resuming never runs
// it again — its outcome is unknown — and the model reads that it must
// check before calling again.
var ErrCallInterrupted = errors.New("agent: the run stopped while the call was running; its outcome is unknown")

// interruptedAnswer is what the model reads of a call in ErrCallInterrupted.
const interruptedAnswer = "The run stopped while this call was running, so whether it took effect is unknown. Check before calling it again."

// stateFormat is the version of the encoded runState.
const stateFormat = 1

// detachedSaveTimeout bounds the save a run makes after its context ended
// (see endSession): the save runs on a context without the caller's
// cancellation, for at most this long.
const detachedSaveTimeout = time.Second

// runState is what a checkpoint (or an interrupt without one) holds,
// encoded as checkpointjson.go says.
type runState struct {
	Format int `json:"format"`
	// Messages is the transcript before the open turn.
	Messages []llms.MessageContent `json:"messages"`
	// Running: a run is under way, paused or cut off; Resume continues it.
	Running bool `json:"running,omitempty"`
	// Turns is the number of model turns the run has finished.
	Turns int `json:"turns,omitempty"`
	// Turn is the model turn whose calls are not all recorded, if any.
	Turn *openTurn `json:"turn,omitempty"`
	// Stamp is random, new for every save: a run that cannot tell whether
	// its save was stored (its reply was lost) finds it by its bytes.
	Stamp string `json:"stamp,omitempty"`
}

// openTurn is a model turn whose batch has not finished.
type openTurn struct {
	Number   int             `json:"number"` // from 1, as Step.Turn
	Text     string          `json:"text,omitempty"`
	Calls    []llms.ToolCall `json:"calls"`
	Finished []doneCall      `json:"finished,omitempty"`
	// Interrupt is the id of the interrupt awaiting decisions on Pending;
	// "" once it is resumed.
	Interrupt string        `json:"interrupt,omitempty"`
	Pending   []PendingCall `json:"pending,omitempty"`
	PendingAt []int         `json:"pending_at,omitempty"` // each pending call's index in Calls
	Bound     []binding     `json:"bound,omitempty"`      // each pending call's binding (approval.go)
}

// doneCall is a call of an open turn with its outcome.
type doneCall struct {
	Index          int    `json:"index"`
	CallID         string `json:"call_id,omitempty"`
	Tool           string `json:"tool,omitempty"`
	Arguments      string `json:"arguments,omitempty"`
	ModelArguments string `json:"model_arguments,omitempty"`
	Result         string `json:"result,omitempty"`
	Err            string `json:"err,omitempty"`
	Failed         bool   `json:"failed,omitempty"`
	Rejected       bool   `json:"rejected,omitempty"`
	Answer         string `json:"answer"`
	Direct         bool   `json:"direct,omitempty"`
	// Unknown: the call's outcome is unknown (it was cut off, or its tool
	// panicked); NotStarted: it never started.
	Unknown    bool `json:"unknown,omitempty"`
	NotStarted bool `json:"not_started,omitempty"`
}

func doneFrom(index int, s Step, answer string, direct bool) doneCall {
	d := doneCall{Index: index, CallID: s.CallID, Tool: s.Tool, Arguments: s.Arguments,
		ModelArguments: s.ModelArguments, Result: s.Result, Answer: answer, Direct: direct}
	if s.Err != nil {
		var panicked *ToolPanicError
		d.Failed, d.Err = true, s.Err.Error()
		d.Rejected = errors.Is(s.Err, ErrCallRejected)
		d.Unknown = errors.Is(s.Err, ErrCallInterrupted) || errors.As(s.Err, &panicked)
		d.NotStarted = errors.Is(s.Err, ErrCallNotStarted)
	}
	return d
}

// doneCall returns the record of call index of a turn, finished with step
// s (answer: what the model reads), as a checkpoint or an interrupt keeps
// it: without the values of injected arguments, which never rest there.
func (a *Agent) doneCall(index int, s Step, answer string, direct bool) doneCall {
	d := doneFrom(index, s, answer, direct)
	if inj, ok := a.injection[d.Tool]; ok {
		d.Arguments, _ = guard.DropInjected(d.Arguments, inj.names)
	}
	return d
}

// step restores the call's Step (an error as its text; a rejection
// wrapping ErrCallRejected, an unknown outcome ErrCallInterrupted, a call
// that never started ErrCallNotStarted). Artifacts are not kept.
func (d doneCall) step(turn int) Step {
	s := Step{CallID: d.CallID, Tool: d.Tool, Arguments: d.Arguments, ModelArguments: d.ModelArguments,
		Result: d.Result, Turn: turn, Message: -1}
	switch {
	case d.Rejected:
		s.Err = &rejectedError{msg: d.Err}
	case d.NotStarted:
		s.Err = ErrCallNotStarted
	case d.Unknown && d.Err == ErrCallInterrupted.Error():
		s.Err = ErrCallInterrupted
	case d.Unknown:
		s.Err = fmt.Errorf("%w: %s", ErrCallInterrupted, d.Err)
	case d.Failed:
		s.Err = errors.New(d.Err)
	}
	return s
}

// session is what a run keeps of its thread's checkpoint and of the turn
// it resumes. A nil *session (an agent with neither approval nor a
// checkpointer) does nothing.
type session struct {
	cp      Checkpointer // nil: the run is not saved
	thread  string
	version int64
	resume  *resumeFrom // set by Resume
	// cut is the state to leave when the run's context ended inside a
	// batch: the turn open, with what its calls did (cutTurn).
	cut *runState
	// unsaved is the run's last save, when the store did not confirm it
	// and the run could not tell whether it was stored.
	unsaved *unsavedState
}

// unsavedState is a save the store did not confirm: the state and its
// bytes (with their stamp).
type unsavedState struct {
	state runState
	data  []byte
}

// openSession starts the session of a new run: with a checkpointer and a
// thread, it loads the thread's saved transcript, refusing a thread whose
// last run did not finish.
func (a *Agent) openSession(ctx context.Context) (*session, []llms.MessageContent, error) {
	if a.approval == nil {
		return nil, nil, nil
	}
	s := &session{}
	thread := guard.ThreadFrom(ctx)
	if a.approval.cp == nil || thread == "" {
		return s, nil, nil
	}
	s.cp, s.thread = a.approval.cp, thread
	st, err := s.load(ctx)
	if err != nil {
		return nil, nil, err
	}
	if st == nil {
		return s, nil, nil
	}
	if st.Running {
		return nil, nil, fmt.Errorf("%w (thread %q)", ErrRunUnfinished, thread)
	}
	return s, st.Messages, nil
}

// load reads the thread's state and remembers its version; nil when none.
func (s *session) load(ctx context.Context) (*runState, error) {
	data, v, err := s.cp.Load(ctx, s.thread)
	if err != nil {
		return nil, fmt.Errorf("agent: load checkpoint of thread %q: %w", s.thread, err)
	}
	s.version = v
	if data == nil {
		return nil, nil
	}
	var st runState
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, fmt.Errorf("agent: checkpoint of thread %q: %w", s.thread, err)
	}
	if st.Format != stateFormat {
		return nil, fmt.Errorf("agent: checkpoint of thread %q has format %d, want %d", s.thread, st.Format, stateFormat)
	}
	return &st, nil
}

// save stores st as the thread's next version.
func (s *session) save(ctx context.Context, st runState) error {
	if s == nil || s.cp == nil {
		return nil
	}
	st.Format, st.Stamp = stateFormat, newInterruptID()
	data, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("agent: encode checkpoint of thread %q: %w", s.thread, err)
	}
	return s.put(ctx, st, data)
}

// put stores data, st encoded, as the thread's next version. When the
// store does not confirm the save — an error, after which the state may or
// may not be stored (its reply was lost after the write), or a conflict,
// which a store client's retry of this very save can report — it reloads
// the thread: a state byte for byte this one, at the next version, is this
// save (its stamp is no other's), and the run goes on. A save it cannot
// settle so is kept in s.unsaved for endSession.
func (s *session) put(ctx context.Context, st runState, data []byte) error {
	ok, err := s.cp.Save(ctx, s.thread, s.version, data)
	if err == nil && ok {
		s.version++
		s.unsaved = nil
		return nil
	}
	stored, rerr := s.reconcile(ctx, data)
	switch {
	case stored:
		s.unsaved = nil
		return nil
	case err == nil || errors.Is(rerr, ErrCheckpointConflict):
		// Another run or resume saved first.
		s.unsaved = nil
		return fmt.Errorf("%w (thread %q)", ErrCheckpointConflict, s.thread)
	}
	s.unsaved = &unsavedState{state: st, data: data}
	return fmt.Errorf("agent: save checkpoint of thread %q: %w", s.thread, errors.Join(err, rerr))
}

// reconcile reloads the thread after a save of data the store did not
// confirm and reports whether data is stored, as the version after the
// run's (then the run's version moves on to it). A thread still at the
// run's version did not store it (false, nil); one at any other version
// was saved by another run or resume: ErrCheckpointConflict.
func (s *session) reconcile(ctx context.Context, data []byte) (bool, error) {
	stored, v, err := s.cp.Load(ctx, s.thread)
	if err != nil {
		return false, fmt.Errorf("agent: load checkpoint of thread %q: %w", s.thread, err)
	}
	switch {
	case v == s.version+1 && bytes.Equal(stored, data):
		s.version = v
		return true, nil
	case v == s.version:
		return false, nil
	}
	return false, fmt.Errorf("%w (thread %q)", ErrCheckpointConflict, s.thread)
}

// cutOff gives the session the state to leave for a run whose context
// ended inside a batch.
func (s *session) cutOff(st runState) {
	if s != nil && s.cp != nil {
		s.cut = &st
	}
}

// saveTurn saves a model turn whose calls are about to run. If the save
// fails because the run's context ended, none of the calls will start:
// the session is given the turn, open, with every call not started.
func (s *session) saveTurn(ctx context.Context, res *Result, turn int, text string, calls []llms.ToolCall) error {
	if s == nil || s.cp == nil {
		return nil
	}
	st := runState{Messages: res.Messages, Running: true, Turns: turn - 1, Turn: &openTurn{Number: turn, Text: text, Calls: calls}}
	err := s.save(ctx, st)
	if err != nil && ctx.Err() != nil {
		ot := *st.Turn
		for i, c := range calls {
			if c.FunctionCall != nil {
				ot.Finished = append(ot.Finished, doneFrom(i, unranStep(c, turn, ErrCallNotStarted), notStartedAnswer, false))
			}
		}
		st.Turn = &ot
		s.cutOff(st)
	}
	return err
}

// saveBatch saves a run whose turn's batch is recorded in res.
func (s *session) saveBatch(ctx context.Context, res *Result, turn int) error {
	if s == nil || s.cp == nil {
		return nil
	}
	return s.save(ctx, runState{Messages: res.Messages, Running: true, Turns: turn})
}

// endSession saves the outcome of a run that ended with err, and returns
// the run's error.
//
// A run that finished — it answered, or ended by an error other than its
// context's or an interrupt: ErrStopRun and a tool's panic included, whose
// turn cutTurn closed in res — leaves the thread's transcript, to be
// continued by the next run. A run that paused stays as saved. A run whose
// context ended leaves the turn it was cut off in as cutTurn recorded it
// (with a save on a context of its own, see detachedSaveTimeout), or, cut
// off elsewhere, stays as last saved: [Agent.Resume] continues it.
//
// A save the store did not confirm (s.unsaved) is settled first. If it
// paused the run for approval, its interrupt is stored now (unless the
// reload shows it was), and the run returns that [*Interrupt] as if the
// save had gone through ([Agent.Pending] returns it too). If the context
// ended, it is stored now too: it records what the run did (a batch that
// finished) past the last save.
func (a *Agent) endSession(ctx context.Context, s *session, res *Result, err error) error {
	if s == nil || s.cp == nil {
		return err
	}
	var in *Interrupt
	if errors.As(err, &in) || errors.Is(err, ErrCheckpointConflict) {
		return err
	}
	done := ctx.Err() != nil
	if done {
		if s.cut == nil && s.unsaved == nil {
			return err
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), detachedSaveTimeout)
		defer cancel()
	}
	if u := s.unsaved; u != nil {
		stored, rerr := s.reconcile(ctx, u.data)
		if rerr != nil {
			return errors.Join(err, rerr)
		}
		paused := u.state.Turn != nil && u.state.Turn.Interrupt != ""
		if s.cut == nil && (paused || done) {
			if !stored {
				if perr := s.put(ctx, u.state, u.data); perr != nil {
					return errors.Join(err, perr)
				}
			}
			if paused && !done {
				return a.storedInterrupt(s.thread, u.state.Turn)
			}
			return err
		}
	}
	st := runState{Messages: res.Messages}
	if s.cut != nil {
		st = *s.cut
	}
	if serr := s.save(ctx, st); serr != nil {
		return errors.Join(err, serr)
	}
	return err
}

// storedInterrupt returns the interrupt of ot, a turn of thread paused for
// approval whose state the Checkpointer keeps, as runBatch returned it.
func (a *Agent) storedInterrupt(thread string, ot *openTurn) *Interrupt {
	in := &Interrupt{ID: ot.Interrupt, Thread: thread, Pending: slices.Clone(ot.Pending)}
	in.Signature = a.approval.sign(in)
	return in
}

// resumeTurn finishes the turn a resumed run stopped in and returns the
// index of the next turn, and whether the run is over (a Direct result, or
// with an output schema, the turn's answer taken or the run ended without
// one: err says which). A run that is not resumed starts at turn 0. The
// turn's answer calls ([WithOutputSchema]) never ran: once its other calls
// have finished, settleOutput decides on the answer as outputTurn does;
// reasks counts the re-asks for it.
func (a *Agent) resumeTurn(ctx context.Context, s *session, res *Result, reasks *int) (first int, over bool, err error) {
	if s == nil || s.resume == nil {
		return 0, false, nil
	}
	r := s.resume
	ot := r.state.Turn
	if ot == nil {
		return r.state.Turns, false, nil
	}
	n := ot.Number
	b := batch{steps: make([]Step, len(ot.Calls)), answers: make([]string, len(ot.Calls)), direct: -1}
	have := make([]bool, len(ot.Calls))
	for _, d := range ot.Finished {
		if d.Index < 0 || d.Index >= len(ot.Calls) || have[d.Index] {
			return 0, false, fmt.Errorf("agent: resume: the saved turn's call %d is not a call of the turn", d.Index)
		}
		have[d.Index] = true
		b.steps[d.Index], b.answers[d.Index] = d.step(n), d.Answer
		if d.Direct && (b.direct < 0 || d.Index < b.direct) {
			b.direct = d.Index
		}
	}
	calls := slices.Clone(ot.Calls) // the transcript's: an edit's arguments replace the model's
	var run []llms.ToolCall         // what runs now, through the tool stage
	var at []int                    // their indexes in calls
	var gates []callGate            // by place in run
	for i, c := range ot.Calls {
		if have[i] || a.isAnswer(c) { // an answer call is settleOutput's
			continue
		}
		if args, ok := r.run[i]; ok {
			fc := *c.FunctionCall
			fc.Arguments = args.args
			c.FunctionCall = &fc
			if args.edited {
				calls[i] = c
			}
			run, at = append(run, c), append(at, i)
			gates = append(gates, callGate{id: c.ID, approved: true, injected: args.injected})
			continue
		}
		if c.FunctionCall == nil || a.tools[c.FunctionCall.Name] == nil {
			run, at = append(run, c), append(at, i) // no tool runs: the model reads why
			gates = append(gates, callGate{})
			continue
		}
		// A call that started, or may have, before the run was cut off.
		b.steps[i] = Step{CallID: c.ID, Tool: c.FunctionCall.Name, Arguments: c.FunctionCall.Arguments,
			ModelArguments: c.FunctionCall.Arguments, Turn: n, Message: -1, Err: ErrCallInterrupted}
		b.answers[i] = interruptedAnswer
	}
	rb, err := a.runTools(ctx, n, res.Messages, run, gates)
	for j, i := range at {
		b.steps[i], b.answers[i] = rb.steps[j], rb.answers[j]
		if ot.Calls[i].FunctionCall != nil {
			b.steps[i].ModelArguments = ot.Calls[i].FunctionCall.Arguments
		}
	}
	if rb.direct >= 0 && (b.direct < 0 || at[rb.direct] < b.direct) {
		b.direct = at[rb.direct]
	}
	if err != nil {
		// The calls recorded before (finished, or of unknown outcome) are
		// finished; the answer calls never ran.
		b.cut = make([]progress, len(ot.Calls))
		for i, c := range ot.Calls {
			if a.isAnswer(c) && !have[i] {
				b.cut[i] = callNotStarted
			}
		}
		for j, i := range at {
			b.cut[i] = callCutOff
			if rb.cut != nil {
				b.cut[i] = rb.cut[j]
			}
		}
		return 0, false, a.cutTurn(ctx, s, res, n, ot.Text, calls, b, err)
	}
	if a.output != nil {
		// The ledger of the turn's model call is gone: the answer is
		// checked against the schema again.
		answer, answerErr := a.checkFirstAnswer(ctx, calls)
		if done, err := a.settleOutput(ctx, s, n, res, ot.Text, calls, b, answer, answerErr, reasks); done || err != nil {
			return 0, true, err
		}
		return n, false, nil
	}
	if record(res, ot.Text, calls, b) {
		return 0, true, nil
	}
	if err := s.saveBatch(ctx, res, n); err != nil {
		return 0, false, err
	}
	return n, false, nil
}

// MemoryCheckpointer is an in-process [Checkpointer]: a map from thread id
// to its latest state. It keeps every thread it is given until
// [MemoryCheckpointer.Forget]; its state dies with the process, so
// replicas, or a run that must survive a crash, need a shared one (such as
// redisstore's). The zero value is ready to use; it is safe for concurrent
// use and must not be copied after first use.
type MemoryCheckpointer struct {
	mu      sync.Mutex
	threads map[string]memoryCheckpoint
}

type memoryCheckpoint struct {
	state   []byte
	version int64
}

// Load implements [Checkpointer]. It never fails.
func (m *MemoryCheckpointer) Load(_ context.Context, thread string) ([]byte, int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.threads[thread]
	if !ok {
		return nil, 0, nil
	}
	return slices.Clone(c.state), c.version, nil
}

// Save implements [Checkpointer]. It never fails.
func (m *MemoryCheckpointer) Save(_ context.Context, thread string, version int64, state []byte) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.threads == nil {
		m.threads = make(map[string]memoryCheckpoint)
	}
	if m.threads[thread].version != version {
		return false, nil
	}
	m.threads[thread] = memoryCheckpoint{state: slices.Clone(state), version: version + 1}
	return true, nil
}

// Forget drops thread's state: its next run starts a new conversation.
func (m *MemoryCheckpointer) Forget(thread string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.threads, thread)
}
