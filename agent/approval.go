package agent

import (
	"context"

	"github.com/tmc/langchaingo/llms"
)

// approvalConfig is what the options say about approval and checkpoints.
type approvalConfig struct{}

// approval is an agent's approval gate and checkpointer.
type approval struct{}

func newApproval(approvalConfig, map[string]Tool) *approval { return nil }

// runBatch runs a model turn's calls.
func (a *Agent) runBatch(ctx context.Context, _ *session, turn int, res *Result, _ string, calls []llms.ToolCall) (batch, error) {
	return a.runTools(ctx, turn, res.Messages, calls)
}
