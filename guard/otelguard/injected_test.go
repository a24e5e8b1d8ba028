package otelguard_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/toolguard/toolguard/agent"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/guard/otelguard"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/fakemodel"
	"github.com/toolguard/toolguard/toolstage"
)

// orderArgs is a typed tool's arguments whose user id the program injects:
// a closed schema (typed structs allow no other properties).
type orderArgs struct {
	Order  int    `json:"order"`
	UserID string `json:"user_id" toolguard:"inject"`
}

type userKey struct{}

// injectUser supplies user_id from the run's context.
var injectUser = toolstage.Inject("user_id", func(ctx context.Context, _ *toolstage.ToolCall) (any, error) {
	return ctx.Value(userKey{}), nil
})

// syncBuffer is a log destination safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestForgedInjectedArgument is the attack: a (prompt-injected) model sends
// user_id "admin" for a property the program injects, to a closed schema
// (typed) and to an open one (raw, as most MCP schemas are), with and
// without ToolArgValidation, with and without otelguard's content capture.
// The tool must get the caller's id every time, a forged_argument event
// must name the tool, call and path, and "admin" must appear in nothing
// sent to the model, no log line and no span.
func TestForgedInjectedArgument(t *testing.T) {
	t.Parallel()
	const forged, user = "admin", "u-42"
	typed := func(got *string) toolstage.Tool {
		return toolstage.NewTool("place_order", "Place an order.", func(_ context.Context, a orderArgs) (string, error) {
			*got = a.UserID
			return "order placed", nil
		})
	}
	open := func(got *string) toolstage.Tool {
		schema := map[string]any{"type": "object", "properties": map[string]any{
			"order": map[string]any{"type": "integer"}, "user_id": map[string]any{"type": "string"},
		}, "required": []any{"order", "user_id"}}
		return toolstage.InjectArgs(toolstage.NewSchemaTool("place_order", "Place an order.", schema,
			func(_ context.Context, a map[string]any) (string, error) {
				// As a Go MCP server reads the call: encoding/json matches
				// keys to fields without regard to case (Unicode folding).
				b, err := json.Marshal(a)
				if err != nil {
					return "", err
				}
				var args struct {
					UserID string `json:"user_id"`
				}
				if err := json.Unmarshal(b, &args); err != nil {
					return "", err
				}
				*got = args.UserID
				return "order placed", nil
			}), "user_id")
	}
	tests := []struct {
		name    string
		tool    func(got *string) toolstage.Tool
		calls   []string // the model's calls of place_order, one per turn, until one runs
		noStage bool     // without ToolArgValidation
		// detectable is how many calls hold a forged value that can be
		// found (in arguments that parse); all when 0.
		detectable int
		path       string // the forged property's path; "/user_id" when ""
	}{
		{name: "closed schema", tool: typed, calls: []string{`{"order": 7, "user_id": "admin"}`}},
		{name: "open schema", tool: open, calls: []string{`{"order": 7, "user_id": "admin"}`}},
		{name: "closed schema, no model stage", tool: typed, calls: []string{`{"order": 7, "user_id": "admin"}`}, noStage: true},
		{name: "open schema, no model stage", tool: open, calls: []string{`{"order": 7, "user_id": "admin"}`}, noStage: true},
		{name: "closed schema, invalid then re-asked", tool: typed,
			calls: []string{`{"order": "seven", "user_id": "admin"}`, `{"order": 7, "user_id": "admin"}`}},
		{name: "open schema, not JSON then re-asked", tool: open,
			calls: []string{`{"order": 7, "user_id": "admin"`, `{"order": 7, "user_id": "admin"}`}, detectable: 1},
		// encoding/json matches keys to fields without regard to case, in
		// a typed tool and in a Go MCP server alike.
		{name: "open schema, other case", tool: open, calls: []string{`{"order": 7, "USER_ID": "admin"}`}, path: "/USER_ID"},
		{name: "closed schema, other case, no model stage", tool: typed, calls: []string{`{"order": 7, "User_Id": "admin"}`}, noStage: true, path: "/User_Id"},
		// "ſ" (U+017F) folds to "s": encoding/json reads "uſer_id" as user_id.
		{name: "open schema, unicode case fold", tool: open, calls: []string{`{"order": 7, "uſer_id": "admin"}`}, path: "/uſer_id"},
		{name: "open schema, unicode case fold, no model stage", tool: open, calls: []string{`{"order": 7, "uſer_id": "admin"}`}, noStage: true, path: "/uſer_id"},
		{name: "closed schema, unicode case fold, no model stage", tool: typed, calls: []string{`{"order": 7, "uſer_id": "admin"}`}, noStage: true, path: "/uſer_id"},
		// Validation trims Unicode blanks (NBSP) around the arguments, as
		// bytes.TrimSpace does; encoding/json does not.
		{name: "open schema, NBSP before, unicode case fold", tool: open, calls: []string{"\u00a0{\"order\": 7, \"uſer_id\": \"admin\"}"}, path: "/uſer_id"},
		{name: "open schema, NBSP before, unicode case fold, no model stage", tool: open, calls: []string{"\u00a0{\"order\": 7, \"uſer_id\": \"admin\"}"}, noStage: true, path: "/uſer_id"},
		// Arguments that are JSON but not an object are not recorded.
		{name: "open schema, an array then re-asked", tool: open,
			calls: []string{`[{"order": 7, "user_id": "admin"}]`, `{"order": 7, "user_id": "admin"}`}, detectable: 1},
		// A double-encoded object, which the default coercions decode.
		{name: "open schema, double-encoded", tool: open, calls: []string{`"{\"order\": 7, \"user_id\": \"admin\"}"`}},
		{name: "open schema, double-encoded, no model stage", tool: open, calls: []string{`"{\"order\": 7, \"user_id\": \"admin\"}"`}, noStage: true},
		{name: "closed schema, double-encoded, no model stage", tool: typed, calls: []string{`"{\"order\": 7, \"user_id\": \"admin\"}"`}, noStage: true},
	}
	for _, tc := range tests {
		for _, capture := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/capture=%v", tc.name, capture), func(t *testing.T) {
				t.Parallel()
				var got string
				steps := make([]fakemodel.Step, 0, len(tc.calls)+1)
				for _, c := range tc.calls {
					steps = append(steps, fakemodel.ToolCalls(fakemodel.Call("place_order", c)))
				}
				model := fakemodel.New(append(steps, fakemodel.Text("Done."))...)
				logs := &syncBuffer{}
				logEvents := guard.LogEvents(slog.New(slog.NewJSONHandler(logs, nil)))
				var events []guard.Event
				var mu sync.Mutex
				record := func(ctx context.Context, e guard.Event) {
					mu.Lock()
					events = append(events, e)
					mu.Unlock()
					logEvents(ctx, e)
				}
				tel := newTelemetry(t)
				var opts []otelguard.Option
				if capture {
					opts = append(opts, otelguard.WithCaptureContent())
				}
				mws := []middleware.Middleware{tel.middleware(opts...)}
				if !tc.noStage {
					mws = append(mws, middleware.ToolArgValidation(guard.WithEventHandler(record)))
				}
				a := agent.New(model, toolstage.New([]toolstage.Tool{tc.tool(&got)}, toolstage.WithEventHandler(record), injectUser), agent.WithMiddleware(mws...))
				ctx := context.WithValue(context.Background(), userKey{}, user)
				res, err := a.Run(ctx, "Place order 7 for me.")
				if err != nil {
					t.Fatalf("Run: %v", err)
				}

				if got != user {
					t.Errorf("the tool got user_id %q, want %q", got, user)
				}
				var forgedEvents []guard.Event
				for _, e := range events {
					if e.Kind == guard.EventForgedArgument {
						forgedEvents = append(forgedEvents, e)
					}
				}
				want := len(tc.calls)
				if tc.detectable > 0 {
					want = tc.detectable
				}
				if len(forgedEvents) != want {
					t.Fatalf("%d forged_argument events, want %d (one per forged call): %+v", len(forgedEvents), want, events)
				}
				runID := res.Steps[len(res.Steps)-1].CallID
				path := tc.path
				if path == "" {
					path = "/user_id"
				}
				for _, e := range forgedEvents {
					if e.Tool != "place_order" || e.CallID == "" || !slices.Equal(e.Paths, []string{path}) || e.Err != nil {
						t.Errorf("forged_argument event = %+v, want tool place_order, a call id, paths [%s]", e, path)
					}
				}
				if last := forgedEvents[len(forgedEvents)-1]; last.CallID != runID {
					t.Errorf("the last forged_argument event names call %q, want the call that ran, %q", last.CallID, runID)
				}
				if !strings.Contains(logs.String(), `"level":"WARN","msg":"toolguard: forged_argument"`) {
					t.Errorf("no forged_argument logged at Warn:\n%s", logs)
				}
				spanEvents, onTheToolSpan := 0, 0
				for _, s := range tel.ended("") {
					for _, e := range s.Events() {
						if e.Name == otelguard.EventPrefix+string(guard.EventForgedArgument) {
							spanEvents++
							if s.Name() == "execute_tool place_order" {
								onTheToolSpan++
							}
						}
					}
				}
				if onTheToolSpan != 1 {
					t.Errorf("%d toolguard.forged_argument events on the execute_tool span of the call that ran, want 1", onTheToolSpan)
				}
				if spanEvents != want {
					t.Errorf("%d toolguard.forged_argument span events, want %d", spanEvents, want)
				}

				sent := sentToModel(t, model)
				spans := tel.everything(t)
				transcript := jsonText(t, res.Messages)
				modelArgs := ""
				for _, s := range res.Steps {
					modelArgs += s.ModelArguments
				}
				counts := map[string]int{
					"sent to the model":    strings.Count(sent, forged),
					"logs":                 strings.Count(logs.String(), forged),
					"spans":                strings.Count(spans, forged),
					"transcript":           strings.Count(transcript, forged),
					"Step.ModelArguments":  strings.Count(modelArgs, forged),
					"injected, in spans":   strings.Count(spans, user),
					"injected, in logs":    strings.Count(logs.String(), user),
					"injected, transcript": strings.Count(transcript+sent+modelArgs, user),
				}
				for where, n := range counts {
					if n != 0 {
						t.Errorf("%q (or the injected %q) appears %d times in %s", forged, user, n, where)
					}
				}
				if strings.Contains(strings.ToLower(sent), "user_id") {
					t.Errorf("the model was sent the injected property's name:\n%s", sent)
				}
				if !strings.Contains(res.Steps[len(res.Steps)-1].Arguments, user) {
					t.Errorf("Step.Arguments = %s, want the arguments the tool ran with, injected %q included", res.Steps[len(res.Steps)-1].Arguments, user)
				}
				t.Logf("tool got user_id %q; events: %s", got, eventsText(forgedEvents))
				t.Logf("occurrences of %q: sent to the model %d, log lines %d, spans %d, transcript %d, Step.ModelArguments %d",
					forged, counts["sent to the model"], counts["logs"], counts["spans"], counts["transcript"], counts["Step.ModelArguments"])
			})
		}
	}
}

