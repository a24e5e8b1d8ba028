package toolstage

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/toolguard/toolguard/errfmt"
	"github.com/toolguard/toolguard/guard"
)

// usedLocal reports whether this stage resumed interrupt id before.
func (ap *approval) usedLocal(id string) bool {
	ap.mu.Lock()
	defer ap.mu.Unlock()
	return ap.used[id]
}

// claimLocal records that the interrupt id is being resumed, for a stage
// without a checkpointer; false if it already was.
func (ap *approval) claimLocal(id string) bool {
	ap.mu.Lock()
	defer ap.mu.Unlock()
	if ap.used[id] {
		return false
	}
	if ap.used == nil {
		ap.used = make(map[string]bool)
	}
	ap.used[id] = true
	ap.fifo = append(ap.fifo, id)
	if len(ap.fifo) > maxUsed {
		delete(ap.used, ap.fifo[0])
		ap.fifo = ap.fifo[1:]
	}
	return true
}

// runArgs are the arguments an accepted or edited call runs with.
type runArgs struct {
	args   string
	edited bool
	// injected is args with the injected values Resume set and checked
	// (injectApproved); "" for a tool without injected arguments.
	injected string
}

// Resume runs the calls of an interrupted batch as a person decided, and
// returns a batch with an outcome for every call of the batch [Stage.Run]
// paused, in call order: the calls that ran before the pause (their
// errors restored as text, their artifacts not kept), the rejected and
// answered ones, and those it ran now. The host appends every tool result
// at once.
//
// Every pending call needs exactly one decision, matched by its digest
// (never by position) and call id. A decision that matches no pending
// call, a pending call without one, two decisions for one call, an unknown
// action, arguments given to any action but Edit, or an Edit whose
// arguments fail the tool's schema: Resume returns a *[DecisionError]
// ([ErrDecisionRefused]), nothing runs and the interrupt can be resumed
// again. Accepted and edited calls then run through the tool stage — the
// tool middlewares, the schema check, the same path as a call of Run —
// with exactly the approved arguments: a tool middleware may refuse an
// approved call but not change it, and approved arguments are validated as
// they are, never stripped or coerced again. An edit keeps the call's
// tool; its outcome's Call holds the edited arguments. Rejected calls never
// run and the model reads the message ([ErrCallRejected]); a response is
// the call's result and the tool never runs.
//
// An approval runs as the identity it was judged for, and against the
// schema it was judged against: Resume sets an accepted or edited call's
// injected arguments ([Inject]) from its own context, once, and refuses
// the decision ([DecisionError], nothing runs) when they differ from the
// values the gate saw, unless [WithReinjectOnResume] names them; without
// [WithInterruptKey], only the Stage value that paused can check them. It
// refuses an accept or an edit too when the tool's schema has changed
// since the pause.
//
// An interrupt is resumed at most once: with a [Checkpointer]
// ([WithCheckpointer]) across every process sharing it (claimed
// atomically before anything runs), else per Stage value. A replayed,
// forged or tampered interrupt, one of another thread than the context's,
// or one whose state is missing: [ErrInterruptRefused], and nothing runs.
// A context already done returns its error, and the interrupt stays
// usable.
func (s *Stage) Resume(ctx context.Context, in *Interrupt, decisions ...Decision) (*Batch, error) {
	d, err := s.Decide(ctx, in, decisions...)
	if err != nil {
		return nil, err
	}
	return d.Run(ctx)
}

// Decided is an interrupt with decisions a [Stage] accepted
// ([Stage.Decide]): nothing of it has run, and it is not claimed yet.
type Decided struct {
	s         *Stage
	in        *Interrupt
	decisions []Decision
	pr        *prepared
	version   int64
	ran       atomic.Bool
}

// Decide makes every check [Stage.Resume] makes before anything runs —
// the interrupt, its state, that it was not resumed, the decisions, the
// injected values the context gives — and returns the interrupt ready to
// run, or the error Resume would return (reported as Resume reports it).
// It claims nothing and runs nothing: a host that must record the claim
// itself before the calls run (toolguard's agent, in its thread's
// checkpoint) decides first, records, then runs. Resume is Decide, then
// Run.
func (s *Stage) Decide(ctx context.Context, in *Interrupt, decisions ...Decision) (*Decided, error) {
	ctx = s.withEvents(ctx)
	_, pr, version, err := s.prepare(ctx, in, decisions)
	s.reportRefusal(ctx, err)
	if err != nil {
		return nil, err
	}
	return &Decided{s: s, in: in, decisions: decisions, pr: pr, version: version}, nil
}

