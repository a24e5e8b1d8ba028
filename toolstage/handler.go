package toolstage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// ToolCall is one tool call on its way through the tool stage: from the
// model's accepted response, through the tool middlewares
// ([WithToolMiddleware]), to the tool.
//
// A tool middleware may replace Args (a rewrite, a default). Arguments a
// middleware replaced are checked against the tool's schema before the
// tool runs: a tool never receives arguments its schema rejects. ID and
// Name are the call's identity and must not be changed.
type ToolCall struct {
	// ID is the call's id, as the model sent it or, when it sent none,
	// synthesized (the id ToolArgValidation writes back).
	ID string
	// Name is the tool's name as sent to the model.
	Name string
	// Args is the JSON object of arguments the tool will get: checked
	// against the tool's schema, with empty values stripped and the
	// default coercions applied ("5000" for a number becomes 5000), and
	// injected arguments ([Inject]) set; or, when the model's arguments
	// fail the check, as the model sent them, and the tool stage refuses
	// them.
	Args json.RawMessage
	// Tool is the tool the call runs. A middleware may wrap it (to add
	// behaviour around Call); the arguments are still checked against the
	// schema of the tool the model called.
	Tool Tool
}

// ToolResult is what a tool call produced.
type ToolResult struct {
	// Content is what the model reads: the tool message's content.
	Content string
	// Artifact is for the program only: in Outcome.Artifact, never
	// sent to the model (LangChain's content_and_artifact).
	Artifact any
	// Direct ends the run after this call's batch with Content as
	// Result.Output, without asking the model again (LangChain's
	// return_direct). When several calls of a batch are Direct, the first
	// in call order gives the output.
	Direct bool
}

// ToolHandler runs one tool call. The innermost handler of the tool stage
// checks the arguments when needed and calls the tool; a [ToolMiddleware]'s
// handler calls the next one zero or more times.
//
// A ToolHandler must be safe for concurrent use: the calls of one model
// response go through it in parallel. It returns a non-nil result or a
// non-nil error. An error is what the model reads as the call's result (a
// *validation.Error as feedback, any other error as a tool error), unless it
// wraps [ErrStopRun], which ends the run.
type ToolHandler func(ctx context.Context, call *ToolCall) (*ToolResult, error)

// ToolMiddleware wraps the [ToolHandler] of the tool stage: it sees each
// tool call after the model stage accepted it and before the tool runs, and
// each result after. It may answer without calling next (deny a call by
// policy, answer from a cache), call next more than once ([ToolRetry]), or
// replace the call's Args before calling next.
//
// Implementations must be safe for concurrent use: one ToolMiddleware
// serves every tool call of every batch of a stage.
type ToolMiddleware interface {
	WrapToolCall(next ToolHandler) ToolHandler
}

// ToolFunc adapts a function to the [ToolMiddleware] interface.
type ToolFunc func(next ToolHandler) ToolHandler

// WrapToolCall calls f(next).
func (f ToolFunc) WrapToolCall(next ToolHandler) ToolHandler { return f(next) }

// ErrStopRun ends a batch, and the host's run, from the tool stage: a tool
// middleware (or a tool) that returns an error wrapping it makes
// [Stage.Run] return that error with the batch (toolguard's agent returns
// it with the partial Result). The calls of the batch that are running finish;
// those not started never start. The stopped turn is recorded whole, so
// that what ran is never forgotten: Result.Messages ends with it, each call
// followed by the tool message the model will read if the conversation
// goes on (the result of a call that finished, the stopping call's error,
// and for a call that never started, that it did not run), and
// Result.Steps holds every call of it, those that never started with
// [ErrCallNotStarted]. On a thread with a [Checkpointer] that is the
// thread's transcript: the next run on the thread continues from it. A
// tool stage that panics ends the run in the same way ([ToolPanicError]).
var ErrStopRun = errors.New("toolstage: run stopped by the tool stage")

// chainTools returns h wrapped in mws, the first outermost.
func chainTools(mws []ToolMiddleware, h ToolHandler) ToolHandler {
	for i := len(mws) - 1; i >= 0; i-- {
		h = mws[i].WrapToolCall(h)
	}
	return h
}

// ArgsRejectedError is the Outcome.Err of a call whose arguments, as the tool
// stage left them (replaced by a tool middleware), do not validate against
// the tool's schema: the tool did not run. The model is told only that the
// call could not be run, never the violations (the arguments are not the
// model's to fix, and may hold values it must not read); Err holds them for
// the program.
type ArgsRejectedError struct {
	Tool string
	Err  error // the *validation.Error
}

// Error names the tool and says it did not run; the violations are in Err.
func (e *ArgsRejectedError) Error() string {
	return fmt.Sprintf("toolstage: tool %q: the arguments set by the tool stage do not match the tool's schema; the tool did not run", e.Tool)
}

// Unwrap returns Err, the validation error.
func (e *ArgsRejectedError) Unwrap() error { return e.Err }

// errToolChanged is the error of a call whose Name a tool middleware
// changed.
var errToolChanged = errors.New("toolstage: a tool middleware changed the name of the called tool")

// errNoResult is the error of a tool handler that returned neither a result
// nor an error.
var errNoResult = errors.New("toolstage: the tool stage returned no result")
