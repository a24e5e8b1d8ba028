package toolstage

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"strconv"

	"github.com/toolguard/toolguard/internal/canonjson"
	"github.com/toolguard/toolguard/internal/exactjson"
)

// Interrupt is a batch waiting for a person ([Batch].Interrupt; a host
// such as toolguard's agent returns it as its error, errors.As): the calls
// to decide on, and what [Stage.Resume] needs to go on. It is plain data:
// marshal it to JSON, keep it anywhere, and resume it in another process
// on another replica with the same tools and key.
type Interrupt struct {
	// ID identifies this pause: random, never reused. Every pending call's
	// digest binds it, so a decision made on one interrupt cannot be
	// replayed on another.
	ID string `json:"id"`
	// Thread is the thread id of Run's context ([guard.WithThread]), ""
	// if none: Resume refuses it on another thread.
	Thread string `json:"thread,omitempty"`
	// Pending lists the calls awaiting a decision, in call order.
	Pending []PendingCall `json:"pending"`
	// State is the batch's state to resume from, opaque; empty when the
	// stage keeps it in its [Checkpointer] ([WithCheckpointer]). It holds
	// the outcomes of the calls that ran: the signature protects it from
	// change, not from being read, so keep the interrupt server-side (or
	// use a Checkpointer) when a client must not read them.
	State json.RawMessage `json:"state,omitempty"`
	// Host is the host loop's own state to resume from, opaque to the
	// stage, set with [Stage.Attach] (toolguard's agent keeps its
	// transcript here when it has no Checkpointer); signed with the rest.
	Host json.RawMessage `json:"host,omitempty"`
	// Signature is the HMAC of everything above under the key of
	// [WithInterruptKey]; "" without one.
	Signature string `json:"signature,omitempty"`
}

// Error says how many calls wait.
func (in *Interrupt) Error() string {
	return fmt.Sprintf("toolstage: run interrupted: %d tool call(s) await a decision", len(in.Pending))
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

// ErrDecisionRefused is wrapped by the error of [Stage.Resume] when the
// decisions do not fit the interrupt's pending calls, an edit's arguments
// fail the tool's schema, the tool's schema changed since the pause, or
// the Resume's context gives a call other injected values than it was
// approved with: nothing ran, and the interrupt can be resumed again with
// corrected decisions (or from the right context).
var ErrDecisionRefused = errors.New("toolstage: decision refused")

// ErrInterruptRefused is wrapped by the error of [Stage.Resume] when the
// interrupt itself cannot be resumed: its signature does not verify, its
// state is malformed, it belongs to another thread, or it was already
// resumed (or replaced by a later run on the thread). Nothing ran.
var ErrInterruptRefused = errors.New("toolstage: interrupt refused")

// ErrCallRejected is wrapped by the Outcome.Err of a call a person rejected.
var ErrCallRejected = errors.New("toolstage: a person rejected the call")

// DecisionError is the error of [Stage.Resume] for decisions it refuses
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

// Error says the decision was refused, for which call and why.
func (e *DecisionError) Error() string {
	msg := "toolstage: decision refused"
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

// rejectedError is the Outcome.Err of a rejected call.
type rejectedError struct{ msg string }

func (e *rejectedError) Error() string        { return e.msg }
func (e *rejectedError) Is(target error) bool { return target == ErrCallRejected }

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
	// of the stage whose own key made it, "" under an interrupt key.
	Identity string `json:"identity,omitempty"`
	Agent    string `json:"agent,omitempty"`
}

// binding returns pending call j's binding; the zero binding when the
// state has none for it (a digest over it matches no decision).
func (ot *pausedBatch) binding(j int) binding {
	if len(ot.Bound) != len(ot.Pending) || j < 0 || j >= len(ot.Bound) {
		return binding{}
	}
	return ot.Bound[j]
}

// schemaDigest returns the SHA-256 of t's schema in canonical form, the
// schema as sent to a person's form and validated against, injected
// properties included. What the schema refers to (a $ref'd resource) and a
// Validate method are not in it; pinnedArgs still refuses arguments they
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
