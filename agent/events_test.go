package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/toolguard/toolguard/agent"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/fakemodel"
	"github.com/toolguard/toolguard/toolstage"
)

// kindsLog records the kinds and middlewares of the events it is given.
type kindsLog struct {
	mu  sync.Mutex
	got []string
}

func (l *kindsLog) handle(_ context.Context, e guard.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.got = append(l.got, e.Middleware+":"+string(e.Kind))
}

func (l *kindsLog) has(s string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Contains(l.got, s)
}

// bothStages runs an agent whose model stage re-asks a bad call and whose
// tool stage denies the corrected one: events of both stages.
func bothStages(t *testing.T, ctx context.Context, opts ...any) {
	t.Helper()
	tool := toolstage.NewSchemaTool("get_weather", "Weather.", map[string]any{
		"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []any{"city"},
	}, func(context.Context, map[string]any) (string, error) { return "sunny", nil })
	deny := toolstage.ToolFunc(func(toolstage.ToolHandler) toolstage.ToolHandler {
		return func(context.Context, *toolstage.ToolCall) (*toolstage.ToolResult, error) {
			return nil, errors.New("not today")
		}
	})
	model := fakemodel.New(
		fakemodel.ToolCalls(fakemodel.Call("get_weather", `{"city": 1}`)),
		fakemodel.ToolCalls(fakemodel.Call("get_weather", `{"city": "Paris"}`)),
		fakemodel.Text("done"),
	)
	a := build(model, []toolstage.Tool{tool}, append([]any{
		agent.WithMiddleware(middleware.ToolArgValidation()), toolstage.WithToolMiddleware(deny)}, opts...)...)
	if _, err := a.Run(ctx, "Weather in Paris?"); err != nil {
		t.Fatal(err)
	}
}

// One handler given to the agent sees the model stage's events (the
// ToolArgValidation given no handler of its own) and the tool stage's.
func TestEventHandlerSeesBothStages(t *testing.T) {
	t.Parallel()
	var log kindsLog
	bothStages(t, context.Background(), toolstage.WithEventHandler(log.handle))
	for _, want := range []string{"ToolArgValidation:invalid", "ToolArgValidation:reask", "toolstage:tool_denied"} {
		if !log.has(want) {
			t.Errorf("the agent's handler got %v, want %s among them", log.got, want)
		}
	}
}

// One handler given on the context (guard.WithEvents) sees both stages too.
func TestContextEventHandlerSeesBothStages(t *testing.T) {
	t.Parallel()
	var log kindsLog
	bothStages(t, guard.WithEvents(context.Background(), log.handle))
	for _, want := range []string{"ToolArgValidation:invalid", "ToolArgValidation:reask", "toolstage:tool_denied"} {
		if !log.has(want) {
			t.Errorf("the context's handler got %v, want %s among them", log.got, want)
		}
	}
}

// A middleware's own handler takes its events: the agent's sees the tool
// stage's only, and nothing twice.
func TestMiddlewareHandlerTakesItsEvents(t *testing.T) {
	t.Parallel()
	var own, agents kindsLog
	tool := toolstage.NewSchemaTool("get_weather", "Weather.", map[string]any{
		"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []any{"city"},
	}, func(context.Context, map[string]any) (string, error) { return "sunny", nil })
	model := fakemodel.New(
		fakemodel.ToolCalls(fakemodel.Call("get_weather", `{"city": 1}`)),
		fakemodel.ToolCalls(fakemodel.Call("get_weather", `{"city": "Paris"}`)),
		fakemodel.Text("done"),
	)
	a := agent.New(model, toolstage.New([]toolstage.Tool{tool}, toolstage.WithEventHandler(agents.handle)), agent.WithMiddleware(middleware.ToolArgValidation(guard.WithEventHandler(own.handle))))
	if _, err := a.Run(context.Background(), "Weather in Paris?"); err != nil {
		t.Fatal(err)
	}
	if !own.has("ToolArgValidation:invalid") || agents.has("ToolArgValidation:invalid") {
		t.Errorf("the middleware's handler got %v and the agent's %v; want invalid in the first only", own.got, agents.got)
	}
}

// captureDefaultLog sends slog.Default to a buffer for the test.
func captureDefaultLog(t *testing.T) *bytes.Buffer {
	t.Helper()
	var buf bytes.Buffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	t.Cleanup(func() { slog.SetDefault(old) })
	return &buf
}

// Without any handler, a forged injected argument and a refused approval
// are logged to slog.Default at Warn; with one, that handler decides. Not
// parallel: it replaces slog.Default.
func TestSecurityEventsLoggedWithoutHandler(t *testing.T) {
	order := toolstage.InjectArgs(toolstage.NewSchemaTool("place_order", "Order.", map[string]any{
		"type": "object", "properties": map[string]any{"item": map[string]any{"type": "string"}, "user_id": map[string]any{"type": "string"}},
		"required": []any{"item", "user_id"},
	}, func(context.Context, map[string]any) (string, error) { return "ok", nil }), "user_id")
	user := toolstage.Inject("user_id", func(context.Context, *toolstage.ToolCall) (any, error) { return "alice", nil })
	run := func(opts ...any) string {
		buf := captureDefaultLog(t)
		model := fakemodel.New(fakemodel.ToolCalls(fakemodel.Call("place_order", `{"item": "laptop", "user_id": "admin"}`)), fakemodel.Text("done"))
		a := build(model, []toolstage.Tool{order}, append([]any{user, toolstage.WithApprovalFor("place_order")}, opts...)...)
		_, err := a.Run(context.Background(), "Order a laptop.")
		var in *toolstage.Interrupt
		if !errors.As(err, &in) {
			t.Fatalf("Run() error = %v, want an *Interrupt", err)
		}
		wire, _ := json.Marshal(in)
		var back toolstage.Interrupt
		_ = json.Unmarshal(wire, &back)
		if _, err := a.Resume(context.Background(), &back); err == nil { // no decision: refused
			t.Fatal("Resume without decisions succeeded, want it refused")
		}
		return buf.String()
	}
	logged := run()
	for _, want := range []string{"level=WARN msg=\"toolguard: forged_argument\"", "level=WARN msg=\"toolguard: approval_refused\""} {
		if !strings.Contains(logged, want) {
			t.Errorf("without a handler slog.Default got:\n%s\nwant a line with %s", logged, want)
		}
	}
	var log kindsLog
	if logged := run(toolstage.WithEventHandler(log.handle)); logged != "" {
		t.Errorf("with a handler slog.Default got:\n%s\nwant nothing", logged)
	}
	if !log.has("toolstage:forged_argument") && !log.has("ToolArgValidation:forged_argument") || !log.has("toolstage:approval_refused") {
		t.Errorf("the handler got %v, want forged_argument and approval_refused", log.got)
	}
}
