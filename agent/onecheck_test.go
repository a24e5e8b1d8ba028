package agent_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/toolguard/toolguard/agent"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/fakemodel"
	"github.com/toolguard/toolguard/toolstage"
)

// countedDecodes and countedValidates count what happens to CountedArgs.
// Only TestOneCheckPerCall uses them, and it is not parallel.
var countedDecodes, countedValidates atomic.Int64

// CountedArgs counts its decodes and its Validate calls.
type CountedArgs struct {
	City string `json:"city"`
}

func (c *CountedArgs) UnmarshalJSON(b []byte) error {
	countedDecodes.Add(1)
	type plain CountedArgs
	return json.Unmarshal(b, (*plain)(c))
}

func (c CountedArgs) Validate() error {
	countedValidates.Add(1)
	return nil
}

// A valid typed call is validated once and decoded at most twice on its way
// to the tool (it was validated twice and decoded three times): once by
// ToolArgValidation when installed, else once by the tool stage.
func TestOneCheckPerCall(t *testing.T) {
	for _, tc := range []struct {
		name string
		mws  []middleware.Middleware
		tmws []toolstage.ToolMiddleware
		// want: Validate calls, decodes
		validates, decodes int64
	}{
		{"recommended stack", []middleware.Middleware{
			middleware.ToolCallLimit(guard.WithRunLimit(10)), middleware.ToolArgValidation(), middleware.ModelRetry(),
		}, nil, 1, 2},
		{"no model-stage validation", nil, nil, 1, 2},
		{"a tool middleware replaces the arguments", []middleware.Middleware{middleware.ToolArgValidation()},
			[]toolstage.ToolMiddleware{toolstage.ToolFunc(func(next toolstage.ToolHandler) toolstage.ToolHandler {
				return func(ctx context.Context, call *toolstage.ToolCall) (*toolstage.ToolResult, error) {
					call.Args = json.RawMessage(`{"city":"Lyon"}`)
					return next(ctx, call)
				}
			})}, 2, 3}, // checked again: the replaced arguments were never validated
	} {
		t.Run(tc.name, func(t *testing.T) {
			countedDecodes.Store(0)
			countedValidates.Store(0)
			ran := 0
			tool := toolstage.NewTool("get_weather", "Weather.", func(_ context.Context, a CountedArgs) (string, error) {
				ran++
				return "sunny in " + a.City, nil
			})
			model := fakemodel.New(fakemodel.ToolCalls(fakemodel.Call("get_weather", `{"city":"Paris"}`)), fakemodel.Text("done"))
			a := agent.New(model, toolstage.New([]toolstage.Tool{tool}, toolstage.WithToolMiddleware(tc.tmws...)), agent.WithMiddleware(tc.mws...))
			if _, err := a.Run(context.Background(), "weather"); err != nil {
				t.Fatal(err)
			}
			v, d := countedValidates.Load(), countedDecodes.Load()
			t.Logf("%s: Validate() %d, decodes %d", tc.name, v, d)
			if ran != 1 || v != tc.validates || d != tc.decodes {
				t.Errorf("tool ran %d, Validate() %d, decodes %d; want 1, %d, %d", ran, v, d, tc.validates, tc.decodes)
			}
		})
	}
}
