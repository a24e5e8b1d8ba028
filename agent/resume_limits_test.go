package agent_test

import (
	"context"
	"errors"
	"testing"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/agent"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/fakemodel"
	"github.com/toolguard/toolguard/toolstage"
	"github.com/toolguard/toolguard/validation"
)

// resumeLimitCase is a run that pauses for approval of transfer_money and
// is resumed with the call accepted, under a limiter.
type resumeLimitCase struct {
	name  string
	limit middleware.Middleware
	steps []fakemodel.Step
	opts  []any
	// count is the Count of the limit exceeded after the Resume: the calls
	// the run made; balances is how many times get_balance ran.
	count, balances int
}

// run runs tc with its state in the interrupt or, with a checkpointer, in
// the thread, and checks that the resumed run stops at its limit, having
// counted the calls that happened.
func (tc resumeLimitCase) run(t *testing.T) {
	for _, store := range []string{"interrupt", "checkpointer"} {
		t.Run(store, func(t *testing.T) {
			t.Parallel()
			var b bank
			opts := append([]any{toolstage.WithApprovalFor("transfer_money"), agent.WithMiddleware(tc.limit)}, tc.opts...)
			ctx := context.Background()
			if store == "checkpointer" {
				opts = append(opts, agent.WithCheckpointer(new(toolstage.MemoryCheckpointer)))
				ctx = guard.WithThread(ctx, "t")
			}
			a := build(fakemodel.New(tc.steps...), b.tools(), opts...)
			_, err := a.Run(ctx, "pay alice")
			in := interruptOf(t, err)
			_, err = a.Resume(ctx, viaJSON(t, in), decide(in.Pending[0], toolstage.Accept, ""))
			t.Logf("Resume() error = %v", err)
			var le *guard.LimitExceededError
			if !errors.As(err, &le) || le.Scope != guard.ScopeRun || le.Count != tc.count {
				t.Errorf("Resume() error = %v, want the run limit exceeded with %d calls made", err, tc.count)
			}
			if n := b.count("get_balance"); n != tc.balances {
				t.Errorf("get_balance ran %d times, want %d", n, tc.balances)
			}
			if n := b.count("transfer_money"); n != 1 {
				t.Errorf("transfer_money ran %d times, want 1", n)
			}
		})
	}
}

// The fault: the transcript records each parallel tool call as an AI
// message of its own (the layout langchaingo's providers need), so after
// a Resume ModelCallLimit counted one response with three calls as three
// model calls, and stopped a run that had made one. Counts are of calls
// that happened: the run made 1 model call before the pause, 1 after;
// the third is over the limit of 2.
func TestResumeCountsModelCallsNotMessages(t *testing.T) {
	t.Parallel()
	resumeLimitCase{
		limit: middleware.ModelCallLimit(guard.WithRunLimit(2), guard.WithExitBehavior(guard.ExitError)),
		steps: []fakemodel.Step{
			fakemodel.ToolCalls(fakemodel.Call("get_balance", `{}`), fakemodel.Call("close_account", `{"reason":"moving"}`),
				fakemodel.Call("transfer_money", `{"to":"alice","amount":25}`)),
			fakemodel.ToolCalls(fakemodel.Call("get_balance", `{}`)),
			fakemodel.Text("done"),
		},
		count: 2, balances: 2,
	}.run(t)
}

// The fault, the other way: a human message the run itself adds (the
// re-ask for a structured answer, the note on calls without a function)
// ended the run for the limiters reading the transcript, so after a
// Resume the calls made before it were forgotten and a run limit could be
// passed.
func TestResumeCountsCallsBeforeRunFeedback(t *testing.T) {
	t.Parallel()
	toolLimit := func() middleware.Middleware {
		return middleware.ToolCallLimit(guard.WithRunLimit(3), guard.WithExitBehavior(guard.ExitError))
	}
	textFirst := func() []fakemodel.Step {
		return []fakemodel.Step{
			fakemodel.ToolCalls(fakemodel.Call("get_balance", `{}`), fakemodel.Call("get_balance", `{}`)),
			fakemodel.Text("It is spam."), // asked again for the structured answer
			fakemodel.ToolCalls(fakemodel.Call("transfer_money", `{"to":"alice","amount":25}`)),
			fakemodel.ToolCalls(fakemodel.Call("get_balance", `{}`)),
			fakemodel.ToolCalls(fakemodel.Call(agent.OutputToolName, goodAnswer)),
		}
	}
	output := []any{agent.WithOutputSchema(validation.Typed[Verdict]())}
	for _, tc := range []resumeLimitCase{
		{name: "ToolCallLimit, structured answer re-asked", limit: toolLimit(), steps: textFirst(), opts: output, count: 3, balances: 2},
		{name: "ModelCallLimit, structured answer re-asked", steps: textFirst(), opts: output, count: 3, balances: 2,
			limit: middleware.ModelCallLimit(guard.WithRunLimit(3), guard.WithExitBehavior(guard.ExitError))},
		{name: "ToolCallLimit, a call without a function", limit: toolLimit(), count: 3, balances: 2, steps: []fakemodel.Step{
			fakemodel.Response(&llms.ContentResponse{Choices: []*llms.ContentChoice{{ToolCalls: []llms.ToolCall{
				{ID: "c1", Type: "function", FunctionCall: &llms.FunctionCall{Name: "get_balance", Arguments: `{}`}},
				{ID: "c2", Type: "function", FunctionCall: &llms.FunctionCall{Name: "get_balance", Arguments: `{}`}},
				{ID: "c3", Type: "function"},
			}}}}),
			fakemodel.ToolCalls(fakemodel.Call("transfer_money", `{"to":"alice","amount":25}`)),
			fakemodel.ToolCalls(fakemodel.Call("get_balance", `{}`)),
			fakemodel.Text("done"),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t)
		})
	}
}
