package agent_test

import (
	"context"
	"errors"
	"testing"

	"github.com/cenkalti/backoff/v4"
	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/agent"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/fakemodel"
	"github.com/toolguard/toolguard/toolstage"
)

func pingTool() toolstage.Tool {
	return toolstage.NewSchemaTool("ping", "Pings.", nil, func(context.Context, map[string]any) (string, error) { return "pong", nil })
}

// ping is a model turn calling ping.
func ping() fakemodel.Step { return fakemodel.ToolCalls(fakemodel.Call("ping", `{}`)) }

// ToolCallLimit's run limit counts per Run: one agent, two runs, each with
// its own two calls; the third call of the first run ends it.
func TestToolCallLimitPerRun(t *testing.T) {
	t.Parallel()
	model := fakemodel.New(
		// Run 1: two calls, then a third that the limit ends.
		ping(), ping(), ping(),
		// Run 2: a fresh count, so two calls pass again.
		ping(), ping(), fakemodel.Text("two pings"),
	)
	a := agent.New(model, toolstage.New([]toolstage.Tool{pingTool()}), agent.WithMiddleware(
		middleware.ToolCallLimit(guard.WithRunLimit(2), guard.WithExitBehavior(guard.ExitEnd)),
	))

	first, err := a.Run(context.Background(), "ping forever")
	if err != nil {
		t.Fatalf("first Run = %v, want nil: ExitEnd ends the run with a text answer", err)
	}
	const limitText = "Tool call limit reached: run limit exceeded (2/2 calls)."
	if first.Output != limitText || len(first.Steps) != 2 || first.ModelCalls != 3 {
		t.Errorf("first Run: Output %q, %d steps, %d model calls; want %q, 2, 3", first.Output, len(first.Steps), first.ModelCalls, limitText)
	}

	second, err := a.Run(context.Background(), "ping twice")
	if err != nil {
		t.Fatalf("second Run = %v, want nil", err)
	}
	if second.Output != "two pings" || len(second.Steps) != 2 {
		t.Errorf("second Run: Output %q, %d steps; want %q, 2: the run limit must count per run", second.Output, len(second.Steps), "two pings")
	}
}

// The run scope does not depend on the transcript: a human message inside
// the run (here the agent's note about a call without a function) does not
// reset the count, as it would for a limiter reading the run from the
// transcript.
func TestToolCallLimitRunIgnoresHumanMessages(t *testing.T) {
	t.Parallel()
	broken := fakemodel.Response(&llms.ContentResponse{Choices: []*llms.ContentChoice{{
		ToolCalls: []llms.ToolCall{{ID: "broken", Type: "function"}},
	}}})
	model := fakemodel.New(ping(), broken, ping(), fakemodel.Text("unreached"))
	a := agent.New(model, toolstage.New([]toolstage.Tool{pingTool()}), agent.WithMiddleware(
		middleware.ToolCallLimit(guard.WithRunLimit(1), guard.WithExitBehavior(guard.ExitError)),
	))
	res, err := a.Run(context.Background(), "ping")
	var le *guard.LimitExceededError
	if !errors.As(err, &le) || le.Scope != guard.ScopeRun || le.Count != 1 {
		t.Fatalf("Run = %v, want a *LimitExceededError of the run with 1 call made", err)
	}
	if got := res.Messages[len(res.Messages)-1].Role; got != llms.ChatMessageTypeHuman {
		t.Errorf("transcript ends with a %s message, want the human note about the broken call", got)
	}
}

// A thread named in the caller's context carries over from run to run.
func TestToolCallLimitThreadAcrossRuns(t *testing.T) {
	t.Parallel()
	model := fakemodel.New(ping(), ping(), fakemodel.Text("done"), ping(), ping())
	a := agent.New(model, toolstage.New([]toolstage.Tool{pingTool()}), agent.WithMiddleware(
		middleware.ToolCallLimit(guard.WithThreadLimit(3), guard.WithExitBehavior(guard.ExitEnd)),
	))
	ctx := guard.WithThread(context.Background(), "session-1")
	if res, err := a.Run(ctx, "ping twice"); err != nil || res.Output != "done" {
		t.Fatalf("first Run = %q, %v; want done, nil", res.Output, err)
	}
	res, err := a.Run(ctx, "ping twice more")
	const limitText = "Tool call limit reached: thread limit exceeded (3/3 calls)."
	if err != nil || res.Output != limitText || len(res.Steps) != 1 {
		t.Errorf("second Run = %q with %d steps, %v; want %q after 1 step", res.Output, len(res.Steps), err, limitText)
	}
}

// The recommended stack in an agent: a transient error is retried, a bad
// call re-asked, and ModelCalls counts every call that reached the model.
func TestRecommendedStack(t *testing.T) {
	t.Parallel()
	var rec recorder[WeatherArgs]
	weather := toolstage.NewTool("get_weather", "Weather.", rec.fn("sunny"))
	model := fakemodel.New(
		fakemodel.Fail(errors.New("API returned unexpected status code: 503: Service Unavailable")),
		fakemodel.ToolCalls(fakemodel.Call("get_weather", `{"city": 75001}`)),
		fakemodel.ToolCalls(fakemodel.Call("get_weather", `{"city": "Paris"}`)),
		fakemodel.Text("Sunny."),
	)
	a := agent.New(model, toolstage.New([]toolstage.Tool{weather}), agent.WithMiddleware(
		middleware.ToolCallLimit(guard.WithRunLimit(5)),
		middleware.ToolArgValidation(),
		middleware.ModelRetry(guard.WithBackOff(func() backoff.BackOff { return &backoff.ZeroBackOff{} })),
	))
	res, err := a.Run(context.Background(), "Weather in Paris?")
	if err != nil {
		t.Fatalf("Run = %v, want nil", err)
	}
	if res.Output != "Sunny." || res.ModelCalls != 4 || len(rec.got()) != 1 {
		t.Errorf("Run: Output %q, ModelCalls %d, tool ran %d times; want Sunny., 4 (retry and re-ask included), 1",
			res.Output, res.ModelCalls, len(rec.got()))
	}
}
