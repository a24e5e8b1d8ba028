package toolstage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/toolguard/toolguard/guard"
)

// approvalConfig is what the options say about approval.
type approvalConfig struct {
	needs    []func(*ToolCall) bool
	tools    []string
	key      []byte
	reinject []string // WithReinjectOnResume (approvalidentity.go)
}

// approval is a stage's approval gate, and what [Stage.Resume] needs of
// it: the keys that sign interrupts and bind decisions.
type approval struct {
	s     *Stage                 // the stage whose tools it gates
	needs []func(*ToolCall) bool // any true: the call waits
	tools map[string]bool        // WithApprovalFor
	key   []byte                 // nil: unsigned, plain SHA-256 digests
	// schemas is each tool's schema digest (schemaDigest), by sent name:
	// a decision on a call paused under another schema is refused.
	schemas map[string]string
	// The identity a decision binds (identity.go): the stage's own key and
	// its id, without an interrupt key; the injected arguments
	// WithReinjectOnResume leaves unbound.
	local    []byte
	localID  string
	reinject map[string]bool

	mu   sync.Mutex
	used map[string]bool // interrupts resumed by this stage, without a checkpointer
	fifo []string
}

// maxUsed bounds the interrupts a stage without a checkpointer remembers
// having resumed.
const maxUsed = 4096

// newApproval returns s's approval gate. It panics on a WithApprovalFor
// name that is not a tool of the stage.
func newApproval(c approvalConfig, s *Stage) *approval {
	tools := s.tools
	ap := &approval{s: s, needs: c.needs, key: c.key, schemas: make(map[string]string, len(tools))}
	for name, t := range tools {
		ap.schemas[name] = schemaDigest(t)
	}
	ap.setupIdentity(c.reinject, tools) // panics on a name no tool injects
	for _, name := range c.tools {
		if tools[name] == nil {
			panic(fmt.Sprintf("toolstage: New: WithApprovalFor(%q): the stage has no tool of that name (its tools: %q)", name, s.names))
		}
		if ap.tools == nil {
			ap.tools = make(map[string]bool)
		}
		ap.tools[name] = true
	}
	return ap
}

// gated reports whether the stage has an approval gate.
func (ap *approval) gated() bool {
	return ap != nil && (len(ap.needs) > 0 || len(ap.tools) > 0)
}

func (ap *approval) needsApproval(call *ToolCall) bool {
	if ap.tools[call.Name] {
		return true
	}
	for _, f := range ap.needs {
		c := *call
		c.Args = slices.Clone(call.Args)
		if f(&c) {
			return true
		}
	}
	return false
}

// judge returns, for each call of a batch, whether it waits for a person
// (skip) and what the tool stage must do with the others (gates: a call
// that needs approval but cannot be shown to one is refused), and the
// pending calls with their places and the injected values each was judged
// with. A value the model sent for an injected argument of a pending call
// is dropped from calls (so from the interrupt's state) and reported now;
// the tool stage does the same for the calls it runs.
func (ap *approval) judge(ctx context.Context, record *guard.CallRecord, calls []guard.Call) (skip []bool, gates []callGate, w waiting) {
	for i, c := range calls {
		p, values, needs, err := ap.pendingCall(ctx, c)
		switch {
		case needs && err == nil:
			if skip == nil {
				skip = make([]bool, len(calls))
			}
			skip[i] = true
			w.pending, w.at, w.values = append(w.pending, p), append(w.at, i), append(w.values, values)
		case needs: // never shown to a person, so never to run
			if gates == nil {
				gates = make([]callGate, len(calls))
			}
			gates[i].refuse = errNotApproved
		}
	}
	for _, i := range w.at {
		c, forged := ap.s.dropForged(record, calls[i])
		calls[i] = c
		if forged != nil {
			forged.Tool, forged.CallID = c.Name, c.ID
			ReportEvent(ctx, *forged)
		}
	}
	return skip, gates, w
}

// waiting are the calls of a batch that wait for a person.
type waiting struct {
	pending []PendingCall
	at      []int    // each one's place in the batch
	values  [][]byte // the injected values each was judged with (boundValues)
}

