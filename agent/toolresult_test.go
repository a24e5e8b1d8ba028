package agent_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/toolguard/toolguard/agent"
	"github.com/toolguard/toolguard/middleware/fakemodel"
	"github.com/toolguard/toolguard/toolstage"
	"github.com/toolguard/toolguard/validation"
)

// Order is what order_status gives the program beside its text.
type Order struct {
	ID, Status string
}

type orderArgs struct {
	OrderID string `json:"order_id"`
}

// orderStatus answers with text for the model and the order as an
// artifact; a delivered order's result is Direct.
func orderStatus() toolstage.ResultTool {
	return toolstage.NewResultTool("order_status", "Where an order is.", func(_ context.Context, a orderArgs) (*toolstage.ToolResult, error) {
		o := Order{ID: a.OrderID, Status: "in transit"}
		if a.OrderID == "A-2" {
			o.Status = "delivered"
		}
		return &toolstage.ToolResult{Content: "Order " + o.ID + " is " + o.Status + ".", Artifact: o, Direct: o.Status == "delivered"}, nil
	})
}

// A tool decides its result itself: the artifact is recorded for the
// program and never sent to the model, and Direct ends the run, call by
// call; seen through Renamed and Idempotent.
func TestResultTool(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		tool toolstage.Tool
	}{
		{"NewResultTool", orderStatus()},
		{"Renamed(Idempotent(NewResultTool))", toolstage.Renamed(toolstage.Idempotent(orderStatus()), "order_status")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			model := fakemodel.New(
				fakemodel.ToolCalls(fakemodel.Call("order_status", `{"order_id": "A-1"}`)),
				fakemodel.ToolCalls(fakemodel.Call("order_status", `{"order_id": "A-2"}`)),
				fakemodel.Text("never asked"),
			)
			a := agent.New(model, toolstage.New([]toolstage.Tool{tc.tool}))
			res, err := a.Run(context.Background(), "where are my orders?")
			if err != nil {
				t.Fatal(err)
			}
			if res.Output != "Order A-2 is delivered." || res.ModelCalls != 2 || len(res.Steps) != 2 {
				t.Fatalf("Output %q after %d model calls and %d steps; want the Direct result after 2 and 2", res.Output, res.ModelCalls, len(res.Steps))
			}
			for i, want := range []Order{{"A-1", "in transit"}, {"A-2", "delivered"}} {
				if got, _ := res.Steps[i].Artifact.(Order); got != want {
					t.Errorf("step %d Artifact = %#v, want %#v", i, res.Steps[i].Artifact, want)
				}
			}
			if got := toolMessages(res.Messages); !slices.Equal(got, []string{"Order A-1 is in transit.", "Order A-2 is delivered."}) {
				t.Errorf("tool messages %q, want the contents alone", got)
			}
		})
	}
}

// resultFunc is a ResultTool of the user's own.
type resultFunc func(ctx context.Context, args string) (*toolstage.ToolResult, error)

func (resultFunc) Name() string        { return "f" }
func (resultFunc) Description() string { return "A function." }
func (resultFunc) Schema() any         { return nil }
func (f resultFunc) Call(ctx context.Context, args string) (string, error) {
	res, err := f(ctx, args)
	if err != nil || res == nil {
		return "", err
	}
	return res.Content, nil
}
func (f resultFunc) CallResult(ctx context.Context, args string) (*toolstage.ToolResult, error) {
	return f(ctx, args)
}

// A ResultTool of the user's own is called through CallResult with the
// checked arguments; a nil result with a nil error is the call's error.
func TestResultToolOfUser(t *testing.T) {
	t.Parallel()
	var got []string
	f := resultFunc(func(_ context.Context, args string) (*toolstage.ToolResult, error) {
		got = append(got, args)
		if len(got) == 2 {
			return nil, nil
		}
		return &toolstage.ToolResult{Content: "fine", Artifact: 42}, nil
	})
	model := fakemodel.New(
		fakemodel.ToolCalls(fakemodel.Call("f", `{"x": 1}`)),
		fakemodel.ToolCalls(fakemodel.Call("f", `{}`)),
		fakemodel.Text("done"),
	)
	res, err := agent.New(model, toolstage.New([]toolstage.Tool{f})).Run(context.Background(), "go")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != `{"x": 1}` {
		t.Errorf("CallResult got %q", got)
	}
	if s := res.Steps[0]; s.Result != "fine" || s.Artifact != 42 {
		t.Errorf("step 0: %q, %v; want fine, 42", s.Result, s.Artifact)
	}
	if s := res.Steps[1]; s.Err == nil {
		t.Error("a nil result with a nil error is not an error")
	}
}

// Outside an agent, a NewResultTool checks its arguments and Call returns
// the Content.
func TestNewResultToolCall(t *testing.T) {
	t.Parallel()
	tool := orderStatus()
	out, err := tool.Call(context.Background(), `{"order_id": "A-1"}`)
	if err != nil || out != "Order A-1 is in transit." {
		t.Errorf("Call = %q, %v", out, err)
	}
	var ve *validation.Error
	if _, err := tool.CallResult(context.Background(), `{"order_id": 1}`); !errors.As(err, &ve) {
		t.Errorf("CallResult with a number for order_id = %v, want a *validation.Error", err)
	}
}
