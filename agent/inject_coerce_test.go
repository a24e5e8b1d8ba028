package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/toolguard/toolguard/agent"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/fakemodel"
	"github.com/toolguard/toolguard/toolstage"
)

// TestInjectedValuesNeverCoerced: a value the program injects is the
// program's, not a model's slip, so the default coercions never touch it: a
// string where the schema wants a number, a boolean or a list ("5",
// "True", "['read']") fails the call with an *InjectError and the tool
// does not run, with or without ToolArgValidation. The model's own
// arguments beside valid injected values are still coerced.
func TestInjectedValuesNeverCoerced(t *testing.T) {
	t.Parallel()
	const schema = `{"type": "object", "properties": {
		"q":      {"type": "string"},
		"days":   {"type": "integer"},
		"limit":  {"type": "integer"},
		"admin":  {"type": "boolean"},
		"scopes": {"type": "array", "items": {"type": "string"}}},
		"required": ["q", "limit", "admin", "scopes"]}`
	valid := map[string]any{"limit": 5, "admin": false, "scopes": []string{"read"}}
	tests := []struct {
		name   string
		inject map[string]any // overrides valid
		want   string         // the arguments the tool runs with; "" when it must not run
	}{
		{"valid injected values, the model's own coerced", nil, `{"admin":false,"days":3,"limit":5,"q":"x","scopes":["read"]}`},
		{"a number as a string", map[string]any{"limit": "5"}, ""},
		{"a capitalised boolean", map[string]any{"admin": "True"}, ""},
		{"a Python list literal", map[string]any{"scopes": "['read']"}, ""},
		{"a JSON array string", map[string]any{"scopes": `["read"]`}, ""},
	}
	for _, tc := range tests {
		for _, withValidation := range []bool{false, true} {
			name := tc.name
			if withValidation {
				name += ", with ToolArgValidation"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				var mu sync.Mutex
				var ran []string
				tool := toolstage.InjectArgs(toolstage.NewSchemaTool("search", "Searches.", schema,
					func(_ context.Context, args map[string]any) (string, error) {
						b, err := json.Marshal(args)
						if err != nil {
							return "", err
						}
						mu.Lock()
						defer mu.Unlock()
						ran = append(ran, string(b))
						return "found", nil
					}), "limit", "admin", "scopes")
				opts := []any{}
				for _, n := range []string{"limit", "admin", "scopes"} {
					v, ok := tc.inject[n]
					if !ok {
						v = valid[n]
					}
					opts = append(opts, toolstage.Inject(n, func(context.Context, *toolstage.ToolCall) (any, error) { return v, nil }))
				}
				if withValidation {
					opts = append(opts, agent.WithMiddleware(middleware.ToolArgValidation()))
				}
				model := fakemodel.New(fakemodel.ToolCalls(fakemodel.Call("search", `{"q": "x", "days": "3"}`)), fakemodel.Text("done"))
				res, err := build(model, []toolstage.Tool{tool}, opts...).Run(context.Background(), "search x")
				if err != nil {
					t.Fatalf("Run() error = %v", err)
				}
				if tc.want != "" {
					if len(ran) != 1 || ran[0] != tc.want {
						t.Errorf("tool ran with %v, want once with %s (step %+v)", ran, tc.want, res.Steps[0])
					}
					return
				}
				if len(ran) != 0 {
					t.Errorf("tool ran with %v: an injected value was coerced", ran)
				}
				var ie *toolstage.InjectError
				if !errors.As(res.Steps[0].Err, &ie) {
					t.Errorf("Step.Err = %v, want an *InjectError", res.Steps[0].Err)
				}
			})
		}
	}
}

// TestToolMiddlewareArgumentsNeverCoerced: arguments a tool middleware sets
// are the program's, and get none of the coercions, the new ones included:
// the call is rejected and the tool does not run.
func TestToolMiddlewareArgumentsNeverCoerced(t *testing.T) {
	t.Parallel()
	for _, rewrite := range []string{`{"q": "x", "scopes": "['read']"}`, `{"q": "x", "scopes": "[\"read\"]"}`, `{"q": "x", "admin": "True"}`} {
		t.Run(rewrite, func(t *testing.T) {
			t.Parallel()
			ran := 0
			tool := toolstage.NewSchemaTool("search", "Searches.", `{"type": "object", "properties": {
				"q": {"type": "string"}, "admin": {"type": "boolean"}, "scopes": {"type": "array", "items": {"type": "string"}}},
				"required": ["q"]}`, func(context.Context, map[string]any) (string, error) { ran++; return "found", nil })
			mw := toolstage.ToolFunc(func(next toolstage.ToolHandler) toolstage.ToolHandler {
				return func(ctx context.Context, call *toolstage.ToolCall) (*toolstage.ToolResult, error) {
					call.Args = json.RawMessage(rewrite)
					return next(ctx, call)
				}
			})
			model := fakemodel.New(fakemodel.ToolCalls(fakemodel.Call("search", `{"q": "x"}`)), fakemodel.Text("done"))
			res, err := agent.New(model, toolstage.New([]toolstage.Tool{tool}, toolstage.WithToolMiddleware(mw))).Run(context.Background(), "search x")
			if err != nil {
				t.Fatalf("Run() error = %v", err)
			}
			var rejected *toolstage.ArgsRejectedError
			if ran != 0 || !errors.As(res.Steps[0].Err, &rejected) {
				t.Errorf("tool ran %d times, Step.Err = %v; want no run and an *ArgsRejectedError", ran, res.Steps[0].Err)
			}
		})
	}
}