// pause returns the interrupt of a batch whose calls w wait, the others
// having run (outs, prog): its state, with those outcomes, is kept in the
// stage's Checkpointer, or else carried in the interrupt.
func (ap *approval) pause(ctx context.Context, calls []guard.Call, outs []Outcome, prog []progress, w waiting) (*Interrupt, error) {
	s, pending := ap.s, w.pending
	in := &Interrupt{ID: newInterruptID(), Thread: guard.ThreadFrom(ctx)}
	bound := make([]binding, len(pending))
	for i := range pending {
		identity := ap.identity(in.ID, w.at[i], pending[i].Tool, w.values[i])
		bound[i] = binding{Schema: ap.schemas[pending[i].Tool], Identity: identity, Agent: ap.identityAgent(identity)}
		pending[i].Digest = ap.digest(in.ID, in.Thread, w.at[i], pending[i], bound[i])
		ReportEvent(ctx, guard.Event{Kind: guard.EventApprovalPending, Tool: pending[i].Tool, CallID: pending[i].ID})
	}
	pb := &pausedBatch{Format: stateFormat, Calls: toWireCalls(calls), Pending: pending, PendingAt: w.at, Bound: bound}
	for i := range calls {
		if prog[i] == callFinished {
			// Injected values never travel in an interrupt (nor rest in a
			// checkpoint): the resumed outcome's Args of such a call lack them.
			pb.Finished = append(pb.Finished, s.doneOutcome(i, outs[i]))
		}
	}
	in.Pending = pending
	data, err := json.Marshal(pb)
	if err != nil {
		return nil, fmt.Errorf("toolstage: encode interrupt state: %w", err)
	}
	if s.cp != nil {
		// The key is the interrupt's random id: a state stored there at
		// version 1 that is byte for byte this one is this save's.
		saved, err := saveOwn(ctx, s.cp, interruptKey(in.ID), 0, data)
		if err == nil && !saved {
			err = errors.New("an interrupt of that id is stored already")
		}
		if err != nil {
			return nil, fmt.Errorf("toolstage: keep interrupt %s: %w", in.ID, err)
		}
	} else {
		in.State = data
	}
	in.Signature = ap.sign(in)
	return in, nil
}

// pendingCall reports whether c needs approval, and if so the pending
// call: its arguments as the tool stage would start with them, checked
// against the tool's schema, or the check's error; and the injected
// values it was judged with that a decision binds (boundValues), which
// never go into the PendingCall. A call that fails the
// check is not pending: it goes through the tool stage, which tells the
// model why and never runs it (even when a tool middleware makes its
// arguments valid: no person approved them).
func (ap *approval) pendingCall(ctx context.Context, c guard.Call) (p PendingCall, values []byte, needs bool, err error) {
	a := ap.s
	if !ap.gated() || a.tools[c.Name] == nil {
		return PendingCall{}, nil, false, nil
	}
	name := c.Name
	modelArgs := string(c.Args)
	inj, injects := a.injection[name]
	if injects {
		// A value the model sent for an injected argument never reaches a
		// reviewer; it is reported when the call goes through the tool
		// stage (dropForged).
		modelArgs, _ = guard.WithholdInjected(modelArgs, inj.names)
	}
	st := &callState{
		info:      CallInfo{ID: c.ID, Tool: name, Thread: guard.ThreadFrom(ctx), Attempt: 1},
		modelArgs: modelArgs,
		tool:      a.tools[name],
		out:       &callDone{},
	}
	// needs sees the injected values (a rule may depend on the user); the
	// injectors see the call in their context, as in the tool stage.
	args, err := a.prepareArgs(withCallState(ctx, st), st)
	if err != nil {
		// Whether it needs approval cannot be judged: fail closed. The
		// tool stage fails the call and reports why; should the injector
		// succeed there, the gate still never lets the call run.
		return PendingCall{}, nil, true, err
	}
	// The gate judges the arguments the tool would run with: checked
	// (stripped, coerced) when they pass, as sent when they fail (such a
	// call never runs unless a tool middleware mends it).
	r, err := checkArgsWith(name, a.compiled[name], []byte(args), a.coercing(name))
	judged := json.RawMessage(args)
	if err == nil {
		judged = r.Args
	}
	if !ap.needsApproval(&ToolCall{ID: c.ID, Name: name, Args: judged, Tool: st.tool}) {
		return PendingCall{}, nil, false, nil
	}
	if err != nil {
		return PendingCall{}, nil, true, err
	}
	shown := r.Args
	if injects {
		// Injected values never travel in an interrupt: Resume's run
		// through prepareArgs injects them again.
		kept, _ := guard.DropInjected(string(r.Args), inj.names)
		shown = []byte(kept)
	}
	p = PendingCall{ID: c.ID, Tool: name, Args: compactJSON(shown), Schema: a.modelSchema(name)}
	return p, ap.boundValues(name, args), true, nil
}

// errNotApproved is the error of a call that needs approval and was never
// shown to a person, which a tool middleware gave valid arguments.
var errNotApproved = errors.New("toolstage: the call needs a person's approval and its arguments as the model sent them do not match the tool's schema; the tool did not run")

// modelSchema returns the schema the model is offered for tool name.
func (s *Stage) modelSchema(name string) any {
	return parameters(s.schemas[name])
}
