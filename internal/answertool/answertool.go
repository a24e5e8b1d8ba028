// Package answertool lets an agent loop tell the model stage which tool
// call is the run's final answer (agent.WithOutputSchema), so that
// ToolCallLimit does not count it: answering is not running a tool, and a
// run whose tools are used up must still be able to answer.
package answertool

import "context"

type nameKey struct{}

// With returns a copy of ctx naming the run's answer tool.
func With(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, nameKey{}, name)
}

// Name returns the answer tool ctx names, "" if none.
func Name(ctx context.Context) string {
	n, _ := ctx.Value(nameKey{}).(string)
	return n
}
