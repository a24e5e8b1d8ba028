package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/agent"
	"github.com/toolguard/toolguard/middleware/fakemodel"
	"github.com/toolguard/toolguard/toolstage"
)

// The approval gate's verdict on a call follows that call, and no other:
// not a sibling that shares the call's id (a model may send one id twice),
// nor one that shares its *llms.FunctionCall (a response built by a cache
// or a replaying middleware may hold one function under two calls).

// defaultPayee is a tool middleware that gives a transfer without a payee
// one, as a fresh *ToolCall value: it makes valid the arguments of a call
// no person saw.
var defaultPayee = toolstage.ToolFunc(func(next toolstage.ToolHandler) toolstage.ToolHandler {
	return func(ctx context.Context, call *toolstage.ToolCall) (*toolstage.ToolResult, error) {
		if call.Name != "transfer_money" {
			return next(ctx, call)
		}
		var m map[string]any
		if json.Unmarshal(call.Args, &m) != nil || m["to"] != nil {
			return next(ctx, call)
		}
		m["to"] = "default-payee"
		args, _ := json.Marshal(m)
		return next(ctx, &toolstage.ToolCall{ID: call.ID, Name: call.Name, Args: args, Tool: call.Tool})
	}
})

// The attack: a gated call whose arguments fail its schema is never shown
// to a person, so it must never run; a tool middleware passes on a new
// ToolCall value with valid arguments, and a sibling of another tool has
// the same id. The gated call still never runs; the sibling, which needs
// no approval, runs.
func TestApprovalGateRefusedCallWithDuplicateID(t *testing.T) {
	t.Parallel()
	var b bank
	transfer := fakemodel.Call("transfer_money", `{"amount": 25}`)
	balance := fakemodel.Call("get_balance", `{}`)
	transfer.ID, balance.ID = "dup", "dup"
	for _, calls := range [][]llms.ToolCall{{transfer, balance}, {balance, transfer}} {
		model := fakemodel.New(fakemodel.ToolCalls(calls...), fakemodel.Text("done"))
		a := agent.New(model, toolstage.New(b.tools(), toolstage.WithApprovalFor("transfer_money"), toolstage.WithToolMiddleware(defaultPayee)))
		res, err := a.Run(context.Background(), "pay 25")
		if err != nil {
			t.Fatalf("Run() error = %v, want the gated call refused without an interrupt", err)
		}
		if n := b.count("transfer_money"); n != 0 {
			t.Fatalf("transfer_money ran %d times (%q) without a person's approval", n, b.args("transfer_money"))
		}
		for _, s := range res.Steps {
			if s.Tool == "transfer_money" && s.Err == nil {
				t.Errorf("the transfer's Step.Err = nil, want the call refused")
			}
			if s.Tool == "get_balance" && (s.Err != nil || s.Result != "1000.00") {
				t.Errorf("the balance's Step = %+v, want it ran: it needs no approval", s)
			}
		}
	}
	if n := b.count("get_balance"); n != 2 {
		t.Errorf("get_balance ran %d times, want 2 (once per run)", n)
	}
}

