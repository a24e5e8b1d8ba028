package middleware_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/fakemodel"
)

// limitErr returns the *LimitExceededError err holds, failing the test if
// none.
func limitErr(t *testing.T, err error) *guard.LimitExceededError {
	t.Helper()
	var le *guard.LimitExceededError
	if !errors.As(err, &le) {
		t.Fatalf("error = %v, want a *LimitExceededError", err)
	}
	return le
}

// The note a replay adds on tool calls without a function is a human
// message the run added itself: the transcript's run goes on past it, so
// the calls before it still count.
func TestTranscriptRunOutlivesNoFunctionNote(t *testing.T) {
	t.Parallel()
	calls := []llms.ToolCall{
		{ID: "c1", Type: "function", FunctionCall: &llms.FunctionCall{Name: "search", Arguments: `{}`}},
		{ID: "c2", Type: "function"},
	}
	msgs := append(slices.Clone(question), middleware.ToolCallMessages("", calls, []string{"found", ""})...)
	if last := msgs[len(msgs)-1]; last.Role != llms.ChatMessageTypeHuman {
		t.Fatalf("the transcript ends with %v, want the note on the call without a function", last.Role)
	}
	for _, tc := range []struct {
		name  string
		limit middleware.Middleware
	}{
		{"ToolCallLimit", middleware.ToolCallLimit(guard.WithRunLimit(1), guard.WithExitBehavior(guard.ExitError))},
		{"ModelCallLimit", middleware.ModelCallLimit(guard.WithRunLimit(1), guard.WithExitBehavior(guard.ExitError))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := fakemodel.New(limCalls("search"))
			_, err := middleware.Wrap(m, tc.limit).GenerateContent(context.Background(), msgs, limTools)
			if le := limitErr(t, err); le.Scope != guard.ScopeRun || le.Count != 1 {
				t.Errorf("error = %v, want the run limit with 1 call made", err)
			}
		})
	}
}
