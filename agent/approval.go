package agent

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/internal/canonjson"
	"github.com/toolguard/toolguard/internal/exactjson"
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

// Interrupt is what a run that waits for a person returns as its error
// (errors.As): the calls to decide on, and what [Agent.Resume] needs to go
// on. It is plain data: marshal it to JSON, keep it anywhere, and resume it
// in another process on another replica of the same agent.
type Interrupt struct {
	// ID identifies this pause: random, never reused. Every pending call's
	// digest binds it, so a decision made on one interrupt cannot be
	// replayed on another.
	ID string `json:"id"`
	// Thread is the thread id of the run ([guard.WithThread]), "" if
	// none.
	Thread string `json:"thread,omitempty"`
	// Pending lists the calls awaiting a decision, in call order.
	Pending []PendingCall `json:"pending"`
	// State is the run's state to resume from, opaque; empty when the
	// agent keeps it in its [Checkpointer]. It holds the run's transcript:
	// the signature protects it from change, not from being read, so keep
	// the interrupt server-side (or use a Checkpointer) when a client must
	// not read the conversation.
	State json.RawMessage `json:"state,omitempty"`
	// Signature is the HMAC of everything above under the key of
	// [WithInterruptKey]; "" without one.
	Signature string `json:"signature,omitempty"`
}

// Error says how many calls wait.
func (in *Interrupt) Error() string {
	return fmt.Sprintf("agent: run interrupted: %d tool call(s) await a decision", len(in.Pending))
}

// PendingCall is a tool call waiting for a person's [Decision].
type PendingCall struct {
	// ID is the call's id; Tool the tool's name as sent to the model.
	ID   string `json:"id"`
	Tool string `json:"tool"`
	// Args is the JSON object the call would run with, validated against
	// the tool's schema (with empty values stripped, and the default
	// coercions applied, where that fixed it).
	Args json.RawMessage `json:"args"`
	// Schema is the tool's schema as sent to the model, for a reviewer's
	// form.
	Schema any `json:"schema,omitempty"`
	// Digest binds a decision to this interrupt, thread, call (its place
	// in the turn, tool and id) and exactly these arguments; copy it into
	// the Decision.
	Digest string `json:"digest"`
}

// Action is what a person decided for a pending call.
type Action string

// The actions of a [Decision].
const (
	// Accept runs the call with its pending arguments.
	Accept Action = "accept"
	// Edit runs the call with Decision.Args instead, once they pass the
	// tool's schema.
	Edit Action = "edit"
	// Reject never runs the call; the model reads Decision.Message.
	Reject Action = "reject"
	// Respond never runs the call; Decision.Message is its result, as if
	// the tool had returned it.
	Respond Action = "respond"
)

// Decision is a person's answer to one [PendingCall].
type Decision struct {
	// CallID is the pending call's ID.
	CallID string `json:"call_id"`
	// Action is Accept, Edit, Reject or Respond.
	Action Action `json:"action"`
	// Args is, for Edit only, the JSON object of arguments to run instead.
	Args json.RawMessage `json:"args,omitempty"`
	// Message is, for Reject, what the model reads (a default when "");
	// for Respond, the call's result.
	Message string `json:"message,omitempty"`
	// Digest is the PendingCall's Digest.
	Digest string `json:"digest"`
}

// ErrDecisionRefused is wrapped by the error of [Agent.Resume] when the
// decisions do not fit the interrupt's pending calls, an edit's arguments
// fail the tool's schema, the tool's schema changed since the pause, or
// the Resume's context gives a call other injected values than it was
// approved with: nothing ran, and the interrupt can be resumed again with
// corrected decisions (or from the right context).
var ErrDecisionRefused = errors.New("agent: decision refused")

// ErrInterruptRefused is wrapped by the error of [Agent.Resume] when the
// interrupt itself cannot be resumed: its signature does not verify, its
// state is malformed, it belongs to another thread, or it was already
// resumed (or replaced by a later run on the thread). Nothing ran.
var ErrInterruptRefused = errors.New("agent: interrupt refused")

