package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/toolguard/toolguard/errfmt"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/toolstage"
)

// Resume continues a run that returned a [*toolstage.Interrupt], with a
// person's decisions on its pending calls, and returns the run's *[Result]
// as [Agent.Run] does: Messages is the whole transcript, Steps the calls of
// the interrupted turn (those finished before the pause included, their
// errors restored as text) and of the turns after it.
//
// The decisions are the tool stage's to check and run
// ([toolstage.Stage.Resume]): every pending call needs exactly one,
// matched by its digest; a decision refused ([toolstage.DecisionError],
// [toolstage.ErrDecisionRefused]) leaves the interrupt usable and runs
// nothing; accepted and edited calls run with exactly the approved
// arguments, as the identity they were judged for; the transcript records
// an edited call with the arguments that ran. Calls of the turn that
// finished before the pause never run again. The resumed run is the same
// run for [middleware.ToolCallLimit] and [middleware.ModelCallLimit]: their
// run limits count the calls it made before the pause, a model call per
// model turn and the tool calls of its transcript ([guard.WithResumedRun]).
//
// An interrupt can be resumed once. With a [WithCheckpointer] and a
// thread, the state is the thread's (the interrupt need only be the
// thread's current one: a replayed, stale or other thread's interrupt is
// refused with [toolstage.ErrInterruptRefused], and so is an unsigned
// interrupt of a run without a thread, which carries a state of its own),
// and two replicas resuming it at once cannot both run it: the thread's
// checkpoint records the claim before anything runs. Without one, the
// interrupt carries the state and the agent's tool stage refuses one it
// has resumed before (see [toolstage.WithCheckpointer] for every process
// sharing a store), and [toolstage.WithInterruptKey] keeps a client from
// changing it.
//
// With a nil interrupt, Resume continues the thread's unfinished run from
// the checkpointer: a run cut off mid-way goes on from its last save
// without running finished calls again (a call that was running when it
// stopped is not run again either: its Step.Err is
// [toolstage.ErrCallInterrupted]); a run awaiting decisions takes them as
// with its interrupt. It returns [ErrNothingToResume] when there is none.
func (a *Agent) Resume(ctx context.Context, in *toolstage.Interrupt, decisions ...toolstage.Decision) (*Result, error) {
	ctx = ownThread(ctx) // a sub-agent's Resume is not on its caller's thread (RunMessages)
	res, err := a.resume(ctx, in, decisions)
	if errors.Is(err, toolstage.ErrDecisionRefused) || errors.Is(err, toolstage.ErrInterruptRefused) {
		return nil, err
	}
	return res, err
}

// refused reports err, a refusal made by the agent before the tool stage
// saw the interrupt, as the stage reports its own.
func (a *Agent) refused(ctx context.Context, err error) error {
	ctx = a.stage.Scope(ctx)
	guard.Report(ctx, guard.Event{Kind: guard.EventApprovalRefused, Middleware: "agent", Err: err})
	return err
}