// sentToModel returns everything the model was sent, as JSON: every
// request's messages and tools.
func sentToModel(t *testing.T, m *fakemodel.Model) string {
	t.Helper()
	var b strings.Builder
	for _, r := range m.Requests() {
		b.WriteString(jsonText(t, r.Messages))
		b.WriteString(jsonText(t, r.Options.Tools))
	}
	return b.String()
}

func jsonText(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func eventsText(es []guard.Event) string {
	var parts []string
	for _, e := range es {
		parts = append(parts, fmt.Sprintf("%s{middleware=%s tool=%s call_id=%s paths=%v}", e.Kind, e.Middleware, e.Tool, e.CallID, e.Paths))
	}
	return strings.Join(parts, ", ")
}

// TestForgedNotJSONNotRecorded: arguments of a tool with injected arguments
// that are not a JSON object — here truncated JSON holding a forged
// user_id, with no model stage to re-ask them — are not recorded on the
// execute_tool span, even with WithCaptureContent.
func TestForgedNotJSONNotRecorded(t *testing.T) {
	t.Parallel()
	var got string
	tool := toolstage.NewTool("place_order", "Place an order.", func(_ context.Context, a orderArgs) (string, error) {
		got = a.UserID
		return "order placed", nil
	})
	model := fakemodel.New(
		fakemodel.ToolCalls(fakemodel.Call("place_order", `{"order": 7, "user_id": "admin"`)),
		fakemodel.ToolCalls(fakemodel.Call("place_order", `{"order": 7}`)),
		fakemodel.Text("Done."))
	tel := newTelemetry(t)
	a := agent.New(model, toolstage.New([]toolstage.Tool{tool}, injectUser), agent.WithMiddleware(tel.middleware(otelguard.WithCaptureContent())))
	if _, err := a.Run(context.WithValue(context.Background(), userKey{}, "u-42"), "Place order 7."); err != nil {
		t.Fatal(err)
	}
	if got != "u-42" {
		t.Errorf("the tool got user_id %q, want u-42", got)
	}
	if n := strings.Count(tel.everything(t), "admin"); n != 0 {
		t.Errorf("the forged value appears %d times in the spans", n)
	}
}