// ErrCallRejected is wrapped by the Step.Err of a call a person rejected.
var ErrCallRejected = errors.New("agent: a person rejected the call")

// DecisionError is the error of [Agent.Resume] for decisions it refuses
// (it matches [ErrDecisionRefused] with errors.Is). Nothing ran.
type DecisionError struct {
	// CallID is the call concerned, "" when the refusal is about the
	// whole set.
	CallID string
	// Reason says what is wrong, for the person.
	Reason string
	// Err is, for an invalid edit, the *validation.Error naming every
	// violation; else nil.
	Err error
}

func (e *DecisionError) Error() string {
	msg := "agent: decision refused"
	if e.CallID != "" {
		msg += fmt.Sprintf(" (call %q)", e.CallID)
	}
	msg += ": " + e.Reason
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns Err.
func (e *DecisionError) Unwrap() error { return e.Err }

// Is reports whether target is ErrDecisionRefused.
func (e *DecisionError) Is(target error) bool { return target == ErrDecisionRefused }

// rejectedError is the Step.Err of a rejected call.
type rejectedError struct{ msg string }

func (e *rejectedError) Error() string        { return e.msg }
func (e *rejectedError) Is(target error) bool { return target == ErrCallRejected }

// defaultRejection is what the model reads of a call rejected without a
// message.
const defaultRejection = "A person reviewing this call rejected it; it did not run."

// runBatch runs a model turn's calls: all of them through runTools, unless
// some wait for approval; then the others run and it returns their steps
// with an *Interrupt. Calls of the answer tool ([WithOutputSchema]) never
// run: their slots of the batch are left empty for settleOutput, and an
// interrupt's state keeps them, unfinished, for Resume.
func (a *Agent) runBatch(ctx context.Context, s *session, turn int, res *Result, text string, calls []llms.ToolCall) (batch, error) {
	gated := a.approval.gated()
	if !gated && a.firstAnswer(calls) < 0 {
		return a.runTools(ctx, turn, res.Messages, calls)
	}
	var pending []PendingCall
	var pendingAt []int
	var pendingValues [][]byte // the injected values each was judged with (boundValues)
	var rest []llms.ToolCall
	var restAt []int
	var unapproved map[*llms.FunctionCall]approvalGate
	for i, c := range calls {
		if a.isAnswer(c) {
			continue
		}
		if !gated {
			rest, restAt = append(rest, c), append(restAt, i)
			continue
		}
		p, values, needs, err := a.pendingCall(ctx, c)
		if needs && err == nil {
			pending, pendingAt, pendingValues = append(pending, p), append(pendingAt, i), append(pendingValues, values)
			continue
		}
		if needs { // never shown to a person, so never to run (see gateKey)
			if unapproved == nil {
				unapproved = make(map[*llms.FunctionCall]approvalGate)
			}
			unapproved[c.FunctionCall] = gateUnapproved
		}
		rest, restAt = append(rest, c), append(restAt, i)
	}
	if unapproved != nil {
		ctx = context.WithValue(ctx, gateKey{}, unapproved)
	}
	if len(pending) == 0 && len(rest) == len(calls) {
		return a.runTools(ctx, turn, res.Messages, calls)
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
	b, err := a.runTools(ctx, turn, res.Messages, rest)
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

// approvalGate is what the approval gate says of a call the tool stage
// runs.
type approvalGate int

const (
	gateNone       approvalGate = iota // the call needs no approval
	gateUnapproved                     // it needs approval and was never shown to a person: never run it
	gateApproved                       // a person accepted or edited it: run exactly its arguments
)

// gateKey is the context key under which runBatch and resumeTurn name the
// calls of a batch the approval gate concerns (by their FunctionCall), for
// execute: a call that needs approval but is not pending (its arguments
// fail the tool's schema) never runs, whatever the tool middlewares make of
// its arguments ([errNotApproved]); an approved call runs only with the
// arguments the person approved ([errApprovedArgsChanged]).
type gateKey struct{}

// gateOf returns what ctx says of the call fc.
func gateOf(ctx context.Context, fc *llms.FunctionCall) approvalGate {
	m, _ := ctx.Value(gateKey{}).(map[*llms.FunctionCall]approvalGate)
	return m[fc]
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
// approved ([gateApproved]): it runs the tool the model called with
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

// binding is what a pending call's decision is bound to besides its
// arguments. It is kept in the run's state (the checkpoint, or a threadless
// interrupt's signed State), never in the PendingCall a client reads, and
// each pending call's digest binds it.
type binding struct {
	// Schema is the digest of the tool's schema when the call paused
	// (schemaDigest): a decision to run it under another is refused.
	Schema string `json:"schema"`
	// Identity is the MAC of the injected values the gate judged the call
	// with (approvalidentity.go), "" for a tool without any; Agent, the id
	// of the agent whose own key made it, "" under an interrupt key.
	Identity string `json:"identity,omitempty"`
	Agent    string `json:"agent,omitempty"`
}

// binding returns pending call j's binding; the zero binding when the
// state has none for it (a digest over it matches no decision).
func (ot *openTurn) binding(j int) binding {
	if len(ot.Bound) != len(ot.Pending) || j < 0 || j >= len(ot.Bound) {
		return binding{}
	}
	return ot.Bound[j]
}

// schemaDigest returns the SHA-256 of t's schema in canonical form, the
// schema as sent to a person's form and validated against, injected
// properties included. What the schema refers to (a $ref'd resource) and a
// Validate method are not in it; approvedArgs still refuses arguments they
// no longer accept.
func schemaDigest(t Tool) string {
	raw, err := exactjson.Text(parameters(t.Schema()))
	if err == nil {
		if c, cerr := canonjson.Exact(raw); cerr == nil {
			raw = c
		}
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])
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

func compactJSON(raw []byte) json.RawMessage {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return slices.Clone(raw)
	}
	return buf.Bytes()
}

func newInterruptID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24)
	return hex.EncodeToString(b[:])
}

// mac returns an HMAC-SHA256 under the key, or plain SHA-256 without one.
func (ap *approval) mac() hash.Hash {
	if ap.key != nil {
		return hmac.New(sha256.New, ap.key)
	}
	return sha256.New()
}

// digest binds a decision to one pending call: the interrupt's id (so a
// decision cannot be replayed on another interrupt, even one whose calls
// have the same ids and arguments, as synthesized ids do), the thread, the
// call's index in its turn (two identical calls of a turn are two calls),
// the tool, the call id, the exact arguments and the call's binding (the
// schema it paused under, the MAC of the injected values it was judged
// with). The arguments are hashed
// in their canonical form with numbers as written ([canonjson.Exact]): what
// json.Marshal does to them on the way (it escapes "<" and "&") changes
// nothing, a changed digit changes the digest.
func (ap *approval) digest(interrupt, thread string, at int, p PendingCall, b binding) string {
	args, err := canonjson.Exact(p.Args)
	if err != nil {
		args = p.Args // not JSON: never pending; hashed as it is
	}
	h := ap.mac()
	h.Write([]byte("toolguard/approval/v3"))
	writeFields(h, interrupt, thread, strconv.Itoa(at), p.Tool, p.ID, string(args), b.Schema, b.Identity, b.Agent)
	return hex.EncodeToString(h.Sum(nil))
}

// writeFields writes each field to h after its length, so that no two
// lists of fields hash alike.
func writeFields(h hash.Hash, fields ...string) {
	for _, f := range fields {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(f)))
		h.Write(n[:])
		h.Write([]byte(f))
	}
}

