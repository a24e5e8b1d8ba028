package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/errfmt"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/repair"
	"github.com/toolguard/toolguard/strip"
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
	if _, dup := a.stage.Tool(OutputToolName); dup {
		panic(fmt.Sprintf("agent: New: a tool is named %q, the name of WithOutputSchema's answer tool: rename it with Renamed or WithToolNames", OutputToolName))
	}
	a.output = &outputTool{name: OutputToolName, schema: s}
	a.defs = append(a.defs, llms.Tool{Type: "function", Function: &llms.FunctionDefinition{
		Name:        OutputToolName,
		Description: outputDescription,
		Parameters:  s.Map(),
	}})
}

// withOutput names the answer tool in a run's context, for ToolCallLimit
// (none for an agent without one, even inside the run of one that has one:
// a sub-agent called by a tool, whose answer tool is not this run's), and
// gives ToolArgValidation its schema beside the tools'.
func (a *Agent) withOutput(ctx context.Context) context.Context {
	if a.output == nil {
		if guard.AnswerToolFrom(ctx) == "" {
			return ctx
		}
		return guard.WithAnswerTool(ctx, "")
	}
	schemas := maps.Clone(guard.ToolSchemasFrom(ctx))
	if schemas == nil {
		schemas = make(map[string]any, 1)
	}
	schemas[a.output.name] = a.output.schema
	ctx = guard.WithToolSchemas(ctx, schemas)
	return guard.WithAnswerTool(ctx, a.output.name)
}

// isAnswer reports whether c calls the answer tool o (false for a nil o).
func (o *outputTool) isAnswer(c llms.ToolCall) bool {
	return o != nil && c.FunctionCall != nil && c.FunctionCall.Name == o.name
}

// startRun implements [turnStage]: the answer tool's hooks for one run.
//
// A response without tool calls is no answer: the stage records it and
// asks for the answer tool (response), or ends the run with [ErrNoOutput]
// past the re-ask budget or when a limit or ModelRetry stood in for the
// model. The answer calls of a turn never run: they are taken out of the
// batch, the first one checked while the model stage's record of the
// turn's calls still holds (beforeBatch), and settled once the other calls
// have finished (afterBatch): the answer is taken when it is valid and
// every other call succeeded, and the turn ends the run with it; a Direct
// result ends the run only as a valid answer. So a turn that pauses for a
// person, or is cut off, keeps its answer calls for the resumed turn,
// which settles them in the same way. A run that ends at
// WithMaxIterations ends with ErrNoOutput (end).
func (o *outputTool) startRun(_ context.Context, r *run) (stageRun, error) {
	or := &outputRun{o: o, r: r}
	return stageRun{response: or.askAgain, beforeBatch: or.takeAnswers, afterBatch: or.settle, end: or.end}, nil
}

// outputRun is the answer tool in one run.
type outputRun struct {
	o      *outputTool
	r      *run
	reasks int // re-asks for the answer so far
	// answer and answerErr are checkAnswer's verdict on the current
	// turn's first answer call.
	answer    []byte
	answerErr error
}

// askAgain is the response hook: a response without tool calls is
// recorded, and the model asked again for the answer tool.
func (or *outputRun) askAgain(_ context.Context, t *turn) error {
	if len(t.calls) > 0 {
		return nil
	}
	if err := middleware.StandInError(t.resp); err != nil {
		return fmt.Errorf("%w: %w", ErrNoOutput, err)
	}
	res, name := or.r.res, or.o.name
	res.Messages = append(res.Messages, llms.TextParts(llms.ChatMessageTypeAI, t.text))
	if or.reasks++; or.reasks > maxOutputReasks {
		return fmt.Errorf("%w: the model answered in text instead of calling %s", ErrNoOutput, name)
	}
	res.Messages = append(res.Messages, llms.TextParts(llms.ChatMessageTypeHuman, errfmt.AnswerInText(name)))
	t.settle()
	return nil
}

// takeAnswers is the beforeBatch hook: the answer calls never run; the
// first is checked now, before the batch's end forgets the model stage's
// record of the calls it validated.
func (or *outputRun) takeAnswers(_ context.Context, t *turn) error {
	or.answer, or.answerErr = nil, nil
	first := -1
	for i, c := range t.calls {
		if or.o.isAnswer(c) {
			if first < 0 {
				first = i
			}
			t.later(i)
		}
	}
	if first >= 0 {
		or.answer, or.answerErr = or.o.checkAnswer(or.r.record, t.calls[first])
	}
	return nil
}

