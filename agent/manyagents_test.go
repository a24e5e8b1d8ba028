package agent_test

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	"github.com/tmc/langchaingo/jsonschema"
	"github.com/toolguard/toolguard/agent"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/fakemodel"
	"github.com/toolguard/toolguard/toolstage"
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
		return agent.New(m, toolstage.New([]toolstage.Tool{toolstage.NewTool("book", "Books a room.", rec.fn("booked"))}), agent.WithMiddleware(middleware.ToolArgValidation()))
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

// rawSchemaTool is a Tool whose Schema is whatever it holds, even a schema
// that does not compile (NewSchemaTool refuses those).
type rawSchemaTool struct{ schema any }

func (rawSchemaTool) Name() string                                 { return "t" }
func (rawSchemaTool) Description() string                          { return "T." }
func (t rawSchemaTool) Schema() any                                { return t.schema }
func (rawSchemaTool) Call(context.Context, string) (string, error) { return "", nil }

// TestParametersForms: whatever form a tool's schema takes, the model is
// sent a map with every number as written; a schema that is not a JSON
// object is sent as given, so that ToolArgValidation reports it.
func TestParametersForms(t *testing.T) {
	t.Parallel()
	noop := func(context.Context, map[string]any) (string, error) { return "", nil }
	for _, tc := range []struct {
		name   string
		schema any
		want   string // canonical JSON of the map, or "" for "sent as given"
	}{
		{"string", `{"type":"object","properties":{"n":{"maximum":12345678901234567890}}}`, `{"properties":{"n":{"maximum":12345678901234567890}},"type":"object"}`},
		{"[]byte", []byte(`{"type":"object"}`), `{"type":"object"}`},
		{"struct", jsonschema.Definition{Type: jsonschema.Object}, `{"properties":{},"type":"object"}`},
		{"not JSON", `{"type":`, ""},
		{"not an object", `true`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			model := fakemodel.New(fakemodel.Text("ok"))
			var tool toolstage.Tool = rawSchemaTool{tc.schema}
			if tc.want != "" {
				tool = toolstage.NewSchemaTool("t", "T.", tc.schema, noop)
			}
			if _, err := agent.New(model, toolstage.New([]toolstage.Tool{tool})).Run(context.Background(), "go"); err != nil {
				t.Fatal(err)
			}
			params := model.Requests()[0].Options.Tools[0].Function.Parameters
			if tc.want == "" {
				if !reflect.DeepEqual(params, tc.schema) {
					t.Errorf("Parameters = %#v, want the schema as given", params)
				}
				return
			}
			m, ok := params.(map[string]any)
			if !ok {
				t.Fatalf("Parameters is %T, want a map", params)
			}
			if got, _ := json.Marshal(m); string(got) != tc.want {
				t.Errorf("Parameters = %s, want %s", got, tc.want)
			}
		})
	}
}
