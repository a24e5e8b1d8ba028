package toolstage_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/toolstage"
)

// noted is the kind of the event the tests' tool middleware reports.
const noted guard.EventKind = "noted"

// A Stage's WithEventHandler gets the events of Run and of Resume's run
// whether or not their context came from Scope: a host with no model
// stage, which never calls Scope, still sees a forged injected argument
// (a security event) and its tool middlewares' events in its handler, not
// in slog's default logger.
func TestEventHandlerWithoutScope(t *testing.T) {
	t.Parallel()
	note := toolstage.ToolFunc(func(next toolstage.ToolHandler) toolstage.ToolHandler {
		return func(ctx context.Context, c *toolstage.ToolCall) (*toolstage.ToolResult, error) {
			toolstage.ReportEvent(ctx, guard.Event{Kind: noted})
			return next(ctx, c)
		}
	})
	order := toolstage.NewTool("place_order", "Orders.", func(_ context.Context, a orderArgs) (string, error) {
		return "ordered " + a.Item, nil
	})
	pay := toolstage.NewTool("transfer_money", "Pays.", func(context.Context, transferArgs) (string, error) {
		return "paid", nil
	})
	for _, scoped := range []bool{false, true} {
		name := "plain context"
		if scoped {
			name = "Scope's context"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var events eventLog
			stage := toolstage.New([]toolstage.Tool{order, pay}, toolstage.Inject("user_id", signedInUser),
				toolstage.WithApprovalFor("transfer_money"), toolstage.WithToolMiddleware(note), toolstage.WithEventHandler(events.handle))
			ctx := context.Background()
			if scoped {
				ctx = stage.Scope(ctx)
			}
			b, err := stage.Run(ctx, []guard.Call{
				call("call_1", "place_order", `{"item": "book", "user_id": "u-attacker"}`), call("call_2", "transfer_money", `{"amount": 5}`)})
			if err != nil || b.Interrupt == nil {
				t.Fatalf("Run() = %+v, %v; want a pause", b, err)
			}
			if ev := events.of(guard.EventForgedArgument); len(ev) != 1 || ev[0].CallID != "call_1" {
				t.Errorf("forged_argument events = %+v, want one for call_1", ev)
			}
			if ev := events.of(noted); len(ev) != 1 || ev[0].CallID != "call_1" {
				t.Errorf("tool middleware events of Run = %+v, want one for call_1", ev)
			}
			p := b.Interrupt.Pending[0]
			if _, err := stage.Resume(ctx, b.Interrupt, toolstage.Decision{CallID: p.ID, Action: toolstage.Accept, Digest: p.Digest}); err != nil {
				t.Fatalf("Resume() error = %v", err)
			}
			var calls []string
			for _, e := range events.of(noted) {
				calls = append(calls, e.CallID)
			}
			if !slices.Equal(calls, []string{"call_1", "call_2"}) {
				t.Errorf("tool middleware events after Resume for calls %q, want call_1 then call_2", calls)
			}
		})
	}
}

// Resume's checks report to the Stage's WithEventHandler without Scope
// too: an injector that fails when Resume sets an approved call's
// injected arguments is reported (args_rejected, with the InjectError),
// beside the refusal.
func TestEventHandlerWithoutScopeOnDecide(t *testing.T) {
	t.Parallel()
	order := toolstage.NewTool("place_order", "Orders.", func(_ context.Context, a orderArgs) (string, error) {
		return "ordered " + a.Item, nil
	})
	var events eventLog
	stage := toolstage.New([]toolstage.Tool{order}, toolstage.Inject("user_id", userFromRequest),
		toolstage.WithApprovalFor("place_order"), toolstage.WithEventHandler(events.handle))
	b, err := stage.Run(asUser(context.Background(), "u-alice"), []guard.Call{call("call_1", "place_order", `{"item": "book"}`)})
	if err != nil || b.Interrupt == nil {
		t.Fatalf("Run() = %+v, %v; want a pause", b, err)
	}
	p := b.Interrupt.Pending[0]
	// No user in the Resume's context: the injector fails.
	if _, err := stage.Resume(context.Background(), b.Interrupt, decide(p, toolstage.Accept)); !errors.Is(err, toolstage.ErrDecisionRefused) {
		t.Fatalf("Resume() without a user: error = %v, want ErrDecisionRefused", err)
	}
	var ie *toolstage.InjectError
	if ev := events.of(guard.EventArgsRejected); len(ev) != 1 || !errors.As(ev[0].Err, &ie) || ev[0].CallID != "call_1" {
		t.Errorf("args_rejected events = %+v, want one for call_1 with the InjectError", ev)
	}
	if ev := events.of(guard.EventApprovalRefused); len(ev) != 1 {
		t.Errorf("approval_refused events = %+v, want one", ev)
	}
}

// Scope sends the model stage's events to the Stage's WithEventHandler
// too: one handler sees both stages, ToolArgValidation's repair of a call
// and the tool stage's events of the same call.
func TestScopeSendsBothStagesEvents(t *testing.T) {
	t.Parallel()
	note := toolstage.ToolFunc(func(next toolstage.ToolHandler) toolstage.ToolHandler {
		return func(ctx context.Context, c *toolstage.ToolCall) (*toolstage.ToolResult, error) {
			toolstage.ReportEvent(ctx, guard.Event{Kind: noted})
			return next(ctx, c)
		}
	})
	pay := toolstage.NewTool("transfer_money", "Pays.", func(context.Context, transferArgs) (string, error) {
		return "paid", nil
	})
	var events eventLog
	stage := toolstage.New([]toolstage.Tool{pay}, toolstage.WithToolMiddleware(note), toolstage.WithEventHandler(events.handle))
	ctx := stage.Scope(context.Background())
	calls := modelStage(t, ctx, []guard.Call{call("call_1", "transfer_money", `{"amount": "5", "to": "bob"}`)})
	if _, err := stage.Run(ctx, calls); err != nil {
		t.Fatal(err)
	}
	var seen []string
	for _, e := range events.all() {
		seen = append(seen, e.Middleware+" "+string(e.Kind)+" "+e.CallID)
	}
	want := []string{"ToolArgValidation repaired call_1", "toolstage noted call_1"}
	if !slices.Equal(seen, want) {
		t.Errorf("events = %q, want %q", seen, want)
	}
}
