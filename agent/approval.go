package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/guard"
)

// approvalConfig is what the options say about approval.
type approvalConfig struct {
	needs    []func(*ToolCall) bool
	tools    []string
	key      []byte
	reinject []string // WithReinjectOnResume (approvalidentity.go)
}

// approval is an agent's approval gate, a turn stage (see startRun), and
// what [Agent.Resume] needs of it: the keys that sign interrupts and bind
// decisions.
type approval struct {
	a     *Agent                 // the agent whose tools it gates
	needs []func(*ToolCall) bool // any true: the call waits
	tools map[string]bool        // WithApprovalFor
	key   []byte                 // nil: unsigned, plain SHA-256 digests
	// schemas is each tool's schema digest (schemaDigest), by sent name:
	// a decision on a call paused under another schema is refused.
	schemas map[string]string
	// The identity a decision binds (approvalidentity.go): the agent's own
	// key and its id, without an interrupt key; the injected arguments
	// WithReinjectOnResume leaves unbound.
	local    []byte
	localID  string
	reinject map[string]bool

	mu   sync.Mutex
	used map[string]bool // interrupts resumed by this agent, without a checkpointer
	fifo []string
}

// maxUsed bounds the interrupts an agent without a checkpointer remembers
// having resumed.
const maxUsed = 4096

// newApproval returns a's approval, or nil when neither approval nor a
// checkpointer is configured (an agent with a checkpointer resumes runs,
// paused or cut off, without a gate of its own). It panics on a
// WithApprovalFor name that is not a tool of the agent.
func newApproval(c approvalConfig, cp Checkpointer, a *Agent) *approval {
	tools := a.tools
	if len(c.needs) == 0 && len(c.tools) == 0 && cp == nil {
		return nil
	}
	ap := &approval{a: a, needs: c.needs, key: c.key, schemas: make(map[string]string, len(tools))}
	for name, t := range tools {
		ap.schemas[name] = schemaDigest(t)
	}
	ap.setupIdentity(c.reinject, tools) // panics on a name no tool injects
	for _, name := range c.tools {
		if tools[name] == nil {
			names := make([]string, 0, len(tools))
			for n := range tools {
				names = append(names, n)
			}
			slices.Sort(names)
			panic(fmt.Sprintf("agent: New: WithApprovalFor(%q): the agent has no tool of that name (its tools: %q)", name, names))
		}
		if ap.tools == nil {
			ap.tools = make(map[string]bool)
		}
		ap.tools[name] = true
	}
	return ap
}

// gated reports whether the agent has an approval gate.
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

// startRun implements [turnStage]: the approval gate's hooks for one run.
// Before a batch it takes out of it the calls of the agent's tools that
// need approval, to wait for a person, and refuses those that need it but
// cannot be shown to one; after the batch, whose other calls ran, it
// pauses the run with an [*Interrupt]: the state to resume from is kept by
// a stage that keeps state (checkpoints), else carried in the interrupt.
// A resumed turn was judged before it paused, and is left alone.
func (ap *approval) startRun(_ context.Context, r *run) (stageRun, error) {
	g := &gateRun{ap: ap, r: r}
	return stageRun{beforeBatch: g.judge, afterBatch: g.pause}, nil
}

// gateRun is the approval gate in one run: the current turn's calls that
// wait for a person.
type gateRun struct {
	ap *approval
	r  *run
	// pending are the calls that wait, at their places in the turn
	// (pendingAt), with the injected values each was judged with (values,
	// see boundValues).
	pending   []PendingCall
	pendingAt []int
	values    [][]byte
}

