package agent_test

import (
	"context"
	"testing"

	"github.com/toolguard/toolguard/agent"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/middleware"
)

// BenchmarkRunToolRetry is BenchmarkRun's "recommended" run with an
// Idempotent tool under ToolRetry whose call succeeds at once: the cost of
// the tool stage's retry on the path where nothing fails.
func BenchmarkRunToolRetry(b *testing.B) {
	tool := agent.Idempotent(agent.NewTool("change_drink", "Change the preferences of a drink order.",
		func(_ context.Context, a ChangeDrinkArgs) (string, error) { return "changed " + a.DrinkID, nil }))
	a := agent.New(runBenchModel{}, []agent.Tool{tool},
		agent.WithMiddleware(middleware.ToolCallLimit(guard.WithRunLimit(10)), middleware.ToolArgValidation(), middleware.ModelRetry()),
		agent.WithToolMiddleware(agent.ToolRetry()))
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		res, err := a.Run(ctx, "Make my latte large, hot, with coconut milk.")
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Steps) != 1 || res.Steps[0].Result != "changed latte" {
			b.Fatalf("steps = %+v", res.Steps)
		}
	}
}
