package agent_test

import (
	"context"
	"testing"

	"github.com/toolguard/toolguard/agent"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/toolstage"
)

// BenchmarkRunToolRetry is BenchmarkRun's "recommended" run with an
// Idempotent tool under ToolRetry whose call succeeds at once: the cost of
// the tool stage's retry on the path where nothing fails.
func BenchmarkRunToolRetry(b *testing.B) {
	tool := toolstage.Idempotent(toolstage.NewTool("change_drink", "Change the preferences of a drink order.",
		func(_ context.Context, a ChangeDrinkArgs) (string, error) { return "changed " + a.DrinkID, nil }))
	a := agent.New(runBenchModel{}, toolstage.New([]toolstage.Tool{tool}, toolstage.WithToolMiddleware(toolstage.ToolRetry())), agent.WithMiddleware(middleware.ToolCallLimit(guard.WithRunLimit(10)), middleware.ToolArgValidation(), middleware.ModelRetry()))
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
