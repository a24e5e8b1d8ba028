package guard

import "context"

type answerToolKey struct{}

// WithAnswerTool returns a copy of ctx that names the run's answer tool: the
// tool whose call is an agent run's final, structured answer (package
// agent's WithOutputSchema offers one). [ToolCallLimit] does not count its
// calls when it limits every tool: answering is not running a tool, and a
// run whose tools are used up must still be able to answer.
func WithAnswerTool(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, answerToolKey{}, name)
}

// AnswerToolFrom returns the answer tool ctx names ([WithAnswerTool]), ""
// if none.
func AnswerToolFrom(ctx context.Context) string {
	n, _ := ctx.Value(answerToolKey{}).(string)
	return n
}
