package agent

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/errfmt"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/toolstage"
)

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

// stateFormat is the version of the encoded runState.
const stateFormat = 1

// detachedSaveTimeout bounds the save a run makes after its context ended
// (see session.end): the save runs on a context without the caller's
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
	// Interrupt is the id of the tool stage's interrupt awaiting decisions
	// on the calls at Waiting (places in Calls); "" once a Resume took it.
	Interrupt string `json:"interrupt,omitempty"`
	Waiting   []int  `json:"waiting,omitempty"`
	// Paused is that interrupt whole, its state included, in a checkpoint;
	// nil in an interrupt's own Host state.
	Paused *toolstage.Interrupt `json:"paused,omitempty"`
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
		var panicked *toolstage.ToolPanicError
		d.Failed, d.Err = true, s.Err.Error()
		d.Rejected = errors.Is(s.Err, toolstage.ErrCallRejected)
		d.Unknown = errors.Is(s.Err, toolstage.ErrCallInterrupted) || errors.As(s.Err, &panicked)
		d.NotStarted = errors.Is(s.Err, toolstage.ErrCallNotStarted)
	}
	return d
}

// doneCall returns the record of call index of a turn, finished with step
// s (answer: what the model reads), as a checkpoint or an interrupt keeps
// it: without the values of injected arguments, which never rest there.
func (a *Agent) doneCall(index int, s Step, answer string, direct bool) doneCall {
	d := doneFrom(index, s, answer, direct)
	d.Arguments = string(a.stage.WithoutInjected(guard.Call{ID: d.CallID, Name: d.Tool, Args: []byte(d.Arguments)}).Args)
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
		s.Err = fmt.Errorf("%w%s", toolstage.ErrCallRejected, strings.TrimPrefix(d.Err, toolstage.ErrCallRejected.Error()))
	case d.NotStarted:
		s.Err = toolstage.ErrCallNotStarted
	case d.Unknown && d.Err == toolstage.ErrCallInterrupted.Error():
		s.Err = toolstage.ErrCallInterrupted
	case d.Unknown:
		s.Err = fmt.Errorf("%w: %s", toolstage.ErrCallInterrupted, d.Err)
	case d.Failed:
		s.Err = errors.New(d.Err)
	}
	return s
}

// checkpoints is an agent's [Checkpointer] as a turn stage (see startRun).
type checkpoints struct {
	a  *Agent
	cp toolstage.Checkpointer
}

// startRun implements [turnStage]: the hooks that keep the state of a run
// on a thread ([guard.WithThread]) in the Checkpointer. A new run first
// loads the thread's transcript into the Result, refusing a thread whose
// last run did not finish; a continued run goes on from the version its
// Resume saved. The turn is saved before its calls run (beforeBatch), the
// run after every turn recorded (turnDone), a paused run's state where the
// approval gate asks (keep), and the run's outcome when it ends (end): the
// transcript, or, for a run cut off inside a batch, the turn open as
// cutOff was given it. A run without a thread is not saved.
func (c *checkpoints) startRun(ctx context.Context, r *run) (stageRun, error) {
	thread := guard.ThreadFrom(ctx)
	if thread == "" {
		return stageRun{}, nil
	}
	s := &session{cp: c.cp, thread: thread}
	if r.from != nil {
		s.version = r.from.version
	} else {
		st, err := s.load(ctx)
		if err != nil {
			return stageRun{}, err
		}
		if st != nil && st.Running {
			return stageRun{}, fmt.Errorf("%w (thread %q)", ErrRunUnfinished, thread)
		}
		if st != nil {
			r.res.Messages = append(r.res.Messages, st.Messages...)
		}
	}
	return stageRun{
		beforeBatch: func(ctx context.Context, t *turn) error {
			if t.resumed {
				return nil // its Resume saved it
			}
			return s.saveTurn(ctx, r.res, t.number, t.text, c.a.withoutForged(t.calls))
		},
		turnDone: func(ctx context.Context, t *turn) error { return s.saveBatch(ctx, r.res, t.number) },
		keep:     s.keep,
		cutOff:   s.cutOff,
		end:      func(ctx context.Context, err error) error { return s.end(ctx, r.res, err) },
	}, nil
}

// session is what a run keeps of its thread's checkpoint.
type session struct {
	cp      toolstage.Checkpointer
	thread  string
	version int64
	// cut is the state to leave when the run's context ended inside a
	// batch: the turn open, with what its calls did (cutTurn).
	cut *runState
	// unsaved is the run's last save, when the store did not confirm it
	// and the run could not tell whether it was stored.
	unsaved *unsavedState
}

// unsavedState is a save the store did not confirm: the state and its
// bytes (with their stamp), and for a paused run's, the error the run
// returns once it is stored (its *Interrupt).
type unsavedState struct {
	state  runState
	data   []byte
	paused error
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
	st.Format, st.Stamp = stateFormat, newStamp()
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
// settle so is kept in s.unsaved for end.
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
func (s *session) cutOff(st runState) { s.cut = &st }

// keep saves st, the state of a run that pauses and then returns paused.
// A save the store does not confirm is settled when the run ends (end).
func (s *session) keep(ctx context.Context, st runState, paused error) (bool, error) {
	err := s.save(ctx, st)
	if s.unsaved != nil {
		s.unsaved.paused = paused
	}
	return true, err
}

// saveTurn saves a model turn whose calls are about to run. If the save
// fails because the run's context ended, none of the calls will start:
// the session is given the turn, open, with every call not started.
func (s *session) saveTurn(ctx context.Context, res *Result, turn int, text string, calls []llms.ToolCall) error {
	st := runState{Messages: res.Messages, Running: true, Turns: turn - 1, Turn: &openTurn{Number: turn, Text: text, Calls: calls}}
	err := s.save(ctx, st)
	if err != nil && ctx.Err() != nil {
		ot := *st.Turn
		for i, c := range calls {
			if c.FunctionCall != nil {
				ot.Finished = append(ot.Finished, doneFrom(i, unranStep(c, turn, toolstage.ErrCallNotStarted), errfmt.CallNotStarted, false))
			}
		}
		st.Turn = &ot
		s.cutOff(st)
	}
	return err
}

// saveBatch saves a run whose turn's batch is recorded in res.
func (s *session) saveBatch(ctx context.Context, res *Result, turn int) error {
	return s.save(ctx, runState{Messages: res.Messages, Running: true, Turns: turn})
}

// end saves the outcome of a run that ended with err (res: what it did),
// and returns the run's error.
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
func (s *session) end(ctx context.Context, res *Result, err error) error {
	var in *toolstage.Interrupt
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
		paused := u.paused != nil
		if s.cut == nil && (paused || done) {
			if !stored {
				if perr := s.put(ctx, u.state, u.data); perr != nil {
					return errors.Join(err, perr)
				}
			}
			if paused && !done {
				return u.paused
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

// newStamp returns a random stamp for a saved state.
func newStamp() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24)
	return hex.EncodeToString(b[:])
}
