package toolstage_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/toolstage"
)

// userKey is where the approval tests' requests carry the signed-in user.
type userKey struct{}

// userFromRequest is an Inject function: the user the context names.
func userFromRequest(ctx context.Context, _ *toolstage.ToolCall) (any, error) {
	u, _ := ctx.Value(userKey{}).(string)
	if u == "" {
		return nil, errors.New("no signed-in user")
	}
	return u, nil
}

func asUser(ctx context.Context, user string) context.Context {
	return context.WithValue(ctx, userKey{}, user)
}

// A call with an injected argument that waits for a person travels
// without the injected value (nor the value the model forged for it) in
// its interrupt, and runs only as the user it was judged for: a Resume
// whose context gives another user is refused (*DecisionError) and runs
// nothing; the right user's Resume runs it with that user's value, on
// another Stage value with the same key too.
func TestApprovalRunsAsTheIdentityJudged(t *testing.T) {
	t.Parallel()
	var runs atomic.Int32
	var ranFor atomic.Value
	order := toolstage.NewTool("place_order", "Orders an item.", func(_ context.Context, a orderArgs) (string, error) {
		runs.Add(1)
		ranFor.Store(a.UserID)
		return "ordered " + a.Item + " for " + a.UserID, nil
	})
	newStage := func() *toolstage.Stage {
		return toolstage.New([]toolstage.Tool{order}, toolstage.Inject("user_id", userFromRequest),
			toolstage.WithApprovalFor("place_order"), toolstage.WithInterruptKey(testKey), toolstage.WithEventHandler(new(eventLog).handle))
	}
	first, second := newStage(), newStage()
	ctx := context.Background()
	b, err := first.Run(asUser(ctx, "u-alice"), []guard.Call{call("call_1", "place_order", `{"item": "book", "user_id": "`+forgedValue+`"}`)})
	if err != nil || b.Interrupt == nil {
		t.Fatalf("Run() = %+v, %v; want a pause", b, err)
	}
	in := b.Interrupt
	raw, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"u-alice", forgedValue, "user_id"} {
		if strings.Contains(string(raw), secret) {
			t.Errorf("the interrupt's JSON holds %q: %s", secret, raw)
		}
	}
	if got := string(in.Pending[0].Args); got != `{"item":"book"}` {
		t.Errorf("Pending[0].Args = %s, want the item alone", got)
	}
	accept := decide(in.Pending[0], toolstage.Accept)

	_, err = second.Resume(asUser(ctx, "u-mallory"), in, accept)
	var de *toolstage.DecisionError
	if !errors.As(err, &de) || de.CallID != "call_1" {
		t.Fatalf("Resume() as another user: error = %v, want a *DecisionError for call_1", err)
	}
	if strings.Contains(err.Error(), "u-alice") || strings.Contains(err.Error(), "u-mallory") {
		t.Errorf("the refusal quotes a user: %v", err)
	}
	if runs.Load() != 0 {
		t.Fatalf("place_order ran %d times as another user, want never", runs.Load())
	}

	b, err = second.Resume(asUser(ctx, "u-alice"), in, accept)
	if err != nil {
		t.Fatalf("Resume() as the user judged: error = %v", err)
	}
	if o := b.Outcomes[0]; o.Err != nil || o.Content != "ordered book for u-alice" || runs.Load() != 1 || ranFor.Load() != "u-alice" {
		t.Errorf("outcome = %q, %v; ran %d times for %v; want it run once for u-alice", o.Content, o.Err, runs.Load(), ranFor.Load())
	}
}

// Calls of one batch may share an id (a provider that repeats one, a
// host that synthesizes them): each pending call is its own, bound by its
// digest, and each decision reaches the call it was made on.
func TestApprovalCallsSharingAnID(t *testing.T) {
	t.Parallel()
	var k bank
	s := k.stage()
	ctx := context.Background()
	b, err := s.Run(ctx, []guard.Call{
		call("call_1", "transfer_money", `{"amount": 100, "to": "bob"}`),
		call("call_1", "transfer_money", `{"amount": 200, "to": "carol"}`),
	})
	if err != nil || b.Interrupt == nil || len(b.Interrupt.Pending) != 2 {
		t.Fatalf("Run() = %+v, %v; want both payments pending", b, err)
	}
	p := b.Interrupt.Pending
	if p[0].Digest == p[1].Digest {
		t.Fatalf("the two pending calls share a digest %s, want one each", p[0].Digest)
	}
	reject := decide(p[0], toolstage.Reject)
	reject.Message = "not bob"
	b, err = s.Resume(ctx, b.Interrupt, decide(p[1], toolstage.Accept), reject)
	if err != nil {
		t.Fatalf("Resume() error = %v", err)
	}
	if len(b.Outcomes) != 2 || !errors.Is(b.Outcomes[0].Err, toolstage.ErrCallRejected) || b.Outcomes[1].Content != "paid 200 to carol" {
		t.Errorf("outcomes = %+v, want bob's payment rejected and carol's run", b.Outcomes)
	}
	if k.payments.Load() != 1 || k.paid.Load() != (transferArgs{Amount: 200, To: "carol"}) {
		t.Errorf("payments ran %d times, last %v; want carol's alone", k.payments.Load(), k.paid.Load())
	}
}