// judge is the gate's beforeBatch hook.
func (g *gateRun) judge(ctx context.Context, t *turn) error {
	g.pending, g.pendingAt, g.values = nil, nil, nil
	if t.resumed {
		return nil
	}
	for i, c := range t.calls {
		p, values, needs, err := g.ap.pendingCall(ctx, c)
		switch {
		case needs && err == nil:
			g.pending, g.pendingAt, g.values = append(g.pending, p), append(g.pendingAt, i), append(g.values, values)
			t.wait(i)
		case needs: // never shown to a person, so never to run
			t.refuse(i, errNotApproved)
		}
	}
	// A value the model sent for an injected argument of a pending call
	// is dropped from the turn (so from the interrupt's state and the
	// transcript) and reported now; the tool stage does the same for the
	// calls it runs.
	for _, i := range g.pendingAt {
		c, forged := g.ap.a.dropForged(g.r.record, t.calls[i])
		t.calls[i] = c
		if forged != nil {
			forged.Tool, forged.CallID = c.FunctionCall.Name, c.ID
			ReportEvent(ctx, *forged)
		}
	}
	return nil
}

// pause is the gate's afterBatch hook: a turn with calls that wait ends
// the run with an *Interrupt, once the state to resume from is kept.
func (g *gateRun) pause(ctx context.Context, t *turn) error {
	if len(g.pending) == 0 {
		return nil
	}
	ap, pending := g.ap, g.pending
	in := &Interrupt{ID: newInterruptID(), Thread: guard.ThreadFrom(ctx)}
	bound := make([]binding, len(pending))
	for i := range pending {
		identity := ap.identity(in.ID, g.pendingAt[i], pending[i].Tool, g.values[i])
		bound[i] = binding{Schema: ap.schemas[pending[i].Tool], Identity: identity, Agent: ap.identityAgent(identity)}
		pending[i].Digest = ap.digest(in.ID, in.Thread, g.pendingAt[i], pending[i], bound[i])
		ReportEvent(ctx, guard.Event{Kind: guard.EventApprovalPending, Tool: pending[i].Tool, CallID: pending[i].ID})
	}
	ot := &openTurn{Number: t.number, Text: t.text, Calls: t.calls, Interrupt: in.ID, Pending: pending, PendingAt: g.pendingAt, Bound: bound}
	for i := range t.calls {
		if t.plan(i) == callRuns {
			// Injected values never travel in an interrupt (nor rest in a
			// checkpoint): the resumed Step.Arguments of such a call lack them.
			ot.Finished = append(ot.Finished, ap.a.doneCall(i, t.batch.steps[i], t.batch.answers[i], t.batch.direct == i))
		}
	}
	st := runState{Format: stateFormat, Messages: g.r.res.Messages, Running: true, Turns: t.number - 1, Turn: ot}
	in.Pending = pending
	in.Signature = ap.sign(in)
	kept, err := g.r.keep(ctx, st, in)
	if err != nil {
		return err
	}
	if !kept {
		data, err := json.Marshal(st)
		if err != nil {
			return fmt.Errorf("agent: encode interrupt state: %w", err)
		}
		in.State = data
		in.Signature = ap.sign(in)
	}
	return in
}

// pendingCall reports whether c needs approval, and if so the pending
// call: its arguments as the tool stage would start with them, checked
// against the tool's schema, or the check's error; and the injected
// values it was judged with that a decision binds (boundValues), which
// never go into the PendingCall. A call that fails the
// check is not pending: it goes through the tool stage, which tells the
// model why and never runs it (even when a tool middleware makes its
// arguments valid: no person approved them).
func (ap *approval) pendingCall(ctx context.Context, c llms.ToolCall) (p PendingCall, values []byte, needs bool, err error) {
	a := ap.a
	if c.FunctionCall == nil || a.tools[c.FunctionCall.Name] == nil {
		return PendingCall{}, nil, false, nil
	}
	name := c.FunctionCall.Name
	modelArgs := c.FunctionCall.Arguments
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
var errNotApproved = errors.New("agent: the call needs a person's approval and its arguments as the model sent them do not match the tool's schema; the tool did not run")

// modelSchema returns the schema the model is sent for tool name.
func (a *Agent) modelSchema(name string) any {
	for _, d := range a.defs {
		if d.Function != nil && d.Function.Name == name {
			return d.Function.Parameters
		}
	}
	return nil
}
