package toolstage

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/toolguard/toolguard/internal/canonjson"
	"github.com/toolguard/toolguard/internal/exactjson"
)

// An approval runs as the identity it was judged for. The approval gate
// judges a call with its injected arguments set ([Inject]: the user, the
// tenant); a person approves that call. Resume runs it in its own context,
// whose injectors may give other values (the reviewer's user id). So each
// pending call's binding holds a MAC of the injected values the gate saw
// (never the values: they never travel in an interrupt nor rest in a
// checkpoint), Resume computes the values its context gives and refuses
// the decision when they differ, and the call runs with exactly the values
// it checked.
//
// The MAC is keyed: a user id has too little entropy for a plain hash,
// which anyone holding the interrupt could match against guesses. It is an
// HMAC under [WithInterruptKey]'s key, which the replicas share; without
// one, under a key of the Stage value's own, drawn at random by New, so
// that only that Stage can check it (another replica refuses the decision
// and says why), unless [WithReinjectOnResume] names the arguments.

// WithReinjectOnResume lets [Stage.Resume] run an approved call with the
// values its own context gives the injected arguments names ([Inject]),
// whatever values the call was judged and approved with.
//
// Without it, a decision is bound to the injected values the approval gate
// saw — the user a call was judged for — and Resume refuses to run the call
// with others ([ErrDecisionRefused]; nothing runs, and the interrupt can be
// resumed again from the right context): an approval runs as the identity
// it was judged for, not as whoever resumes it. Name here the injected
// arguments that may legitimately differ between the pause and the resume
// (a request id, a timestamp), or all of them where the person resuming is
// meant to act as themselves. The values are never compared or stored for
// these names; the others stay bound. All replicas that resume each other's
// interrupts need the same names.
//
// Several WithReinjectOnResume options add up. It panics if no name is
// given; [New] panics if a name is not an injected argument of one of its
// tools. It has no effect without [WithApproval] or [WithApprovalFor].
func WithReinjectOnResume(names ...string) Option {
	if len(names) == 0 {
		panic("toolstage: WithReinjectOnResume(): name at least one injected argument")
	}
	names = slices.Clone(names)
	return func(c *config) { c.approval.reinject = append(c.approval.reinject, names...) }
}

// setupIdentity records WithReinjectOnResume's names, and draws the
// stage's own key when it has no interrupt key. It panics on a name that
// no tool injects.
func (ap *approval) setupIdentity(reinject []string, tools map[string]Tool) {
	if ap.key == nil {
		var k [32]byte
		var id [8]byte
		_, _ = rand.Read(k[:]) // crypto/rand.Read never fails (Go 1.24)
		_, _ = rand.Read(id[:])
		ap.local, ap.localID = k[:], hex.EncodeToString(id[:])
	}
	if len(reinject) == 0 {
		return
	}
	injected := map[string]bool{}
	for _, t := range tools {
		for _, n := range injectedProps(t.Schema()) {
			injected[n] = true
		}
	}
	ap.reinject = make(map[string]bool, len(reinject))
	for _, n := range reinject {
		if !injected[n] {
			names := make([]string, 0, len(injected))
			for k := range injected {
				names = append(names, k)
			}
			slices.Sort(names)
			panic(fmt.Sprintf("toolstage: New: WithReinjectOnResume(%q): no tool of the stage has that injected argument (injected: %q)", n, names))
		}
		ap.reinject[n] = true
	}
}