// Run claims the interrupt — in the stage's Checkpointer, or its memory —
// and runs the calls as decided, with the injected values Decide checked;
// it returns the batch as [Stage.Resume] does. A Decided runs once: a
// second Run, or a claim another resume made first, is refused
// ([ErrInterruptRefused]) and runs nothing.
func (d *Decided) Run(ctx context.Context) (*Batch, error) {
	if !d.ran.CompareAndSwap(false, true) {
		return nil, fmt.Errorf("%w: it was already resumed", ErrInterruptRefused)
	}
	ctx = guard.WithThread(d.s.withEvents(ctx), d.in.Thread)
	if err := d.s.claim(ctx, d.in.ID, d.pr.pb, d.version); err != nil {
		d.s.reportRefusal(ctx, err)
		return nil, err
	}
	return d.s.runDecided(ctx, d.pr.pb, d.decisions, d.pr.at, d.pr.run)
}

// reportRefusal reports err when it refuses an interrupt or its decisions
// ([guard.EventApprovalRefused]): logged at Warn without a handler, so that
// forged or replayed interrupts show in the logs.
func (s *Stage) reportRefusal(ctx context.Context, err error) {
	if errors.Is(err, ErrDecisionRefused) || errors.Is(err, ErrInterruptRefused) {
		e := guard.Event{Kind: guard.EventApprovalRefused, Middleware: "toolstage", Err: err}
		var de *DecisionError
		if errors.As(err, &de) {
			e.CallID = de.CallID
		}
		if s.events != nil {
			ctx = guard.WithEvents(ctx, s.events)
		}
		guard.Report(ctx, e) // logged at Warn without a handler
	}
}

// prepared is a Resume's plan: the paused batch, the calls to run, each
// decision's pending call.
type prepared struct {
	pb  *pausedBatch
	run map[int]runArgs
	at  []int
}

// prepare makes Resume's checks and returns its plan, with ctx on the
// interrupt's thread and the version of the state in the Checkpointer.
func (s *Stage) prepare(ctx context.Context, in *Interrupt, decisions []Decision) (context.Context, *prepared, int64, error) {
	ap := s.approval
	if in == nil {
		return ctx, nil, 0, fmt.Errorf("%w: no interrupt given", ErrInterruptRefused)
	}
	// The resumed batch is on the interrupt's thread.
	if thread := guard.ThreadFrom(ctx); in.Thread != "" && thread != "" && thread != in.Thread {
		return ctx, nil, 0, fmt.Errorf("%w: it belongs to thread %q, not %q", ErrInterruptRefused, in.Thread, thread)
	}
	ctx = guard.WithThread(ctx, in.Thread)
	if !ap.gated() {
		return ctx, nil, 0, fmt.Errorf("%w: the stage has no approval configured", ErrInterruptRefused)
	}
	if !ap.verify(in) {
		return ctx, nil, 0, fmt.Errorf("%w: its signature does not verify", ErrInterruptRefused)
	}
	pb, version, err := s.pausedState(ctx, in)
	if err != nil {
		return ctx, nil, 0, err
	}
	if s.cp == nil && ap.usedLocal(in.ID) {
		return ctx, nil, 0, fmt.Errorf("%w: it was already resumed", ErrInterruptRefused)
	}
	run, at, err := ap.plan(pb, in.ID, in.Thread, decisions)
	if err != nil {
		return ctx, nil, 0, err
	}
	// A context already done would claim the interrupt and run nothing:
	// the approved calls would be lost.
	if err := ctx.Err(); err != nil {
		return ctx, nil, 0, err
	}
	if len(run) > 0 {
		// The approved calls run as the identity they were judged for, with
		// the injected values checked here (identity.go).
		if err := ap.injectApproved(ctx, pb, in.ID, in.Thread, run); err != nil {
			return ctx, nil, 0, err
		}
	}
	return ctx, &prepared{pb: pb, run: run, at: at}, version, nil
}

