package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/toolguard/toolguard/agent"
	"github.com/toolguard/toolguard/middleware/fakemodel"
	"github.com/toolguard/toolguard/toolstage"
)

// RefundArgs has an injected user id: the model (and a reviewer) can
// neither see nor set it.
type RefundArgs struct {
	Order  string `json:"order"`
	Amount int    `json:"amount"`
	UserID string `json:"user_id" toolguard:"inject"`
}

// Approval and injected arguments together: the model forges user_id, the
// call waits for a person. The interrupt never carries the injected (or the
// forged) value, a reviewer's edit cannot set it, and whatever is decided
// runs with the program's value.
func TestApprovalWithInjectedArguments(t *testing.T) {
	t.Parallel()
	newAgent := func() (*agent.Agent, *[]RefundArgs) {
		var mu sync.Mutex
		var ran []RefundArgs
		tool := toolstage.NewTool("refund", "Refunds an order.", func(_ context.Context, a RefundArgs) (string, error) {
			mu.Lock()
			defer mu.Unlock()
			ran = append(ran, a)
			return "refunded", nil
		})
		model := fakemodel.New(
			fakemodel.ToolCalls(fakemodel.Call("refund", `{"order": "A-1", "amount": 30, "user_id": "admin"}`)),
			fakemodel.Text("Done."),
		)
		a := agent.New(model, toolstage.New([]toolstage.Tool{tool}, toolstage.WithApprovalFor("refund"), toolstage.Inject("user_id", func(context.Context, *toolstage.ToolCall) (any, error) { return "u-42", nil })))
		return a, &ran
	}

	t.Run("accept", func(t *testing.T) {
		t.Parallel()
		a, ran := newAgent()
		_, err := a.Run(context.Background(), "refund A-1")
		in := interruptOf(t, err)
		raw, _ := json.Marshal(in)
		if strings.Contains(string(raw), "admin") || strings.Contains(string(raw), "u-42") || strings.Contains(string(raw), "user_id\":") {
			t.Fatalf("the interrupt carries an injected or forged value: %s", raw)
		}
		if got := string(in.Pending[0].Args); got != `{"amount":30,"order":"A-1"}` {
			t.Errorf("pending Args = %s, want the model's arguments less user_id", got)
		}
		if _, err := a.Resume(context.Background(), viaJSON(t, in), decide(in.Pending[0], toolstage.Accept, "")); err != nil {
			t.Fatalf("Resume() error = %v", err)
		}
		if len(*ran) != 1 || (*ran)[0].UserID != "u-42" {
			t.Errorf("tool ran with %+v, want once with user_id u-42", *ran)
		}
	})

	t.Run("an edit that sets user_id is refused", func(t *testing.T) {
		t.Parallel()
		a, ran := newAgent()
		_, err := a.Run(context.Background(), "refund A-1")
		in := interruptOf(t, err)
		d := toolstage.Decision{CallID: in.Pending[0].ID, Action: toolstage.Edit, Digest: in.Pending[0].Digest,
			Args: json.RawMessage(`{"order": "A-1", "amount": 30, "user_id": "admin"}`)}
		if _, err := a.Resume(context.Background(), in, d); !errors.Is(err, toolstage.ErrDecisionRefused) {
			t.Fatalf("Resume(edit setting user_id) error = %v, want ErrDecisionRefused", err)
		}
		if len(*ran) != 0 {
			t.Fatalf("tool ran %+v after a refused edit", *ran)
		}
		// The interrupt stays usable: an edit of the model's own arguments
		// runs, with the injected id.
		d.Args = json.RawMessage(`{"order": "A-1", "amount": 20}`)
		if _, err := a.Resume(context.Background(), in, d); err != nil {
			t.Fatalf("Resume(edit) error = %v", err)
		}
		if len(*ran) != 1 || (*ran)[0] != (RefundArgs{Order: "A-1", Amount: 20, UserID: "u-42"}) {
			t.Errorf("tool ran with %+v, want once with amount 20 and user_id u-42", *ran)
		}
	})
}

