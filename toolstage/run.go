package toolstage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/toolguard/toolguard/errfmt"
	"github.com/toolguard/toolguard/guard"
)

// ErrUnknownTool is wrapped by the error of a call that names no tool of
// the stage. The model reads which tools exist; the batch's other calls
// run.
var ErrUnknownTool = errors.New("toolstage: unknown tool")

// Batch is what the tool stage made of one model turn's calls.
type Batch struct {
	// Outcomes holds one outcome per call that has one, in call order.
	Outcomes []Outcome
	// Interrupt is non-nil when calls await a person's decision
	// ([WithApproval]): they have no outcome yet; [Stage.Resume] gives
	// them one. It is plain data (JSON), signed with [WithInterruptKey].
	Interrupt *Interrupt
}

// Outcome is what one call came to.
type Outcome struct {
	// Index is the call's place in the calls given to [Stage.Run] (or, for
	// [Stage.Resume], in the interrupted batch's).
	Index int
	// Call is the call as the model sent it (ID, Name, Args), less the
	// values it sent for injected arguments, which were dropped; for a
	// call a person edited, with the edited arguments. It is what a
	// transcript records.
	Call guard.Call
	// Args is the JSON object the tool ran with, injected arguments
	// included (for the program only: never send it to the model); nil
	// when the tool did not run. A call that ran before a pause keeps it
	// without its injected values once resumed: those never travel in an
	// [Interrupt].
	Args json.RawMessage
	// Content is what the model reads: the tool's result, or the bounded
	// text of the error.
	Content string
	// Err is nil on success; else the tool's or a tool middleware's
	// error, a *validation.Error for arguments the tool stage rejects, an
	// [*ArgsRejectedError], an [*InjectError], one wrapping
	// [ErrUnknownTool], [ErrCallRejected], [ErrStopRun],
	// [ErrCallNotStarted] or [ErrCallInterrupted], or a [*ToolPanicError].
	Err error
	// Artifact is the [ToolResult]'s Artifact, for the program only.
	Artifact any
	// Direct is the ToolResult's Direct: the host may end its loop with
	// Content as the answer.
	Direct bool
}

// Run runs calls, one model turn's, through the tool stage: at most
// [WithMaxConcurrency] at a time, each through the tool middlewares with
// its injected arguments set, its arguments checked against its tool's
// schema unless the model stage validated exactly these ([Stage.Scope]),
// and panics recovered ([*ToolPanicError]). It returns the batch: an
// outcome per call, in call order, except the calls that wait for a
// person ([WithApproval]), which are in the batch's [Interrupt]. A pause
// is not an error: resume it with [Stage.Resume].
//
// A call of a tool the stage does not have gets an outcome wrapping
// [ErrUnknownTool] whose Content lists the tools; a call whose arguments
// are not a JSON object the schema accepts gets a *validation.Error whose
// Content is the feedback; the batch's other calls run. Run always returns
// the batch. A call whose error wraps [ErrStopRun], or whose stage
// panicked, ends the batch: calls not started never start
// ([ErrCallNotStarted]), running ones finish, and Run returns that error.
// When ctx is done, Run returns its error at once: calls not started never
// start, and those running are cut off ([ErrCallInterrupted]: their
// outcome is unknown, and a call whose tool returns an error wrapping
// ctx's is one of them).
//
// Run also reports the values the model stage dropped for injected
// arguments of calls that never reach it (a re-asked response's): Run
// with no calls reports only those.
func (s *Stage) Run(ctx context.Context, calls []guard.Call) (*Batch, error) {
	ctx = s.withEvents(ctx)
	record := guard.CallRecordFrom(ctx)
	s.reportUnclaimed(ctx, record, calls)
	if s.approval.gated() || len(s.injection) > 0 {
		calls = slices.Clone(calls) // forged values are dropped from it, not from the caller's
	}
	var skip []bool
	var gates []callGate
	var w waiting
	if s.approval.gated() {
		skip, gates, w = s.approval.judge(ctx, record, calls)
	}
	outs, prog, err := s.runCalls(ctx, calls, gates, skip)
	b := new(Batch)
	if err == nil && len(w.pending) > 0 {
		in, perr := s.approval.pause(ctx, calls, outs, prog, w)
		if perr != nil {
			err = perr
		}
		b.Interrupt = in
	}
	if err != nil && len(w.pending) > 0 {
		// The batch ended inside (ErrStopRun, a panic, its context, a pause
		// that could not be kept): the calls that waited never run.
		for _, i := range w.at {
			outs[i] = Outcome{Call: calls[i], Err: ErrCallNotStarted, Content: errfmt.CallNotStarted}
			prog[i] = callNotStarted
		}
	}
	n := 0 // the outcomes, in place
	for i := range calls {
		if prog[i] != callSkipped {
			outs[i].Index = i
			outs[n] = outs[i]
			n++
		}
	}
	b.Outcomes = outs[:n:n]
	return b, err
}