// pausedState returns the state of interrupt in: read from the stage's
// Checkpointer (with its version there), or else from the interrupt.
func (s *Stage) pausedState(ctx context.Context, in *Interrupt) (*pausedBatch, int64, error) {
	var pb pausedBatch
	var version int64
	if s.cp != nil {
		data, v, err := s.cp.Load(ctx, interruptKey(in.ID))
		if err != nil {
			return nil, 0, fmt.Errorf("toolstage: load interrupt %s: %w", in.ID, err)
		}
		if data == nil {
			return nil, 0, fmt.Errorf("%w: the checkpointer holds no interrupt %s", ErrInterruptRefused, in.ID)
		}
		if err := json.Unmarshal(data, &pb); err != nil || pb.Format != stateFormat {
			return nil, 0, fmt.Errorf("%w: its stored state is malformed", ErrInterruptRefused)
		}
		if pb.Claimed {
			return nil, 0, fmt.Errorf("%w: it was already resumed", ErrInterruptRefused)
		}
		version = v
	} else if err := json.Unmarshal(in.State, &pb); err != nil || pb.Format != stateFormat {
		return nil, 0, fmt.Errorf("%w: its state is missing or malformed", ErrInterruptRefused)
	}
	if len(pb.PendingAt) != len(pb.Pending) || len(pb.Bound) != len(pb.Pending) {
		return nil, 0, fmt.Errorf("%w: its state is inconsistent", ErrInterruptRefused)
	}
	return &pb, version, nil
}

// claim marks interrupt id resumed, before anything of it runs: in the
// stage's Checkpointer (pb, read at version; of two claims from that
// version one wins), or else in the stage's memory.
func (s *Stage) claim(ctx context.Context, id string, pb *pausedBatch, version int64) error {
	if s.cp == nil {
		if !s.approval.claimLocal(id) {
			return fmt.Errorf("%w: it was already resumed", ErrInterruptRefused)
		}
		return nil
	}
	claimed := *pb
	claimed.Claimed = true
	// The stamp makes this claim's bytes its own: a resume whose save was
	// applied but not confirmed (a lost reply, a client's retry reported as
	// a conflict) reads it back and runs; another resume's claim, the same
	// but for its stamp, is never taken for this one's.
	claimed.Claim = newInterruptID()
	data, err := json.Marshal(&claimed)
	if err != nil {
		return fmt.Errorf("toolstage: encode interrupt state: %w", err)
	}
	saved, err := saveOwn(ctx, s.cp, interruptKey(id), version, data)
	if err != nil {
		// Stored or not, the claim is not known to be this one's: nothing
		// runs (a claim stored and not run leaves the calls not run).
		return fmt.Errorf("toolstage: claim interrupt %s: %w", id, err)
	}
	if !saved {
		return fmt.Errorf("%w: another resume of it came first", ErrInterruptRefused)
	}
	return nil
}

// runDecided runs the calls a person accepted or edited (run, by place in
// the batch) and returns the batch's outcomes: every call's, in order.
func (s *Stage) runDecided(ctx context.Context, pb *pausedBatch, decisions []Decision, at []int, run map[int]runArgs) (*Batch, error) {
	calls := fromWireCalls(pb.Calls)
	outs := make([]Outcome, len(calls))
	known := make([]bool, len(calls))
	for _, d := range pb.Finished {
		if d.Index >= 0 && d.Index < len(calls) && !known[d.Index] {
			outs[d.Index], known[d.Index] = d.outcome(calls[d.Index]), true
		}
	}
	for k, d := range decisions {
		j := at[k]
		i := pb.pendingIndex(j)
		if i < 0 || known[i] {
			continue
		}
		switch d.Action {
		case Reject:
			msg := d.Message
			if msg == "" {
				msg = errfmt.CallRejected
			}
			outs[i] = Outcome{Index: i, Call: calls[i], Err: &rejectedError{msg: ErrCallRejected.Error() + ": " + msg}, Content: msg}
			known[i] = true
		case Respond:
			outs[i] = Outcome{Index: i, Call: calls[i], Content: d.Message}
			known[i] = true
		}
	}
	gates := make([]callGate, len(calls))
	skip := make([]bool, len(calls))
	for i := range calls {
		r, ok := run[i]
		if !ok {
			skip[i] = true
			continue
		}
		gates[i] = callGate{pinned: true, args: r.args, injected: r.injected}
		if r.edited {
			calls[i].Args = []byte(r.args) // the outcome's call holds the edit, as the transcript records it
		}
	}
	ran, prog, err := s.runCalls(ctx, calls, gates, skip)
	for i := range calls {
		if !skip[i] {
			outs[i] = ran[i]
			known[i] = prog[i] != callSkipped
		}
	}
	b := &Batch{}
	for i := range calls {
		if known[i] {
			outs[i].Index = i
			b.Outcomes = append(b.Outcomes, outs[i])
		}
	}
	return b, err
}