// boundValues returns the values of tool name's injected arguments that a
// decision binds (all but those of WithReinjectOnResume), taken from args,
// the call's arguments with them set, as canonical JSON; nil when the tool
// has none.
func (ap *approval) boundValues(name, args string) []byte {
	inj, ok := ap.s.injection[name]
	if !ok {
		return nil
	}
	var names []string
	for _, n := range inj.names {
		if !ap.reinject[n] {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return nil
	}
	sub := make(map[string]any, len(names))
	if v, err := exactjson.DecodeObject([]byte(args)); err == nil {
		for _, n := range names {
			if x, ok := v[n]; ok {
				sub[n] = x
			}
		}
	}
	enc, err := exactjson.Encode(sub)
	if err != nil {
		return []byte("null") // decoded JSON always encodes; binds nothing a Resume can match
	}
	if c, err := canonjson.Exact(enc); err == nil {
		return c
	}
	return enc
}

// identity returns the MAC of values (boundValues) for the call at index at
// of interrupt's turn, of tool: "" for nil values. The interrupt and the
// index make two calls' MACs of the same user differ, so that they do not
// tell a reader which interrupts are one user's.
func (ap *approval) identity(interrupt string, at int, tool string, values []byte) string {
	if values == nil {
		return ""
	}
	key := ap.key
	if key == nil {
		key = ap.local
	}
	h := hmac.New(sha256.New, key)
	h.Write([]byte("toolguard/approval/identity/v1"))
	writeFields(h, interrupt, strconv.Itoa(at), tool, string(values))
	return hex.EncodeToString(h.Sum(nil))
}

// identityAgent is the Agent field of a binding this stage makes: its own
// key's id, "" under an interrupt key.
func (ap *approval) identityAgent(identity string) string {
	if identity == "" || ap.key != nil {
		return ""
	}
	return ap.localID
}

// injectApproved sets the injected arguments of the calls about to run
// (run, by index in the open turn ot of interrupt id) from ctx, and checks
// that they are the ones each call was approved with. It records them in
// run (runArgs.injected), for inject; it returns a *DecisionError when an
// injector fails or a value differs (nothing has run).
func (ap *approval) injectApproved(ctx context.Context, ot *pausedBatch, id, thread string, run map[int]runArgs) error {
	a := ap.s
	pendingOf := make(map[int]int, len(ot.Pending)) // index in the turn → pending call
	for j := range ot.Pending {
		pendingOf[ot.pendingIndex(j)] = j
	}
	at := make([]int, 0, len(run))
	for i := range run {
		at = append(at, i)
	}
	slices.Sort(at)
	for _, i := range at {
		j, ok := pendingOf[i]
		if !ok {
			continue // plan only runs pending calls
		}
		p, b := ot.Pending[j], ot.binding(j)
		if _, injects := a.injection[p.Tool]; !injects {
			if b.Identity != "" {
				return &DecisionError{CallID: p.ID, Reason: "the call was approved with injected arguments its tool no longer has"}
			}
			continue
		}
		st := &callState{
			info:      CallInfo{ID: p.ID, Tool: p.Tool, Thread: thread, Attempt: 1},
			modelArgs: run[i].args,
			tool:      a.tools[p.Tool],
			out:       &callDone{},
		}
		args, err := a.inject(withCallState(ctx, st), st)
		if err != nil {
			return &DecisionError{CallID: p.ID, Reason: "a value the program supplies for the call could not be set; nothing ran", Err: err}
		}
		if reason := ap.sameIdentity(b, ap.identity(id, i, p.Tool, ap.boundValues(p.Tool, args)), a.injection[p.Tool].names); reason != "" {
			return &DecisionError{CallID: p.ID, Reason: reason}
		}
		r := run[i]
		r.injected = args
		run[i] = r
	}
	return nil
}

// sameIdentity returns why the binding b does not hold for got, the MAC
// of the values this Resume's context gives; "" when it holds. names are
// the tool's injected arguments, for the message (never a value).
func (ap *approval) sameIdentity(b binding, got string, names []string) string {
	if b.Identity != "" && b.Agent != ap.identityAgent(b.Identity) {
		if b.Agent == "" {
			return "the call was approved under WithInterruptKey, which this stage lacks, so the identity it was judged for cannot be checked: give every replica the same key"
		}
		return "the call was approved on another Stage value without WithInterruptKey, so the identity it was judged for cannot be checked here: give the replicas one WithInterruptKey, resume on the Stage value that paused, or name the injected arguments in WithReinjectOnResume"
	}
	if !hmac.Equal([]byte(got), []byte(b.Identity)) {
		return fmt.Sprintf("the call was approved for other values of its injected arguments (%s) than this Resume's context gives: it runs only as the identity it was judged for (see WithReinjectOnResume)", strings.Join(names, ", "))
	}
	return ""
}

// errApprovedUnchecked is the error of an approved call whose injected
// values no Resume checked.
var errApprovedUnchecked = errors.New("the approved call's injected values were not checked against the approval")