// Three pending calls with one id; the person accepts the first, rejects
// the second and edits the third, and a tool middleware passes each call
// on as a new ToolCall value. Each runs as decided for it, by its place:
// the accepted one with its own arguments, the edited one with the edit,
// the rejected one never.
func TestApprovalGatePinsByPlaceNotID(t *testing.T) {
	t.Parallel()
	var b bank
	copyCall := toolstage.ToolFunc(func(next toolstage.ToolHandler) toolstage.ToolHandler {
		return func(ctx context.Context, call *toolstage.ToolCall) (*toolstage.ToolResult, error) {
			c := &toolstage.ToolCall{ID: call.ID, Name: call.Name, Args: slices.Clone(call.Args), Tool: call.Tool}
			return next(ctx, c)
		}
	})
	c1 := fakemodel.Call("transfer_money", `{"to":"bob","amount":1}`)
	c2 := fakemodel.Call("transfer_money", `{"to":"carol","amount":2}`)
	c3 := fakemodel.Call("transfer_money", `{"to":"dave","amount":3}`)
	c1.ID, c2.ID, c3.ID = "dup", "dup", "dup"
	model := fakemodel.New(fakemodel.ToolCalls(c1, c2, c3), fakemodel.Text("ok"))
	a := agent.New(model, toolstage.New(b.tools(), toolstage.WithApprovalFor("transfer_money"), toolstage.WithToolMiddleware(copyCall), toolstage.WithMaxConcurrency(1)))
	_, err := a.Run(context.Background(), "pay")
	in := interruptOf(t, err)
	if len(in.Pending) != 3 {
		t.Fatalf("Pending = %+v, want three calls", in.Pending)
	}
	edit := decide(in.Pending[2], toolstage.Edit, "")
	edit.Args = json.RawMessage(`{"to":"erin","amount":4}`)
	res, err := a.Resume(context.Background(), viaJSON(t, in), decide(in.Pending[0], toolstage.Accept, ""), decide(in.Pending[1], toolstage.Reject, "not carol"), edit)
	if err != nil {
		t.Fatalf("Resume() error = %v", err)
	}
	if got := b.args("transfer_money"); !slices.Equal(got, []string{`{"to":"bob","amount":1}`, `{"to":"erin","amount":4}`}) {
		t.Errorf("transfers = %q, want bob's as sent and erin's as edited", got)
	}
	if got := toolMessages(res.Messages); !slices.Equal(got, []string{"sent 1.00 to bob", "not carol", "sent 4.00 to erin"}) {
		t.Errorf("tool messages = %q", got)
	}
	checkStepMessages(t, res)
}

// The fault: one *llms.FunctionCall under two calls of a response (ids x
// and y). Call x needs approval and cannot be judged (its injected value
// fails), so it must never run; call y needs none. The verdict on x must
// not fall on y: y runs, x does not. With the gate found by the
// FunctionCall pointer, y was refused too.
func TestApprovalGateSharedFunctionCall(t *testing.T) {
	t.Parallel()
	var ran []RefundArgs
	refund := toolstage.NewTool("refund", "Refunds an order.", func(_ context.Context, a RefundArgs) (string, error) {
		ran = append(ran, a) // MaxConcurrency 1: one call at a time
		return "refunded " + a.Order, nil
	})
	fn := &llms.FunctionCall{Name: "refund", Arguments: `{"order": "A-1", "amount": 30}`}
	model := fakemodel.New(
		fakemodel.Func(func(context.Context, []llms.MessageContent, llms.CallOptions) (*llms.ContentResponse, error) {
			return &llms.ContentResponse{Choices: []*llms.ContentChoice{{StopReason: "tool_calls", ToolCalls: []llms.ToolCall{
				{ID: "x", Type: "function", FunctionCall: fn},
				{ID: "y", Type: "function", FunctionCall: fn},
			}}}}, nil
		}),
		fakemodel.Text("done"),
	)
	a := agent.New(model, toolstage.New([]toolstage.Tool{refund}, toolstage.WithMaxConcurrency(1), toolstage.WithApproval(func(c *toolstage.ToolCall) bool { return c.ID == "x" }), toolstage.Inject("user_id", func(_ context.Context, c *toolstage.ToolCall) (any, error) {
		if c.ID == "x" {
			return nil, errors.New("no user for this call")
		}
		return "u-42", nil
	})))
	res, err := a.Run(context.Background(), "refund A-1")
	if err != nil {
		t.Fatalf("Run() error = %v, want x refused without an interrupt", err)
	}
	if len(res.Steps) != 2 {
		t.Fatalf("Steps = %+v, want two", res.Steps)
	}
	if res.Steps[0].CallID != "x" || res.Steps[0].Err == nil {
		t.Errorf("Steps[0] = %+v, want x failed", res.Steps[0])
	}
	if s := res.Steps[1]; s.CallID != "y" || s.Err != nil || !strings.HasPrefix(s.Result, "refunded") {
		t.Errorf("Steps[1] = %+v (error %v), want y ran: it needs no approval", s, s.Err)
	}
	if len(ran) != 1 || ran[0].UserID != "u-42" {
		t.Errorf("refund ran %+v, want once, y's", ran)
	}
}