func (a *Agent) resume(ctx context.Context, in *toolstage.Interrupt, decisions []toolstage.Decision) (*Result, error) {
	// The resumed run is on the interrupt's thread (none for a run that
	// had none: its state is in the interrupt, whatever thread ctx names,
	// though unsigned it is refused where ctx names a checkpointed
	// thread), else on ctx's.
	thread := guard.ThreadFrom(ctx)
	ctxThread := thread
	if in != nil {
		if in.Thread != "" && thread != "" && thread != in.Thread {
			return nil, a.refused(ctx, fmt.Errorf("%w: it belongs to thread %q, not %q", toolstage.ErrInterruptRefused, in.Thread, thread))
		}
		thread = in.Thread
		ctx = guard.WithThread(ctx, thread)
	}
	if in != nil && in.Thread == "" && ctxThread != "" && a.checkpoints != nil && len(in.Host) > 0 && in.Signature == "" {
		// The thread's state is in the checkpointer; an unsigned state
		// carried by the interrupt is the client's to forge.
		return nil, a.refused(ctx, fmt.Errorf("%w: an unsigned interrupt of a run without a thread cannot be resumed on thread %q, whose state the checkpointer keeps", toolstage.ErrInterruptRefused, ctxThread))
	}
	var s *session // the thread's checkpoint, if a Checkpointer keeps it
	var st runState
	paused := in // what the tool stage resumes: with the states a checkpoint keeps
	switch {
	case a.checkpoints != nil && thread != "":
		s = &session{cp: a.checkpoints.cp, thread: thread}
		saved, err := s.load(ctx)
		if err != nil {
			return nil, err
		}
		if saved == nil || !saved.Running {
			if in != nil {
				return nil, a.refused(ctx, fmt.Errorf("%w: thread %q has no run awaiting it (already resumed?)", toolstage.ErrInterruptRefused, thread))
			}
			return nil, fmt.Errorf("%w (thread %q)", ErrNothingToResume, thread)
		}
		st = *saved
		ot := st.Turn
		if in != nil && (ot == nil || ot.Interrupt != in.ID || ot.Paused == nil) {
			return nil, a.refused(ctx, fmt.Errorf("%w: it is not thread %q's pending interrupt (already resumed, or replaced)", toolstage.ErrInterruptRefused, thread))
		}
		if ot != nil && ot.Interrupt != "" && ot.Paused != nil {
			if in != nil {
				// The caller's copy lacks the states the store keeps; with
				// them, its signature must verify: what a client changed
				// in it is refused, not ignored.
				full := *in
				full.State, full.Host = ot.Paused.State, ot.Paused.Host
				if !a.stage.Verify(&full) {
					return nil, a.refused(ctx, fmt.Errorf("%w: its signature does not verify", toolstage.ErrInterruptRefused))
				}
			}
			paused = ot.Paused
		}
	case in == nil:
		return nil, ErrNothingToResume
	default:
		if err := json.Unmarshal(in.Host, &st); err != nil || st.Format != stateFormat || st.Turn == nil || st.Turn.Interrupt != in.ID {
			return nil, a.refused(ctx, fmt.Errorf("%w: its state is missing or malformed", toolstage.ErrInterruptRefused))
		}
	}
	from := &resumeFrom{state: st}
	if st.Turn != nil && st.Turn.Interrupt != "" {
		if paused == nil {
			// A paused run resumed with a nil interrupt and no decisions
			// is refused by the stage, which needs them.
			return nil, a.refused(ctx, fmt.Errorf("%w: the thread's run awaits decisions on its interrupt", toolstage.ErrInterruptRefused))
		}
		// Everything the stage would refuse is refused now, before the
		// claim: nothing has run, and the interrupt stays usable.
		d, err := a.stage.Decide(ctx, paused, decisions...)
		if err != nil {
			return nil, err
		}
		from.decided = d
	} else if len(decisions) > 0 {
		return nil, a.refused(ctx, &toolstage.DecisionError{Reason: "the run has no pending call to decide on"})
	}
	if s != nil {
		// Claim the interrupt before anything runs: a Resume that finds the
		// thread so continues the turn with the calls a person rejected or
		// answered as decided, and the accepted and edited ones of unknown
		// outcome (they may have run).
		claimed := st
		if st.Turn != nil && st.Turn.Interrupt != "" {
			ot := *st.Turn
			ot.Finished = append(slices.Clone(ot.Finished), decidedCalls(&ot, decisions)...)
			ot.Interrupt, ot.Paused = "", nil
			claimed.Turn = &ot
		}
		if err := s.save(ctx, claimed); err != nil {
			if errors.Is(err, ErrCheckpointConflict) {
				return nil, a.refused(ctx, fmt.Errorf("%w: another resume of thread %q came first: %w", toolstage.ErrInterruptRefused, thread, err))
			}
			return nil, err
		}
		from.version = s.version
	}
	ctx, r := a.newRun(ctx, a.callOpts)
	// The run goes on: its limits count the calls it made before the pause,
	// a model call per turn (its open turn's included).
	made := st.Turns
	if st.Turn != nil {
		made = st.Turn.Number
	}
	ctx = guard.WithResumedRun(ctx, made)
	r.from = from
	r.res.Messages = slices.Clone(st.Messages)
	if err := r.start(ctx); err != nil {
		return nil, err
	}
	return r.loop(ctx)
}

// resumeBatch finishes t, the turn a run paused for approval stopped in,
// through the tool stage's Resume: every call of its batch gets its
// outcome, the waiting ones as decided.
func (r *run) resumeBatch(ctx context.Context, t *turn) error {
	from := r.from
	var sent []int // each of the stage's calls' places in the turn
	for i, c := range t.calls {
		if t.plan(i) == callLater || c.FunctionCall == nil {
			continue
		}
		sent = append(sent, i)
	}
	ctx = context.WithValue(ctx, transcriptKey{}, slices.Clone(r.res.Messages))
	out, err := from.decided.Run(ctx)
	if out == nil {
		return err
	}
	t.take(out.Outcomes, sent, true, err)
	return err
}

// decidedCalls returns the record of the calls of ot, a paused turn, that
// decisions (which the tool stage accepted) reject or answer: what the
// model reads of them whatever happens to the run after the claim. A
// decision is matched to its pending call by digest, as the stage matches
// it; the pending calls are ot.Waiting's, in order.
func decidedCalls(ot *openTurn, decisions []toolstage.Decision) []doneCall {
	if ot.Paused == nil || len(ot.Paused.Pending) != len(ot.Waiting) {
		return nil
	}
	var out []doneCall
	for _, d := range decisions {
		if d.Action != toolstage.Reject && d.Action != toolstage.Respond {
			continue
		}
		for j, p := range ot.Paused.Pending {
			i := ot.Waiting[j]
			if p.Digest != d.Digest || p.ID != d.CallID || i < 0 || i >= len(ot.Calls) || ot.Calls[i].FunctionCall == nil {
				continue
			}
			dc := doneCall{Index: i, CallID: p.ID, Tool: p.Tool, Arguments: string(p.Args), ModelArguments: ot.Calls[i].FunctionCall.Arguments}
			if d.Action == toolstage.Reject {
				msg := d.Message
				if msg == "" {
					msg = errfmt.CallRejected
				}
				dc.Failed, dc.Rejected, dc.Err, dc.Answer = true, true, toolstage.ErrCallRejected.Error()+": "+msg, msg
			} else {
				dc.Result, dc.Answer = d.Message, d.Message
			}
			out = append(out, dc)
			break
		}
	}
	return out
}
