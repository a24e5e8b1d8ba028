package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/errfmt"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/validation"
)

// OutputToolName is the name of the answer tool that [WithOutputSchema]
// offers the model: a call of it is the run's final answer. It is
// provider-safe ([IsSafeToolName]).
const OutputToolName = "final_answer"

// outputDescription is the answer tool's description, what the model reads
// about it.
const outputDescription = "Give your final answer: call this tool, once and alone, with the answer as its arguments, when you are done. Do not answer in text."

// maxOutputReasks is how many times a run asks again for its answer after
// the model answered in text or with arguments the schema rejects (see
// WithOutputSchema).
const maxOutputReasks = 2

// ErrNoOutput is wrapped by the error [Agent.Run] returns, with the partial
// *[Result], when a run with [WithOutputSchema] ends without a valid
// answer: the model kept answering in text or with invalid answers, a
// limit or ModelRetry's ContinueOnFailure stood in for the model's answer
// (the error also wraps the *guard.LimitExceededError or
// *retry.Error, see [middleware.StandInError]), the run reached
// [WithMaxIterations] (it also wraps [ErrMaxIterations]), or a Direct tool
// result is not a valid answer. [Output] returns it for a Result without
// an answer. A failed model call (ToolArgValidation's WithFailClosed
// included) is returned as without an output schema, wrapping its error.
var ErrNoOutput = errors.New("agent: the run ended without a valid structured answer")

// Step errors of the answer tool's calls that were not taken (see
// WithOutputSchema); the model reads why.
var (
	errAnswerNotAccepted = errors.New("agent: answer not accepted: other tool calls of its response failed")
	errAnswerIgnored     = errors.New("agent: answer ignored: only the first answer of a response is considered")
)

// outputTool is an agent's answer tool.
type outputTool struct {
	name   string
	schema *validation.Schema
}

// addOutputTool offers the answer tool when [WithOutputSchema] is set. New
// calls it after the tools are added, before their names are sorted.
func (a *Agent) addOutputTool(s *validation.Schema) {
	if s == nil {
		return
	}
	if _, dup := a.tools[OutputToolName]; dup {
		panic(fmt.Sprintf("agent: New: a tool is named %q, the name of WithOutputSchema's answer tool: rename it with Renamed or WithToolNames", OutputToolName))
	}
	a.output = &outputTool{name: OutputToolName, schema: s}
	a.schemas[OutputToolName] = s
	a.names = append(a.names, OutputToolName)
	a.defs = append(a.defs, llms.Tool{Type: "function", Function: &llms.FunctionDefinition{
		Name:        OutputToolName,
		Description: outputDescription,
		Parameters:  parameters(s),
	}})
}

// withOutput names the answer tool in a run's context, for ToolCallLimit:
// none for an agent without one, even inside the run of one that has one
// (a sub-agent called by a tool), whose answer tool is not this run's.
func (a *Agent) withOutput(ctx context.Context) context.Context {
	if a.output == nil {
		if guard.AnswerToolFrom(ctx) == "" {
			return ctx
		}
		return guard.WithAnswerTool(ctx, "")
	}
	return guard.WithAnswerTool(ctx, a.output.name)
}

// noOutput wraps err, which ends a run without an answer, in [ErrNoOutput]
// when the run needs one.
func (a *Agent) noOutput(err error) error {
	if a.output == nil || err == nil {
		return err
	}
	return fmt.Errorf("%w: %w", ErrNoOutput, err)
}

// outputTurn handles one model turn of a run with an output schema, in
// place of the loop's handling: it records the turn in res and reports
// whether the run is over, and with what error. reasks counts the run's
// re-asks for the answer. The answer's siblings go through the loop's
// path (s: the turn saved before they run, the approval gate, the batch
// saved after), so a turn that pauses for approval, or is cut off, keeps
// its answer call for [Agent.Resume] (resumeTurn), which settles it.
func (a *Agent) outputTurn(ctx context.Context, s *session, turn int, res *Result, resp *llms.ContentResponse, text string, calls []llms.ToolCall, reasks *int) (bool, error) {
	name := a.output.name
	if len(calls) == 0 {
		if err := middleware.StandInError(resp); err != nil {
			return true, fmt.Errorf("%w: %w", ErrNoOutput, err)
		}
		res.Messages = append(res.Messages, llms.TextParts(llms.ChatMessageTypeAI, text))
		if *reasks++; *reasks > maxOutputReasks {
			return true, fmt.Errorf("%w: the model answered in text instead of calling %s", ErrNoOutput, name)
		}
		res.Messages = append(res.Messages, llms.TextParts(llms.ChatMessageTypeHuman, errfmt.AnswerInText(name)))
		// Hook (checkpoint.go): the re-ask is saved before the next model call.
		if err := s.saveBatch(ctx, res, turn); err != nil {
			return true, err
		}
		return false, nil
	}
	// The answer is checked before runBatch forgets the ledger.
	answer, answerErr := a.checkFirstAnswer(ctx, calls)
	// Hook (checkpoint.go): the turn is saved before its calls run.
	if err := s.saveTurn(ctx, res, turn, text, a.withoutForged(calls)); err != nil {
		return true, err
	}
	// Hook (approval.go): the siblings run, less those that wait for a
	// person; the answer calls are left to settleOutput.
	b, err := a.runBatch(ctx, s, turn, res, text, calls)
	if err != nil {
		return true, a.cutTurn(ctx, s, res, turn, text, calls, b, err)
	}
	return a.settleOutput(ctx, s, turn, res, text, calls, b, answer, answerErr, reasks)
}