// Attach sets in's Host to host, the host loop's own state to resume from
// (toolguard's agent keeps its transcript there when it has no
// Checkpointer), and signs the interrupt again ([WithInterruptKey]). The
// stage never reads Host; a host reads it back after [Stage.Resume]
// verified the interrupt, or verifies it first with [Stage.Verify].
func (s *Stage) Attach(in *Interrupt, host json.RawMessage) {
	in.Host = host
	in.Signature = s.approval.sign(in)
}

// Verify reports whether in's signature is valid under the stage's
// [WithInterruptKey] (always true without a key: an unsigned interrupt
// proves nothing).
func (s *Stage) Verify(in *Interrupt) bool {
	return in != nil && s.approval.verify(in)
}

// stateFormat is the version of the encoded pausedBatch.
const stateFormat = 1

// interruptKey is the Checkpointer key of interrupt id's state.
func interruptKey(id string) string { return "toolstage/interrupt/" + id }

// pausedBatch is the state an interrupt resumes from: kept in the stage's
// Checkpointer, or carried in the interrupt.
type pausedBatch struct {
	Format    int           `json:"format"`
	Calls     []wireCall    `json:"calls"`
	Finished  []doneOutcome `json:"finished,omitempty"`
	Pending   []PendingCall `json:"pending"`
	PendingAt []int         `json:"pending_at"` // each pending call's index in Calls
	Bound     []binding     `json:"bound"`      // each pending call's binding (interrupt.go)
	// Claimed: a Resume took the interrupt (in a Checkpointer only);
	// Claim is that Resume's random stamp, which tells its claim from
	// another's when it reads its own write back.
	Claimed bool   `json:"claimed,omitempty"`
	Claim   string `json:"claim,omitempty"`
}

// wireCall is a guard.Call as JSON, its arguments as a string (they may
// not be JSON).
type wireCall struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Args string `json:"args"`
}

func toWireCalls(calls []guard.Call) []wireCall {
	out := make([]wireCall, len(calls))
	for i, c := range calls {
		out[i] = wireCall{ID: c.ID, Name: c.Name, Args: string(c.Args)}
	}
	return out
}

func fromWireCalls(calls []wireCall) []guard.Call {
	out := make([]guard.Call, len(calls))
	for i, c := range calls {
		out[i] = guard.Call{ID: c.ID, Name: c.Name, Args: []byte(c.Args)}
	}
	return out
}

// doneOutcome is the outcome of a call of a paused batch, as its state
// keeps it.
type doneOutcome struct {
	Index    int    `json:"index"`
	Args     string `json:"args,omitempty"` // ran with, injected values dropped
	Ran      bool   `json:"ran,omitempty"`
	Content  string `json:"content"`
	Err      string `json:"err,omitempty"`
	Failed   bool   `json:"failed,omitempty"`
	Rejected bool   `json:"rejected,omitempty"`
	Unknown  bool   `json:"unknown,omitempty"` // cut off, or panicked
	NotRun   bool   `json:"not_started,omitempty"`
	Direct   bool   `json:"direct,omitempty"`
}

// doneOutcome returns the record of outcome o of call index, without the
// values of injected arguments, which never rest in a state.
func (s *Stage) doneOutcome(index int, o Outcome) doneOutcome {
	d := doneOutcome{Index: index, Content: o.Content, Direct: o.Direct}
	if o.Args != nil {
		d.Ran, d.Args = true, string(o.Args)
		if inj, ok := s.injection[o.Call.Name]; ok {
			d.Args, _ = guard.DropInjected(d.Args, inj.names)
		}
	}
	if o.Err != nil {
		var panicked *ToolPanicError
		d.Failed, d.Err = true, o.Err.Error()
		d.Rejected = errors.Is(o.Err, ErrCallRejected)
		d.Unknown = errors.Is(o.Err, ErrCallInterrupted) || errors.As(o.Err, &panicked)
		d.NotRun = errors.Is(o.Err, ErrCallNotStarted)
	}
	return d
}

// outcome restores the outcome of call c (an error as its text; a
// rejection wrapping ErrCallRejected, an unknown outcome
// ErrCallInterrupted, a call that never started ErrCallNotStarted).
// Artifacts are not kept.
func (d doneOutcome) outcome(c guard.Call) Outcome {
	o := Outcome{Index: d.Index, Call: c, Content: d.Content, Direct: d.Direct}
	if d.Ran {
		o.Args = json.RawMessage(d.Args)
	}
	switch {
	case d.Rejected:
		o.Err = &rejectedError{msg: d.Err}
	case d.NotRun:
		o.Err = ErrCallNotStarted
	case d.Unknown && d.Err == ErrCallInterrupted.Error():
		o.Err = ErrCallInterrupted
	case d.Unknown:
		o.Err = fmt.Errorf("%w: %s", ErrCallInterrupted, d.Err)
	case d.Failed:
		o.Err = errors.New(d.Err)
	}
	return o
}
