package guard_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/toolguard/toolguard/guard"
)

// TestInjectedArgsModelStage is ToolArgValidation told of an injected
// argument without package agent (an agents.Executor whose tool reads the
// user from the context), with the tool's whole, closed schema: the model's
// "admin" is dropped from the call and reported by path, the model is
// neither asked for user_id nor shown the value, and its other mistakes are
// still fed back.
func TestInjectedArgsModelStage(t *testing.T) {
	t.Parallel()
	refund := tool("refund", map[string]any{
		"type": "object",
		"properties": map[string]any{
			"order":   map[string]any{"type": "integer"},
			"user_id": map[string]any{"type": "string"},
		},
		"required":             []any{"order", "user_id"},
		"additionalProperties": false,
	})
	m := newScript(
		callsStep(call("refund", `{"order": "one", "user_id": "admin"}`)),
		callsStep(call("refund", `{"order": 1, "user_id": "admin"}`)),
	)
	var mu sync.Mutex
	var events []guard.Event
	llm := wrap(m, toolArgValidation(guard.WithEventHandler(func(_ context.Context, e guard.Event) {
		mu.Lock()
		events = append(events, e)
		mu.Unlock()
	})))
	ctx := guard.WithInjectedArgs(context.Background(), map[string][]string{"refund": {"user_id"}})
	resp, err := llm(ctx, &tReq{Msgs: []msg{{Role: roleUser, Text: "refund 1"}}, Tools: []guard.Tool{refund}})
	if err != nil {
		t.Fatal(err)
	}
	if got := args(resp, 0); got != `{"order":1}` {
		t.Errorf("arguments handed on = %s, want {\"order\":1}", got)
	}
	reqs := m.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model calls, want 2", len(reqs))
	}
	var sent strings.Builder
	for _, m := range reqs[1].Msgs {
		if m.Role == roleTool {
			sent.WriteString(m.Text)
		}
		for _, c := range m.Calls {
			sent.Write(c.Args)
		}
	}
	if s := sent.String(); !strings.Contains(s, "/order: expected integer") || strings.Contains(s, "admin") || strings.Contains(s, "user_id") {
		t.Errorf("the re-ask sent %q: want the /order violation, without admin or user_id", s)
	}
	var forged []int
	for _, e := range events {
		if e.Kind == guard.EventForgedArgument {
			if e.Tool != "refund" || !slices.Equal(e.Paths, []string{"/user_id"}) {
				t.Errorf("event %+v, want tool refund, paths [/user_id]", e)
			}
			forged = append(forged, e.Attempt)
		}
		if e.Err != nil && strings.Contains(e.Err.Error(), "admin") || strings.Contains(e.Feedback, "admin") {
			t.Errorf("event %+v quotes the forged value", e)
		}
	}
	if !slices.Equal(forged, []int{1, 2}) {
		t.Errorf("forged_argument at attempts %v, want [1 2]", forged)
	}
}

// TestInjectedArgsToolNameCase: agents.Executor runs a call of "REFUND"
// with the tool "refund" (it matches names by strings.ToUpper), and
// ToolArgValidation passes calls of tools it does not know by default, so
// the injected arguments of "refund" must be dropped from a call of
// "REFUND" too.
func TestInjectedArgsToolNameCase(t *testing.T) {
	t.Parallel()
	refund := tool("refund", map[string]any{
		"type": "object", "properties": map[string]any{"order": map[string]any{"type": "integer"}},
	})
	m := newScript(callsStep(call("REFUND", `{"order": 1, "user_id": "admin"}`)))
	var mu sync.Mutex
	var forged []guard.Event
	llm := wrap(m, toolArgValidation(guard.WithEventHandler(func(_ context.Context, e guard.Event) {
		mu.Lock()
		defer mu.Unlock()
		if e.Kind == guard.EventForgedArgument {
			forged = append(forged, e)
		}
	})))
	ctx := guard.WithInjectedArgs(context.Background(), map[string][]string{"refund": {"user_id"}})
	resp, err := llm(ctx, &tReq{Msgs: []msg{{Role: roleUser, Text: "refund 1"}}, Tools: []guard.Tool{refund}})
	if err != nil {
		t.Fatal(err)
	}
	if got := args(resp, 0); strings.Contains(got, "admin") || len(forged) != 1 {
		t.Errorf("arguments handed on = %s, forged_argument events %+v; want user_id dropped and reported", got, forged)
	}
}
