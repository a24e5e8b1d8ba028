package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/strip"
)

// approvalConfig is what the options say about approval and checkpoints.
type approvalConfig struct {
	needs    []func(*ToolCall) bool
	tools    []string
	key      []byte
	cp       Checkpointer
	reinject []string // WithReinjectOnResume (approvalidentity.go)
}

// approval is an agent's approval gate and checkpointer.
type approval struct {
	needs []func(*ToolCall) bool // any true: the call waits
	tools map[string]bool        // WithApprovalFor
	key   []byte                 // nil: unsigned, plain SHA-256 digests
	cp    Checkpointer
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

// newApproval returns the agent's approval, or nil when neither approval
// nor a checkpointer is configured. It panics on a WithApprovalFor name
// that is not a tool of the agent.
func newApproval(c approvalConfig, tools map[string]Tool) *approval {
	if len(c.needs) == 0 && len(c.tools) == 0 && c.cp == nil {
		return nil
	}
	ap := &approval{needs: c.needs, key: c.key, cp: c.cp, schemas: make(map[string]string, len(tools))}
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

// runBatch runs a model turn's calls: all of them through runTools, unless
// some wait for approval; then the others run and it returns their steps
// with an *Interrupt. Calls of the answer tool ([WithOutputSchema]) never
// run: their slots of the batch are left empty for settleOutput, and an
// interrupt's state keeps them, unfinished, for Resume.
func (a *Agent) runBatch(ctx context.Context, s *session, turn int, res *Result, text string, calls []llms.ToolCall) (batch, error) {
	gated := a.approval.gated()
	if !gated && a.firstAnswer(calls) < 0 {
		return a.runTools(ctx, turn, res.Messages, calls, nil)
	}
	var pending []PendingCall
	var pendingAt []int
	var pendingValues [][]byte // the injected values each was judged with (boundValues)
	var rest []llms.ToolCall
	var restAt []int
	var restGates []callGate
	gates := make([]callGate, len(calls))
	for i, c := range calls {
		if a.isAnswer(c) {
			continue
		}
		if !gated {
			rest, restAt, restGates = append(rest, c), append(restAt, i), append(restGates, callGate{})
			continue
		}
		p, values, needs, err := a.pendingCall(ctx, c)
		if needs && err == nil {
			pending, pendingAt, pendingValues = append(pending, p), append(pendingAt, i), append(pendingValues, values)
			continue
		}
		if needs { // never shown to a person, so never to run
			gates[i] = callGate{id: c.ID, refused: true}
		}
		rest, restAt, restGates = append(rest, c), append(restAt, i), append(restGates, gates[i])
	}
	if len(pending) == 0 && len(rest) == len(calls) {
		return a.runTools(ctx, turn, res.Messages, calls, gates)
	}
	// A value the model sent for an injected argument of a pending call
	// is dropped from the turn (so from the interrupt's state and the
	// transcript) and reported now; runTools does the same for the rest.
	ledger := checkedLedger(ctx)
	for _, i := range pendingAt {
		c, forged := a.dropForged(ledger, calls[i])
		calls[i] = c
		if forged != nil {
			forged.Tool, forged.CallID = c.FunctionCall.Name, c.ID
			ReportEvent(ctx, *forged)
		}
	}
	b, err := a.runTools(ctx, turn, res.Messages, rest, restGates)
	for j, i := range restAt {
		calls[i] = rest[j] // as runTools left them: without forged values
	}
	if err != nil {
		return b.spread(restAt, len(calls)), err // cut short: the pending and answer calls never started
	}
	if len(pending) == 0 { // answer calls only were left out
		return b.spread(restAt, len(calls)), nil
	}
	in := &Interrupt{ID: newInterruptID(), Thread: guard.ThreadFrom(ctx)}
	bound := make([]binding, len(pending))
	for i := range pending {
		identity := a.approval.identity(in.ID, pendingAt[i], pending[i].Tool, pendingValues[i])
		bound[i] = binding{Schema: a.approval.schemas[pending[i].Tool], Identity: identity, Agent: a.approval.identityAgent(identity)}
		pending[i].Digest = a.approval.digest(in.ID, in.Thread, pendingAt[i], pending[i], bound[i])
		ReportEvent(ctx, guard.Event{Kind: guard.EventApprovalPending, Tool: pending[i].Tool, CallID: pending[i].ID})
	}
	ot := &openTurn{Number: turn, Text: text, Calls: calls, Interrupt: in.ID, Pending: pending, PendingAt: pendingAt, Bound: bound}
	for j, i := range restAt {
		// Injected values never travel in an interrupt (nor rest in a
		// checkpoint): the resumed Step.Arguments of such a call lack them.
		ot.Finished = append(ot.Finished, a.doneCall(i, b.steps[j], b.answers[j], b.direct == j))
	}
	st := runState{Format: stateFormat, Messages: res.Messages, Running: true, Turns: turn - 1, Turn: ot}
	if s != nil && s.cp != nil {
		if err := s.save(ctx, st); err != nil {
			return batch{steps: b.steps}, err
		}
	} else {
		data, err := json.Marshal(st)
		if err != nil {
			return batch{steps: b.steps}, fmt.Errorf("agent: encode interrupt state: %w", err)
		}
		in.State = data
	}
	in.Pending = pending
	in.Signature = a.approval.sign(in)
	return batch{steps: b.steps}, in
}

// spread returns b, the batch of some of a turn's n calls (at: their
// indexes in the turn), as a batch of the whole turn: the other calls'
// slots are empty (in a batch cut short, never started).
func (b batch) spread(at []int, n int) batch {
	out := batch{steps: make([]Step, n), answers: make([]string, n), direct: -1}
	for j, i := range at {
		out.steps[i], out.answers[i] = b.steps[j], b.answers[j]
	}
	if b.cut != nil {
		out.cut = make([]progress, n)
		for i := range out.cut {
			out.cut[i] = callNotStarted
		}
		for j, i := range at {
			out.cut[i] = b.cut[j]
		}
	}
	if b.direct >= 0 {
		out.direct = at[b.direct]
	}
	return out
}

// pendingCall reports whether c needs approval, and if so the pending
// call: its arguments as the tool stage would start with them, checked
// against the tool's schema, or the check's error; and the injected
// values it was judged with that a decision binds (boundValues), which
// never go into the PendingCall. A call that fails the
// check is not pending: it goes through the tool stage, which tells the
// model why and never runs it (even when a tool middleware makes its
// arguments valid: no person approved them).
func (a *Agent) pendingCall(ctx context.Context, c llms.ToolCall) (p PendingCall, values []byte, needs bool, err error) {
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
	if !a.approval.needsApproval(&ToolCall{ID: c.ID, Name: name, Args: judged, Tool: st.tool}) {
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
	return p, a.boundValues(name, args), true, nil
}

// callGate is what the approval gate says of one call of a batch. runTools
// is handed one per call, by the call's place in the batch: neither a
// call's id (a model may send one id twice) nor its *llms.FunctionCall (a
// response may hold one function under two calls) names it alone. The zero
// value: the call needs no approval.
type callGate struct {
	// id is the id of the call the verdict is for: runTools refuses a call
	// at that place with another id, whatever the verdict.
	id string
	// refused: the call needs approval and was never shown to a person
	// (its arguments fail the tool's schema, or its injected values could
	// not be set while it was judged); it goes through the tool stage,
	// which tells the model why and never runs it, whatever the tool
	// middlewares make of its arguments ([errNotApproved]).
	refused bool
	// approved: a person accepted or edited the call; it runs with
	// exactly its arguments, or not at all ([errApprovedArgsChanged]).
	approved bool
	// injected is, for an approved call of a tool with injected
	// arguments, its arguments with the injected values Resume set and
	// checked against the approval (approvalidentity.go): the values
	// checked are the values that run.
	injected string
}

// set reports whether the gate says anything of its call.
func (g callGate) set() bool { return g.refused || g.approved }

// gateAt returns the verdict of gates on the call c at place i of a batch:
// a verdict given for another id refuses the call.
func gateAt(gates []callGate, i int, c llms.ToolCall) callGate {
	if i >= len(gates) || !gates[i].set() {
		return callGate{}
	}
	if gates[i].id != c.ID {
		return callGate{id: c.ID, refused: true}
	}
	return gates[i]
}

// errNotApproved is the error of a call that needs approval and was never
// shown to a person, which a tool middleware gave valid arguments.
var errNotApproved = errors.New("agent: the call needs a person's approval and its arguments as the model sent them do not match the tool's schema; the tool did not run")

// errApprovedArgsChanged is the error of an approved call whose arguments
// a tool middleware replaced.
var errApprovedArgsChanged = errors.New("agent: a tool middleware changed the arguments a person approved; the tool did not run")

// errApprovedToolChanged is the error of an approved call whose Tool a
// tool middleware replaced.
var errApprovedToolChanged = errors.New("agent: a tool middleware changed the tool of a call a person approved; the tool did not run")

// approvedArgs is the innermost handler's check of a call a person
// approved (callGate.approved): it runs the tool the model called with
// exactly the approved arguments (and the injected values), or not at
// all. The arguments are validated as they are, never stripped or coerced
// again: if what they must meet changed since they were approved, the call
// fails with an [*ArgsRejectedError] (the model reads only that it could
// not run). It returns the arguments decoded.
func (a *Agent) approvedArgs(ctx context.Context, st *callState, call *ToolCall) (map[string]any, error) {
	if call.Tool != nil && !sameTool(call.Tool, st.tool) {
		return nil, errApprovedToolChanged
	}
	if string(call.Args) != st.stageArgs {
		return nil, errApprovedArgsChanged
	}
	res, err := checkArgsWith(call.Name, a.compiled[call.Name], call.Args, guard.ArgsOptions{Strip: strip.Off})
	if err != nil {
		rejected := &ArgsRejectedError{Tool: call.Name, Err: err}
		ReportEvent(ctx, guard.Event{Kind: guard.EventArgsRejected, Err: rejected}) // never the violations
		return nil, rejected
	}
	return res.Value, nil
}

// sameTool reports whether x and y are the same tool: equal interface
// values, or for a tool of a type == cannot compare, deeply equal ones.
func sameTool(x, y Tool) bool {
	if reflect.TypeOf(x) != reflect.TypeOf(y) {
		return false
	}
	if v := reflect.ValueOf(x); v.IsValid() && !v.Comparable() {
		return reflect.DeepEqual(x, y)
	}
	return x == y
}

// modelSchema returns the schema the model is sent for tool name.
func (a *Agent) modelSchema(name string) any {
	for _, d := range a.defs {
		if d.Function != nil && d.Function.Name == name {
			return d.Function.Parameters
		}
	}
	return nil
}