// sign returns the interrupt's signature: "" without a key.
//
// It is an HMAC of the interrupt's JSON in the canonical form of RFC 8785
// ([canonjson.RFC8785]), which any JSON round trip keeps: one through
// Go's any or JavaScript reads the numbers of a schema as doubles (0.0,
// 1e6, 0.50 and 9007199254740993 come back as 0, 1000000, 0.5 and
// 9007199254740992), json.Marshal escapes "<" and "&", and none of that
// changes the canonical form. RFC 8785 compares numbers as doubles; what
// runs is still bound digit for digit: the only numbers of the signed text
// that a double can round are those of schemas (shown to a reviewer, never
// used to run) and of pending calls' arguments, which their digests bind
// exactly (plan recomputes each from the state, and a decision must carry
// it).
func (ap *approval) sign(in *Interrupt) string {
	if ap.key == nil {
		return ""
	}
	unsigned := *in
	unsigned.Signature = ""
	data, err := json.Marshal(&unsigned)
	if err != nil {
		return "" // a schema that does not marshal; an empty signature never verifies
	}
	canon, err := canonjson.RFC8785(data)
	if err != nil {
		return "" // unreachable: json.Marshal writes one JSON value, names unique
	}
	h := hmac.New(sha256.New, ap.key)
	h.Write([]byte("toolguard/interrupt/v2"))
	h.Write(canon)
	return hex.EncodeToString(h.Sum(nil))
}