// settle is the afterBatch hook: it writes the answer calls' steps and
// tool messages into the turn's batch, whose other calls have finished,
// and decides whether the turn ends the run, with the answer or an error.
func (or *outputRun) settle(_ context.Context, t *turn) error {
	o, b := or.o, &t.batch
	first := -1
	siblingsOK := true
	for i, c := range t.calls {
		switch {
		case !o.isAnswer(c):
			siblingsOK = siblingsOK && b.steps[i].Err == nil
		case first < 0:
			first = i
		}
	}
	accepted := false
	for i, c := range t.calls {
		if !o.isAnswer(c) {
			continue
		}
		st := Step{CallID: c.ID, Tool: o.name, Arguments: c.FunctionCall.Arguments, ModelArguments: c.FunctionCall.Arguments, Turn: t.number, Message: -1}
		switch {
		case i != first:
			st.Err, b.answers[i] = errAnswerIgnored, errfmt.AnswerIgnored
		case or.answerErr != nil:
			st.Err, b.answers[i] = or.answerErr, feedback(or.answerErr)
		case !siblingsOK:
			st.Arguments = string(or.answer)
			st.Err, b.answers[i] = errAnswerNotAccepted, errfmt.AnswerNotAccepted(o.name)
		default:
			st.Arguments = string(or.answer)
			st.Result, b.answers[i] = errfmt.AnswerAccepted, errfmt.AnswerAccepted
			accepted = true
		}
		b.steps[i] = st
	}
	switch {
	case accepted:
		t.finish(string(or.answer))
	case b.direct >= 0:
		s := b.steps[b.direct]
		out, err := checkAnswerArgs(o.name, o.schema, []byte(s.Result))
		if err != nil {
			t.fail(fmt.Errorf("%w: the Direct result of tool %q is not a valid answer: %w", ErrNoOutput, s.Tool, err))
			return nil
		}
		t.finish(string(compactJSON(out.Args)))
	case or.answerErr != nil:
		if or.reasks++; or.reasks > maxOutputReasks {
			t.fail(fmt.Errorf("%w: %w", ErrNoOutput, or.answerErr))
		}
	}
	return nil
}

// end is the end hook: a run that ends at WithMaxIterations ended without
// an answer.
func (or *outputRun) end(_ context.Context, err error) error {
	if or.r.exhausted {
		return fmt.Errorf("%w: %w", ErrNoOutput, err)
	}
	return err
}

// checkAnswer returns the answer of call, as compact JSON, or the
// *validation.Error of an invalid one. A call ToolArgValidation validated
// against the run's schemas (record) is not checked again.
func (o *outputTool) checkAnswer(record *guard.CallRecord, c llms.ToolCall) ([]byte, error) {
	args := c.FunctionCall.Arguments
	if record.Validated(c.ID, c.FunctionCall.Name, args) {
		return []byte(compactJSON([]byte(args))), nil
	}
	res, err := checkAnswerArgs(o.name, o.schema, []byte(args))
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

// checkAnswerArgs runs an answer through the pipeline ToolArgValidation
// uses with its defaults (schema-aware stripping, the default coercions)
// against s, and returns the result, or a *validation.Error naming tool.
func checkAnswerArgs(tool string, s *validation.Schema, raw []byte) (guard.ArgsResult, error) {
	res := guard.CheckArgs(s, raw, guard.ArgsOptions{Strip: strip.SchemaAware, Repair: repair.Coercions()})
	if res.Err != nil {
		named := *res.Err
		named.Tool = tool
		return res, &named
	}
	return res, nil
}

// feedback is what the model reads of an answer that failed: the
// violations of a *validation.Error, else the error's text.
func feedback(err error) string {
	var ve *validation.Error
	if errors.As(err, &ve) {
		return errfmt.Feedback(ve)
	}
	return errfmt.ToolError(err)
}

// compactJSON returns raw without insignificant space, or a copy of raw
// when it is not JSON.
func compactJSON(raw []byte) json.RawMessage {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return slices.Clone(raw)
	}
	return buf.Bytes()
}

// injectedProps returns the properties that schema marks injected
// ([validation.InjectedKeyword]).
func injectedProps(s *validation.Schema) []string {
	props, _ := s.Map()["properties"].(map[string]any)
	var names []string
	for n, p := range props {
		if pm, ok := p.(map[string]any); ok && pm[validation.InjectedKeyword] == true {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names
}