// A call that needs approval never runs unapproved when injected arguments
// are in play: not when the model also forged an injected value (dropping it
// copies the call, and the gate must still know it), and not when the
// injector fails while the gate judges the call and succeeds when it runs.
func TestApprovalGateHoldsWithInjection(t *testing.T) {
	t.Parallel()
	mend := toolstage.ToolFunc(func(next toolstage.ToolHandler) toolstage.ToolHandler {
		return func(ctx context.Context, call *toolstage.ToolCall) (*toolstage.ToolResult, error) {
			// A defaults middleware: it makes an invalid amount valid.
			var m map[string]any
			if json.Unmarshal(call.Args, &m) == nil {
				if _, ok := m["amount"].(float64); !ok {
					m["amount"] = 1
					call.Args, _ = json.Marshal(m)
				}
			}
			return next(ctx, call)
		}
	})
	for _, tc := range []struct {
		name     string
		args     string
		injector func() func(context.Context, *toolstage.ToolCall) (any, error)
	}{
		{"forged value on a call that fails its schema", `{"order": "A-1", "amount": "lots", "user_id": "admin"}`,
			func() func(context.Context, *toolstage.ToolCall) (any, error) {
				return func(context.Context, *toolstage.ToolCall) (any, error) { return "u-42", nil }
			}},
		{"injector fails while the gate judges, then succeeds", `{"order": "A-1", "amount": 30}`,
			func() func(context.Context, *toolstage.ToolCall) (any, error) {
				var n sync.Mutex
				calls := 0
				return func(context.Context, *toolstage.ToolCall) (any, error) {
					n.Lock()
					defer n.Unlock()
					if calls++; calls == 1 {
						return nil, errors.New("user service unavailable")
					}
					return "u-42", nil
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			ran := 0
			tool := toolstage.NewTool("refund", "Refunds an order.", func(context.Context, RefundArgs) (string, error) {
				mu.Lock()
				ran++
				mu.Unlock()
				return "refunded", nil
			})
			model := fakemodel.New(fakemodel.ToolCalls(fakemodel.Call("refund", tc.args)), fakemodel.Text("Done."))
			a := agent.New(model, toolstage.New([]toolstage.Tool{tool}, toolstage.WithApprovalFor("refund"), toolstage.WithToolMiddleware(mend), toolstage.Inject("user_id", tc.injector())))
			res, err := a.Run(context.Background(), "refund A-1")
			var in *toolstage.Interrupt
			if errors.As(err, &in) {
				t.Fatalf("Run paused with %d pending calls; want the call refused, not shown", len(in.Pending))
			}
			if err != nil {
				t.Fatalf("Run() error = %v", err)
			}
			if ran != 0 {
				t.Fatalf("refund ran %d times without a person's approval (steps %+v)", ran, res.Steps)
			}
		})
	}
}

// TestInterruptWithoutInjectedValuesOfCallsThatRan: a call of a tool with
// injected arguments that needs no approval runs in the turn that waits for
// a person; the interrupt (its state included, which travels to a client
// without a checkpointer) never carries the injected value it ran with.
func TestInterruptWithoutInjectedValuesOfCallsThatRan(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var ran []RefundArgs
	refund := toolstage.NewTool("refund", "Refunds an order.", func(_ context.Context, a RefundArgs) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		ran = append(ran, a)
		return "refunded", nil
	})
	lookup := toolstage.NewTool("lookup", "Looks an order up.", func(_ context.Context, a RefundArgs) (string, error) {
		return "order " + a.Order, nil
	})
	model := fakemodel.New(
		fakemodel.ToolCalls(
			fakemodel.Call("lookup", `{"order": "A-1", "amount": 1}`),
			fakemodel.Call("refund", `{"order": "A-1", "amount": 30}`)),
		fakemodel.Text("Done."),
	)
	a := agent.New(model, toolstage.New([]toolstage.Tool{refund, lookup}, toolstage.WithApprovalFor("refund"), toolstage.Inject("user_id", func(context.Context, *toolstage.ToolCall) (any, error) { return "u-secret", nil })))
	_, err := a.Run(context.Background(), "refund A-1")
	in := interruptOf(t, err)
	raw, _ := json.Marshal(in)
	if strings.Contains(string(raw), "u-secret") {
		t.Errorf("the interrupt carries the injected value: %s", raw)
	}
	res, err := a.Resume(context.Background(), viaJSON(t, in), decide(in.Pending[0], toolstage.Accept, ""))
	if err != nil {
		t.Fatalf("Resume() error = %v", err)
	}
	if len(ran) != 1 || ran[0].UserID != "u-secret" || len(res.Steps) != 2 {
		t.Errorf("refund ran with %+v, steps %d; want once with the injected id, and two steps", ran, len(res.Steps))
	}
}
