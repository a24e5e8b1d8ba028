package middleware_test

import (
	"context"
	"errors"
	"testing"

	"github.com/cenkalti/backoff/v4"
	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/fakemodel"
)

// TestRecommendedStack runs the recommended stack (Chain's doc, the README's first example) over a model that sends an
// invalid call, fails with a 503 on the re-ask, then corrects itself: the
// retry absorbs the 503, validation gets the corrected call, and the run
// limit of 1 counts only that call, because the limiter sits outside
// validation. With the limiter inside validation, the rejected call would
// have used up the run's budget.
func TestRecommendedStack(t *testing.T) {
	t.Parallel()
	script := func() *fakemodel.Model {
		return fakemodel.New(
			fakemodel.ToolCalls(fakemodel.Call("get_weather", `{"city": 1}`)),
			fakemodel.Fail(errors.New("API returned unexpected status code: 503: Service Unavailable")),
			fakemodel.ToolCalls(fakemodel.Call("get_weather", `{"city": "Paris"}`)),
		)
	}
	noWait := guard.WithBackOff(func() backoff.BackOff { return &backoff.ZeroBackOff{} })
	ctx := guard.WithRun(context.Background())

	m := script()
	llm := middleware.Wrap(m,
		middleware.ToolCallLimit(guard.WithRunLimit(1), guard.WithExitBehavior(guard.ExitError)),
		middleware.ToolArgValidation(),
		middleware.ModelRetry(noWait),
	)
	resp, err := llm.GenerateContent(ctx, question, llms.WithTools([]llms.Tool{weatherTool}))
	if err != nil {
		t.Fatalf("recommended stack: %v", err)
	}
	if got := args(resp, 0); got != `{"city": "Paris"}` || len(m.Requests()) != 3 {
		t.Errorf("got %q after %d model calls, want the corrected call after 3", got, len(m.Requests()))
	}

	m = script()
	inverted := middleware.Wrap(m,
		middleware.ToolArgValidation(),
		middleware.ToolCallLimit(guard.WithRunLimit(1), guard.WithExitBehavior(guard.ExitError)),
		middleware.ModelRetry(noWait),
	)
	_, err = inverted.GenerateContent(guard.WithRun(context.Background()), question, llms.WithTools([]llms.Tool{weatherTool}))
	var le *guard.LimitExceededError
	if !errors.As(err, &le) {
		t.Errorf("limiter inside validation: err = %v, want the rejected call to have used the run's budget", err)
	}
}
