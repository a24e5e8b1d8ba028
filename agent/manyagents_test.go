package agent_test

import (
	"context"
	"slices"
	"testing"

	"github.com/toolguard/toolguard/agent"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/fakemodel"
)

// TestValidateHookSurvivesManyAgents: whether ToolArgValidation enforces a
// typed tool's Validate hook must not depend on what the process did before.
// A server that builds an agent per request builds tens of thousands; the
// first agent still has its bad call re-asked (so it never becomes a Step)
// after 20,000 more were built.
func TestValidateHookSurvivesManyAgents(t *testing.T) {
	t.Parallel()
	var rec recorder[Booking]
	model := fakemodel.New(
		fakemodel.ToolCalls(fakemodel.Call("book", `{"from": "2025-05-02", "to": "2025-05-01"}`)),
		fakemodel.ToolCalls(fakemodel.Call("book", `{"from": "2025-05-01", "to": "2025-05-02"}`)),
		fakemodel.Text("Booked."),
	)
	newAgent := func(m *fakemodel.Model) *agent.Agent {
		return agent.New(m, []agent.Tool{agent.NewTool("book", "Books a room.", rec.fn("booked"))},
			agent.WithMiddleware(middleware.ToolArgValidation()))
	}
	first := newAgent(model)
	for range 20000 {
		newAgent(fakemodel.New())
	}
	res, err := first.Run(context.Background(), "book")
	if err != nil {
		t.Fatalf("Run = %v, want nil", err)
	}
	if res.ModelCalls != 3 {
		t.Errorf("ModelCalls = %d, want 3: the bad call re-asked inside the middleware, then the answer", res.ModelCalls)
	}
	if len(res.Steps) != 1 || res.Steps[0].Err != nil || res.Steps[0].Arguments != `{"from": "2025-05-01", "to": "2025-05-02"}` {
		t.Errorf("Steps = %+v, want only the corrected call: the rejected one must never run", res.Steps)
	}
	if got, want := rec.got(), []Booking{{From: "2025-05-01", To: "2025-05-02"}}; !slices.Equal(got, want) {
		t.Errorf("tool ran with %+v, want %+v", got, want)
	}
}