// verify reports whether in's signature is valid (always, without a key).
func (ap *approval) verify(in *Interrupt) bool {
	if ap.key == nil {
		return true
	}
	want := ap.sign(in)
	return want != "" && hmac.Equal([]byte(want), []byte(in.Signature))
}

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

// resumeFrom is the state a resumed run starts from and what to run.
type resumeFrom struct {
	state runState
	run   map[int]runArgs // index in the open turn's calls: accepted or edited
}

type runArgs struct {
	args   string
	edited bool
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
	if in != nil && in.Thread == "" && ctxThread != "" && ap.cp != nil && ap.key == nil {
		// The thread's state is in the checkpointer; an unsigned state
		// carried by the interrupt is the client's to forge.
		return nil, fmt.Errorf("%w: an unsigned interrupt of a run without a thread cannot be resumed on thread %q, whose state the checkpointer keeps", ErrInterruptRefused, ctxThread)
	}
	if in != nil && !ap.verify(in) {
		return nil, fmt.Errorf("%w: its signature does not verify", ErrInterruptRefused)
	}
	s := &session{}
	var st runState
	switch {
	case ap.cp != nil && thread != "":
		s.cp, s.thread = ap.cp, thread
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
	run, at, err := a.plan(st.Turn, id, thread, decisions)
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
		injected, err := a.injectApproved(ctx, st.Turn, id, thread, run)
		if err != nil {
			return nil, err
		}
		ctx = context.WithValue(ctx, approvedInjectionsKey{}, injected)
	}
	// Claim the interrupt before anything runs: rejected and answered calls
	// are finished; accepted and edited ones are about to run (cut off
	// while they run, they are never run again).
	if st.Turn != nil && id != "" {
		st.Turn = a.decided(st.Turn, decisions, at)
	}
	if s.cp != nil {
		if err := s.save(ctx, st); err != nil {
			if errors.Is(err, ErrCheckpointConflict) {
				return nil, fmt.Errorf("%w: another resume of thread %q came first: %w", ErrInterruptRefused, thread, err)
			}
			return nil, err
		}
	} else if !ap.claim(id) {
		return nil, fmt.Errorf("%w: it was already resumed", ErrInterruptRefused)
	}
	ctx, calls := a.runContext(ctx)
	// The run goes on: its limits count the calls it made before the pause,
	// a model call per turn (its open turn's included).
	made := st.Turns
	if st.Turn != nil {
		made = st.Turn.Number
	}
	ctx = guard.WithResumedRun(ctx, made)
	s.resume = &resumeFrom{state: st, run: run}
	res := &Result{Messages: slices.Clone(st.Messages)}
	err = a.loop(ctx, res, a.callOpts, s)
	res.ModelCalls = int(calls.Load())
	return res, err
}

// plan checks decisions against the open turn's pending calls and returns
// the calls to run (accepted and edited, with their arguments).
func (a *Agent) plan(ot *openTurn, id, thread string, decisions []Decision) (map[int]runArgs, []int, error) {
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
		byDigest[a.approval.digest(id, thread, ot.pendingIndex(j), p, ot.binding(j))] = j
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
		if (d.Action == Accept || d.Action == Edit) && ot.binding(j).Schema != a.approval.schemas[p.Tool] {
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
func (a *Agent) decided(ot *openTurn, decisions []Decision, at []int) *openTurn {
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
