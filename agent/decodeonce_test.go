package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"sync"
	"testing"

	"github.com/toolguard/toolguard/agent"
	"github.com/toolguard/toolguard/middleware/fakemodel"
	"github.com/toolguard/toolguard/toolstage"
)

// The tool stage's check decodes a call's arguments, and a NewSchemaTool
// is given that map rather than decoding them again. A tool may change the
// map it is given: each attempt ToolRetry makes, and each of two calls
// with the same arguments, gets a map of its own, holding the arguments as
// the model sent them.
func TestSchemaToolArgumentsDecodedOncePerAttempt(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen []map[string]any
	tool := toolstage.NewSchemaTool("forecast", "Weather forecast.", map[string]any{
		"type": "object",
		"properties": map[string]any{
			"city": map[string]any{"type": "string"},
			"days": map[string]any{"type": "integer"},
		},
		"required": []any{"city"},
	}, func(_ context.Context, args map[string]any) (string, error) {
		mu.Lock()
		seen = append(seen, maps.Clone(args))
		first := len(seen) == 1
		mu.Unlock()
		delete(args, "city") // a tool that consumes its map
		args["days"] = "tampered"
		if first {
			return "", fmt.Errorf("%w: busy", toolstage.ErrNotRun)
		}
		return "sunny", nil
	})
	args := `{"city": "Paris", "days": 3}`
	model := fakemodel.New(fakemodel.ToolCalls(fakemodel.Call("forecast", args), fakemodel.Call("forecast", args)), fakemodel.Text("done"))
	a := agent.New(model, toolstage.New([]toolstage.Tool{tool}, toolstage.WithMaxConcurrency(1), toolstage.WithToolMiddleware(toolstage.ToolRetry(toolstage.WithBackOff(noWait)))))
	res, err := a.Run(context.Background(), "weather in Paris?")
	if err != nil {
		t.Fatalf("Run() error = %v", err)
	}
	want := map[string]any{"city": "Paris", "days": json.Number("3")}
	if len(seen) != 3 {
		t.Fatalf("the tool ran %d times, want 3 (a retried call, then its sibling)", len(seen))
	}
	for i, got := range seen {
		if !reflect.DeepEqual(got, want) {
			t.Errorf("run %d of the tool got %#v, want %#v: an attempt was given a map another changed", i+1, got, want)
		}
	}
	for _, s := range res.Steps {
		if s.Err != nil || s.Result != "sunny" {
			t.Errorf("Step = %+v, want sunny", s)
		}
	}
}
