package agent

import "context"

// Tool is a tool the agent offers the model.
//
// Implementations must be safe for concurrent use: the agent runs the tool
// calls of one model response in parallel (WithMaxConcurrency).
type Tool interface {
	// Name is the function name the model calls.
	Name() string
	// Description tells the model what the tool does.
	Description() string
	// Schema is the JSON Schema of the arguments, sent to the model as
	// llms.FunctionDefinition.Parameters and used by ToolArgValidation: a
	// *validation.Schema, a map[string]any, json.RawMessage or any value
	// validation.Compile accepts. nil means any JSON object. The value must
	// not change once returned.
	Schema() any
	// Call runs the tool with args, the call's JSON object of arguments (as
	// validated and stripped by the middlewares). An error is reported to
	// the model as the tool's result; it does not end the run.
	Call(ctx context.Context, args string) (string, error)
}
