package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/toolguard/toolguard/guard"
)

// claim records that the interrupt id is being resumed, for an agent
// without a checkpointer; false if it already was.
func (ap *approval) claim(id string) bool {
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

// Resume continues a run that returned an [*Interrupt], with a person's
// decisions on its pending calls, and returns the run's *[Result] as
// [Agent.Run] does: Messages is the whole transcript, Steps the calls of
// the interrupted turn (those finished before the pause included, their
// errors restored as text) and of the turns after it.
//
// Every pending call needs exactly one decision, matched by its digest
// (never by position) and call id. A decision that matches no pending
// call, a pending call without one, two decisions for one call, an unknown
// action, arguments given to any action but Edit, or an Edit whose
// arguments fail the tool's schema: Resume returns a *[DecisionError]
// ([ErrDecisionRefused]), nothing runs and the interrupt can be resumed
// again. Accepted and edited calls then run through the tool stage — the
// tool middlewares, the schema check, the same path as a call of Run — and
// an edit keeps the call's tool; the transcript records an edited call with
// the arguments that ran. A tool middleware may refuse an approved call
// but not change it: one whose arguments or Tool it replaces fails, and
// its tool does not run; and approved arguments are validated as they
// are, never stripped or coerced again. Rejected calls never run and the
// model reads the message; a response is the call's result and the tool
// never runs. Calls
// of the turn that finished before the pause never run again. The resumed
// run is the same run for [middleware.ToolCallLimit] and
// [middleware.ModelCallLimit]: their run limits count the calls it made
// before the pause, a model call per model turn and the tool calls of its
// transcript ([guard.WithResumedRun]).
//
// An approval runs as the identity it was judged for, and against the
// schema it was judged against. Resume sets an accepted or edited call's
// injected arguments ([Inject]) from its own context, once, and refuses
// the decision ([DecisionError], nothing runs) when they differ from the
// values the approval gate saw — the reviewer resuming alice's call from
// their own request would run it as themselves — unless
// [WithReinjectOnResume] names them; without [WithInterruptKey], only the
// Agent value that paused can check them. It refuses an accept or an edit
// too when the tool's schema has changed since the pause.
//
// An interrupt can be resumed once. With a [Checkpointer] and a thread,
// the state is the thread's (the interrupt need only be the thread's
// current one: a replayed, stale or other thread's interrupt is refused
// with [ErrInterruptRefused], and so is an unsigned interrupt of a run
// without a thread, which carries a state of its own), and two replicas
// resuming it at once cannot both run it. Without one, the interrupt
// carries the state and this agent refuses one it has resumed before (it
// remembers the last 4096); another process, or this one past that many,
// cannot tell, so use a Checkpointer when interrupts may be resumed twice,
// and [WithInterruptKey] when they travel through clients.
//
// With a nil interrupt, Resume continues the thread's unfinished run from
// the checkpointer: a run cut off mid-way goes on from its last save
// without running finished calls again (a call that was running when it
// stopped is not run again either: its Step.Err is [ErrCallInterrupted]);
// a run awaiting decisions takes them as with its interrupt. It returns
// [ErrNothingToResume] when there is none.
func (a *Agent) Resume(ctx context.Context, in *Interrupt, decisions ...Decision) (*Result, error) {
	ctx = ownThread(ctx) // a sub-agent's Resume is not on its caller's thread (RunMessages)
	res, err := a.resume(ctx, in, decisions)
	if errors.Is(err, ErrDecisionRefused) || errors.Is(err, ErrInterruptRefused) {
		e := guard.Event{Kind: guard.EventApprovalRefused, Middleware: "agent", Err: err}
		var de *DecisionError
		if errors.As(err, &de) {
			e.CallID = de.CallID
		}
		if a.events != nil {
			ctx = guard.WithEvents(ctx, a.events)
		}
		guard.Report(ctx, e) // logged at Warn without a handler
	}
	return res, err
}

func (a *Agent) resume(ctx context.Context, in *Interrupt, decisions []Decision) (*Result, error) {
	ap := a.approval
	// The resumed run is on the interrupt's thread (none for a run that
	// had none: its state is in the interrupt, whatever thread ctx names,
	// though unsigned it is refused where ctx names a checkpointed
	// thread), else on ctx's.
	thread := guard.ThreadFrom(ctx)
	ctxThread := thread
	if in != nil {
		if in.Thread != "" && thread != "" && thread != in.Thread {
			return nil, fmt.Errorf("%w: it belongs to thread %q, not %q", ErrInterruptRefused, in.Thread, thread)
		}
		thread = in.Thread
		ctx = guard.WithThread(ctx, thread)
	}
	if ap == nil {
		if in == nil {
			return nil, ErrNothingToResume
		}
		return nil, fmt.Errorf("%w: the agent has no approval configured", ErrInterruptRefused)
	}
	if in != nil && in.Thread == "" && ctxThread != "" && a.checkpoints != nil && ap.key == nil {
		// The thread's state is in the checkpointer; an unsigned state
		// carried by the interrupt is the client's to forge.
		return nil, fmt.Errorf("%w: an unsigned interrupt of a run without a thread cannot be resumed on thread %q, whose state the checkpointer keeps", ErrInterruptRefused, ctxThread)
	}
	if in != nil && !ap.verify(in) {
		return nil, fmt.Errorf("%w: its signature does not verify", ErrInterruptRefused)
	}
	var s *session // the thread's checkpoint, if a Checkpointer keeps it
	var st runState
	switch {
	case a.checkpoints != nil && thread != "":
		s = &session{cp: a.checkpoints.cp, thread: thread}
		saved, err := s.load(ctx)
		if err != nil {
			return nil, err
		}
		if saved == nil || !saved.Running {
			if in != nil {
				return nil, fmt.Errorf("%w: thread %q has no run awaiting it (already resumed?)", ErrInterruptRefused, thread)
			}
			return nil, fmt.Errorf("%w (thread %q)", ErrNothingToResume, thread)
		}
		st = *saved
		if in != nil && (st.Turn == nil || st.Turn.Interrupt != in.ID) {
			return nil, fmt.Errorf("%w: it is not thread %q's pending interrupt (already resumed, or replaced)", ErrInterruptRefused, thread)
		}
	case in == nil:
		return nil, ErrNothingToResume
	default:
		if err := json.Unmarshal(in.State, &st); err != nil || st.Format != stateFormat || st.Turn == nil || st.Turn.Interrupt != in.ID {
			return nil, fmt.Errorf("%w: its state is missing or malformed", ErrInterruptRefused)
		}
	}
	id := ""
	if st.Turn != nil {
		id = st.Turn.Interrupt
	}
	run, at, err := ap.plan(st.Turn, id, thread, decisions)
	if err != nil {
		return nil, err
	}
	// A context already done would claim the interrupt and run nothing:
	// the approved calls would be lost (never run, or with a checkpointer
	// marked interrupted).
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(run) > 0 {
		// The approved calls run as the identity they were judged for, with
		// the injected values checked here (approvalidentity.go).
		if err := ap.injectApproved(ctx, st.Turn, id, thread, run); err != nil {
			return nil, err
		}
	}
	// Claim the interrupt before anything runs: rejected and answered calls
	// are finished; accepted and edited ones are about to run (cut off
	// while they run, they are never run again).
	if st.Turn != nil && id != "" {
		st.Turn = st.Turn.decided(decisions, at)
	}
	if s != nil {
		if err := s.save(ctx, st); err != nil {
			if errors.Is(err, ErrCheckpointConflict) {
				return nil, fmt.Errorf("%w: another resume of thread %q came first: %w", ErrInterruptRefused, thread, err)
			}
			return nil, err
		}
	} else if !ap.claim(id) {
		return nil, fmt.Errorf("%w: it was already resumed", ErrInterruptRefused)
	}
	from := &resumeFrom{state: st}
	if s != nil {
		from.version = s.version
	}
	// The saved turn keeps the model's arguments; the continued one runs
	// the approved ones.
	from.state.Turn, from.pins = pinned(st.Turn, run)
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

// plan checks decisions against the open turn's pending calls and returns
// the calls to run (accepted and edited, with their arguments).
func (ap *approval) plan(ot *openTurn, id, thread string, decisions []Decision) (map[int]runArgs, []int, error) {
	a := ap.a
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

// pendingIndex returns the index in the turn's calls of pending call j
// (calls of one turn may share an id), or -1 if the state is inconsistent.
func (ot *openTurn) pendingIndex(j int) int {
	if j < 0 || j >= len(ot.Pending) || len(ot.PendingAt) != len(ot.Pending) {
		return -1
	}
	i, p := ot.PendingAt[j], ot.Pending[j]
	if i < 0 || i >= len(ot.Calls) || ot.Calls[i].ID != p.ID || ot.Calls[i].FunctionCall == nil || ot.Calls[i].FunctionCall.Name != p.Tool {
		return -1
	}
	return i
}

// decided returns the open turn once its decisions are taken: the
// interrupt resumed, rejected and answered calls finished. at maps each
// decision to its pending call's index (plan's result).
func (ot *openTurn) decided(decisions []Decision, at []int) *openTurn {
	next := *ot
	next.Interrupt, next.Pending, next.PendingAt, next.Bound = "", nil, nil, nil
	next.Finished = slices.Clone(ot.Finished)
	for k, d := range decisions {
		if d.Action != Reject && d.Action != Respond {
			continue
		}
		p := ot.Pending[at[k]]
		i := ot.pendingIndex(at[k])
		dc := doneCall{Index: i, CallID: p.ID, Tool: p.Tool, Arguments: string(p.Args),
			ModelArguments: ot.Calls[i].FunctionCall.Arguments}
		if d.Action == Reject {
			msg := d.Message
			if msg == "" {
				msg = defaultRejection
			}
			dc.Failed, dc.Rejected, dc.Err, dc.Answer = true, true, ErrCallRejected.Error()+": "+msg, msg
		} else {
			dc.Result, dc.Answer = d.Message, d.Message
		}
		next.Finished = append(next.Finished, dc)
	}
	return &next
}

// pinned returns ot as its continued run plays it — an edit's arguments
// in place of the model's, as the transcript records them — and the gates
// of the calls to run (run: accepted and edited, by index in ot.Calls),
// pinned to their arguments. ot itself is not modified.
func pinned(ot *openTurn, run map[int]runArgs) (*openTurn, map[int]callGate) {
	if len(run) == 0 {
		return ot, nil
	}
	next := *ot
	next.Calls = slices.Clone(ot.Calls)
	pins := make(map[int]callGate, len(run))
	for i, args := range run {
		c := ot.Calls[i]
		pins[i] = callGate{pinned: true, args: args.args, model: c.FunctionCall.Arguments, injected: args.injected}
		if args.edited {
			fc := *c.FunctionCall
			fc.Arguments = args.args
			next.Calls[i].FunctionCall = &fc
		}
	}
	return &next, pins
}
