package middleware_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/fakemodel"
)

// pausedTranscript is a run that paused after one model call whose
// response held three tool calls, recorded as the agent records them: an
// AI message per call, each followed by its tool message.
func pausedTranscript() []llms.MessageContent {
	calls := make([]llms.ToolCall, 3)
	results := make([]string, 3)
	for i := range calls {
		calls[i] = llms.ToolCall{ID: fmt.Sprint("c", i), Type: "function", FunctionCall: &llms.FunctionCall{Name: "search", Arguments: `{}`}}
		results[i] = "found"
	}
	return append(slices.Clone(question), middleware.ToolCallMessages("", calls, results)...)
}

// A resumed run's ModelCallLimit starts at the model calls the run made,
// not at the AI messages of its transcript, then counts in its scope: the
// calls of the resumed run are counted once each, whatever their
// responses held.
func TestWithResumedRunModelCalls(t *testing.T) {
	t.Parallel()
	m := fakemodel.New(limCalls("search", "search"), limCalls("search"), limCalls("search"))
	llm := middleware.Wrap(m, middleware.ModelCallLimit(guard.WithRunLimit(3), guard.WithExitBehavior(guard.ExitError)))
	ctx := guard.WithResumedRun(context.Background(), 1)
	msgs := pausedTranscript()
	for i := range 2 {
		resp, err := llm.GenerateContent(ctx, msgs, limTools)
		if err != nil {
			t.Fatalf("model call %d of the resumed run: %v (the run made 1 before the pause)", i+1, err)
		}
		tcs := middleware.ToolCalls(resp, len(msgs))
		msgs = append(msgs, middleware.ToolCallMessages("", tcs, slices.Repeat([]string{"found"}, len(tcs)))...)
	}
	_, err := llm.GenerateContent(ctx, msgs, limTools)
	if le := limitErr(t, err); le.Scope != guard.ScopeRun || le.Count != 3 {
		t.Errorf("the fourth model call: %v, want the run limit with 3 calls made", err)
	}
	if n := len(m.Requests()); n != 2 {
		t.Errorf("the model saw %d requests, want 2", n)
	}
}

// Stacked ModelCallLimits each start at the run's model calls, and a
// negative count is none.
func TestWithResumedRunStackedModelCallLimits(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		made, want int // the model calls before the pause; those let through after it
	}{{0, 2}, {-5, 2}, {1, 1}, {2, 0}} {
		t.Run(fmt.Sprint(tc.made), func(t *testing.T) {
			t.Parallel()
			m := fakemodel.New(limCalls("search"), limCalls("search"), limCalls("search"))
			limit := func() middleware.Middleware {
				return middleware.ModelCallLimit(guard.WithRunLimit(2), guard.WithExitBehavior(guard.ExitError))
			}
			llm := middleware.Wrap(m, limit(), limit())
			ctx := guard.WithResumedRun(context.Background(), tc.made)
			for range 3 {
				if _, err := llm.GenerateContent(ctx, pausedTranscript(), limTools); err != nil {
					limitErr(t, err)
					break
				}
			}
			if n := len(m.Requests()); n != tc.want {
				t.Errorf("the model saw %d requests, want %d", n, tc.want)
			}
		})
	}
}

// A resumed run's ToolCallLimit starts at the calls of its transcript,
// read once: the calls the resumed run makes are counted in its scope,
// not a second time from the transcript that records them.
func TestWithResumedRunToolCalls(t *testing.T) {
	t.Parallel()
	m := fakemodel.New(limCalls("search"), limCalls("search", "search"), limCalls("search"))
	llm := middleware.Wrap(m, middleware.ToolCallLimit(guard.WithRunLimit(5), guard.WithExitBehavior(guard.ExitError)))
	ctx := guard.WithResumedRun(context.Background(), 1)
	msgs := pausedTranscript() // 3 calls made
	var made []int
	for range 3 {
		resp, err := llm.GenerateContent(ctx, msgs, limTools)
		if err != nil {
			if le := limitErr(t, err); le.Count != 4 || le.Requested != 2 {
				t.Errorf("error = %v, want the run limit with 4 calls made, 2 requested", err)
			}
			break
		}
		tcs := middleware.ToolCalls(resp, len(msgs))
		made = append(made, len(tcs))
		msgs = append(msgs, middleware.ToolCallMessages("", tcs, slices.Repeat([]string{"found"}, len(tcs)))...)
	}
	if !slices.Equal(made, []int{1}) {
		t.Errorf("responses let through held %v calls, want [1]: 3 made, then 1, then 2 over the limit of 5", made)
	}
}