// isAnswer reports whether c calls the run's answer tool.
func (a *Agent) isAnswer(c llms.ToolCall) bool {
	return a.output != nil && c.FunctionCall != nil && c.FunctionCall.Name == a.output.name
}

// firstAnswer returns the index of the first answer call of calls, the one
// considered, or -1.
func (a *Agent) firstAnswer(calls []llms.ToolCall) int {
	for i, c := range calls {
		if a.isAnswer(c) {
			return i
		}
	}
	return -1
}

// checkFirstAnswer returns checkAnswer's verdict on the first answer call
// of calls; nil, nil when there is none.
func (a *Agent) checkFirstAnswer(ctx context.Context, calls []llms.ToolCall) ([]byte, error) {
	if first := a.firstAnswer(calls); first >= 0 {
		return a.checkAnswer(ctx, calls[first])
	}
	return nil, nil
}

// settleOutput finishes an output turn whose siblings of the answer have
// all finished (b holds their steps, at their indexes in calls; the answer
// calls' slots are empty): it decides on the answer (answer, answerErr:
// the first one's checkAnswer), records the turn in res and reports
// whether the run is over, and with what error. A turn that goes on is
// saved (s) before the next model call.
func (a *Agent) settleOutput(ctx context.Context, s *session, turn int, res *Result, text string, calls []llms.ToolCall, b batch, answer []byte, answerErr error, reasks *int) (bool, error) {
	name := a.output.name
	first := a.firstAnswer(calls)
	siblingsOK := true
	for i, c := range calls {
		if !a.isAnswer(c) {
			siblingsOK = siblingsOK && b.steps[i].Err == nil
		}
	}
	accepted := false
	for i, c := range calls {
		if !a.isAnswer(c) {
			continue
		}
		st := Step{CallID: c.ID, Tool: name, Arguments: c.FunctionCall.Arguments, ModelArguments: c.FunctionCall.Arguments, Turn: turn, Message: -1}
		switch {
		case i != first:
			st.Err, b.answers[i] = errAnswerIgnored, errfmt.AnswerIgnored
		case answerErr != nil:
			st.Err, b.answers[i] = answerErr, toolMessage(Step{Err: answerErr})
		case !siblingsOK:
			st.Arguments = string(answer)
			st.Err, b.answers[i] = errAnswerNotAccepted, errfmt.AnswerNotAccepted(name)
		default:
			st.Arguments = string(answer)
			st.Result, b.answers[i] = errfmt.AnswerAccepted, errfmt.AnswerAccepted
			accepted = true
		}
		b.steps[i] = st
	}

	recordTurn(res, text, calls, b)

	switch {
	case accepted:
		res.Output = string(answer)
	case b.direct >= 0:
		s := b.steps[b.direct]
		out, err := checkArgs(name, a.output.schema, []byte(s.Result))
		if err != nil {
			return true, fmt.Errorf("%w: the Direct result of tool %q is not a valid answer: %w", ErrNoOutput, s.Tool, err)
		}
		res.Output = string(compactJSON(out.Args))
	case answerErr != nil:
		if *reasks++; *reasks > maxOutputReasks {
			return true, fmt.Errorf("%w: %w", ErrNoOutput, answerErr)
		}
		fallthrough
	default:
		// Hook (checkpoint.go): the batch is saved before the next model call.
		if err := s.saveBatch(ctx, res, turn); err != nil {
			return true, err
		}
		return false, nil
	}
	res.Messages = append(res.Messages, llms.TextParts(llms.ChatMessageTypeAI, res.Output))
	return true, nil
}

// checkAnswer returns the answer of call, as compact JSON, or the
// *validation.Error of an invalid one. A call ToolArgValidation validated
// against the run's schemas is not checked again.
func (a *Agent) checkAnswer(ctx context.Context, c llms.ToolCall) ([]byte, error) {
	args := c.FunctionCall.Arguments
	if checkedLedger(ctx).Validated(c.ID, c.FunctionCall.Name, args) {
		return []byte(compactJSON([]byte(args))), nil
	}
	res, err := checkArgs(a.output.name, a.output.schema, []byte(args))
	if err != nil {
		return nil, err
	}
	return []byte(compactJSON(res.Args)), nil
}

// Output decodes r.Output, a run's JSON answer ([WithOutputSchema]), into a
// T with encoding/json. It returns [ErrNoOutput] when r is nil or has no
// output, and an error wrapping the decoder's when the answer does not
// decode into T (which a [validation.Typed] schema of T rules out).
func Output[T any](r *Result) (T, error) {
	var v T
	if r == nil || r.Output == "" {
		return v, ErrNoOutput
	}
	if err := json.Unmarshal([]byte(r.Output), &v); err != nil {
		return v, fmt.Errorf("agent: Output: the answer does not decode into %T: %w", v, err)
	}
	return v, nil
}
