package agent_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/toolguard/toolguard/agent"
	"github.com/toolguard/toolguard/middleware/fakemodel"
	"github.com/toolguard/toolguard/toolstage"
)

type requestKey struct{}

// TracedRefund has two injected arguments: who asks, and the request it
// came in (which differs between the pause and the resume by nature).
type TracedRefund struct {
	Order   string `json:"order"`
	UserID  string `json:"user_id" toolguard:"inject"`
	Request string `json:"request" toolguard:"inject"`
}

// WithReinjectOnResume is the explicit opt-in: the arguments it names take
// the Resume's values, unchecked; the others stay bound to the identity
// the call was judged for.
func TestApprovalReinjectOnResume(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var ran []TracedRefund
	tool := toolstage.NewTool("refund", "Refunds an order.", func(_ context.Context, a TracedRefund) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		ran = append(ran, a)
		return "refunded", nil
	})
	request := toolstage.Inject("request", func(ctx context.Context, _ *toolstage.ToolCall) (any, error) { return ctx.Value(requestKey{}), nil })
	call := func(user, req string) context.Context {
		return context.WithValue(asUser(user), requestKey{}, req)
	}
	newAgent := func(reinject ...string) *agent.Agent {
		m := fakemodel.New(fakemodel.ToolCalls(fakemodel.Call("refund", `{"order": "A-1"}`)), fakemodel.Text("Refunded."))
		return build(m, []toolstage.Tool{tool}, toolstage.WithApprovalFor("refund"), toolstage.WithReinjectOnResume(reinject...), injectUser, request)
	}

	a := newAgent("request")
	_, err := a.Run(call("alice", "req-1"), "refund A-1")
	in := interruptOf(t, err)
	if _, err := a.Resume(call("bob", "req-2"), in, decide(in.Pending[0], toolstage.Accept, "")); !errors.Is(err, toolstage.ErrDecisionRefused) {
		t.Errorf("Resume() as bob with request re-injected = %v, want ErrDecisionRefused: user_id stays bound", err)
	}
	if _, err := a.Resume(call("alice", "req-2"), in, decide(in.Pending[0], toolstage.Accept, "")); err != nil {
		t.Fatalf("Resume() as alice in another request = %v", err)
	}

	b := newAgent("request", "user_id")
	_, err = b.Run(call("alice", "req-3"), "refund A-1")
	in = interruptOf(t, err)
	if _, err := b.Resume(call("bob", "req-4"), in, decide(in.Pending[0], toolstage.Accept, "")); err != nil {
		t.Fatalf("Resume() as bob with both re-injected = %v", err)
	}
	want := []TracedRefund{{Order: "A-1", UserID: "alice", Request: "req-2"}, {Order: "A-1", UserID: "bob", Request: "req-4"}}
	if len(ran) != 2 || ran[0] != want[0] || ran[1] != want[1] {
		t.Errorf("refund ran %+v, want %+v", ran, want)
	}
}

// Misconfiguration is loud: no name, or a name no tool injects.
func TestReinjectOnResumeMisconfiguration(t *testing.T) {
	t.Parallel()
	mustPanic := func(name, want string, f func()) {
		t.Helper()
		defer func() {
			r := recover()
			if r == nil || !strings.Contains(r.(string), want) {
				t.Errorf("%s: panic %v, want one saying %q", name, r, want)
			}
		}()
		f()
	}
	var r refunds
	mustPanic("no name", "at least one", func() { toolstage.WithReinjectOnResume() })
	mustPanic("unknown name", "user", func() {
		build(fakemodel.New(), []toolstage.Tool{r.tool()}, toolstage.WithApprovalFor("refund"), toolstage.WithReinjectOnResume("user"), injectUser)
	})
}