// plan checks decisions against the open turn's pending calls and returns
// the calls to run (accepted and edited, with their arguments).
func (ap *approval) plan(ot *pausedBatch, id, thread string, decisions []Decision) (map[int]runArgs, []int, error) {
	a := ap.s
	var pending []PendingCall
	if ot != nil && id != "" {
		pending = ot.Pending
	}
	if len(pending) == 0 {
		if len(decisions) > 0 {
			return nil, nil, &DecisionError{Reason: "the run has no pending call to decide on"}
		}
		return nil, nil, nil
	}
	byDigest := make(map[string]int, len(pending))
	for j, p := range pending {
		byDigest[ap.digest(id, thread, ot.pendingIndex(j), p, ot.binding(j))] = j
	}
	decided := make([]bool, len(pending))
	run := make(map[int]runArgs)
	at := make([]int, len(decisions))
	for k, d := range decisions {
		j, ok := byDigest[d.Digest]
		if !ok {
			return nil, nil, &DecisionError{CallID: d.CallID, Reason: "its digest matches no pending call of this interrupt"}
		}
		p := pending[j]
		if d.CallID != p.ID {
			return nil, nil, &DecisionError{CallID: d.CallID, Reason: fmt.Sprintf("its digest is that of call %q", p.ID)}
		}
		if decided[j] {
			return nil, nil, &DecisionError{CallID: d.CallID, Reason: "two decisions for one call"}
		}
		decided[j], at[k] = true, j
		if d.Action != Edit && len(bytes.TrimSpace(d.Args)) > 0 {
			return nil, nil, &DecisionError{CallID: d.CallID, Reason: fmt.Sprintf("action %q takes no arguments (use %q)", d.Action, Edit)}
		}
		i := ot.pendingIndex(j)
		if i < 0 {
			return nil, nil, &DecisionError{CallID: d.CallID, Reason: "the pending call is not in the interrupted turn"}
		}
		if (d.Action == Accept || d.Action == Edit) && ot.binding(j).Schema != ap.schemas[p.Tool] {
			// What the person saw and approved was checked against another
			// schema: running it now would run something else.
			return nil, nil, &DecisionError{CallID: d.CallID, Reason: fmt.Sprintf("tool %q's schema changed since the call was put to a person: reject it, or let the model call the tool again", p.Tool)}
		}
		switch d.Action {
		case Accept:
			run[i] = runArgs{args: string(p.Args)}
		case Edit:
			if len(bytes.TrimSpace(d.Args)) == 0 {
				return nil, nil, &DecisionError{CallID: d.CallID, Reason: "an edit needs the arguments to run"}
			}
			schema := a.compiled[p.Tool]
			if inj, ok := a.injection[p.Tool]; ok {
				// A reviewer can no more set an injected argument than the
				// model can; the edit is checked against the schema the
				// model sees, and the run injects the rest.
				if _, set := guard.DropInjected(string(d.Args), inj.names); len(set) > 0 {
					return nil, nil, &DecisionError{CallID: d.CallID, Reason: fmt.Sprintf("the edit sets %s, supplied by the program: remove it", strings.Join(set, ", "))}
				}
				schema = inj.model
			}
			r, err := checkArgs(p.Tool, schema, d.Args)
			if err != nil {
				return nil, nil, &DecisionError{CallID: d.CallID, Reason: fmt.Sprintf("the edited arguments do not match tool %q's schema", p.Tool), Err: err}
			}
			run[i] = runArgs{args: string(compactJSON(r.Args)), edited: true}
		case Reject, Respond:
		default:
			return nil, nil, &DecisionError{CallID: d.CallID, Reason: fmt.Sprintf("unknown action %q (want %q, %q, %q or %q)", d.Action, Accept, Edit, Reject, Respond)}
		}
	}
	for j, p := range pending {
		if !decided[j] {
			return nil, nil, &DecisionError{CallID: p.ID, Reason: fmt.Sprintf("pending call of %q has no decision", p.Tool)}
		}
	}
	return run, at, nil
}

// pendingIndex returns the index in the batch's calls of pending call j
// (calls of one batch may share an id), or -1 if the state is
// inconsistent.
func (ot *pausedBatch) pendingIndex(j int) int {
	if j < 0 || j >= len(ot.Pending) || len(ot.PendingAt) != len(ot.Pending) {
		return -1
	}
	i, p := ot.PendingAt[j], ot.Pending[j]
	if i < 0 || i >= len(ot.Calls) || ot.Calls[i].ID != p.ID || ot.Calls[i].Name != p.Tool {
		return -1
	}
	return i
}
