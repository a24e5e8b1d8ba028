package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/toolstage"
)

// ErrMaxIterations is returned by Run, with the partial *[Result], when the
// model still calls tools after the last iteration ([WithMaxIterations]).
var ErrMaxIterations = errors.New("agent: the model did not finish within the maximum number of iterations")

// Agent is a tool-calling agent: it sends the model the user's input and
// every tool's JSON Schema, runs the tool calls the model asks for, sends it
// the results, and repeats until the model answers in text.
//
// An Agent is safe for concurrent use: each Run keeps its own state, so one
// Agent may serve many runs at once (its tools and middlewares must then be
// safe for concurrent use, as the built-in ones are).
type Agent struct {
	model    llms.Model // the model wrapped in the middlewares and the call counter
	stage    *toolstage.Stage
	defs     []llms.Tool       // what the model is sent, built once
	callOpts []llms.CallOption // llms.WithTools(defs), or none without tools
	system   string
	maxIt    int
	// installers are the middlewares that install an observer, installed
	// for each whole run (observe.go).
	installers []guard.ObserverInstaller
	// stages are the run-level features, in order (turnstage.go): the
	// checkpoints and the answer tool below, each when configured.
	stages      []turnStage
	checkpoints *checkpoints // WithCheckpointer (checkpoint.go); nil without
	output      *outputTool  // WithOutputSchema's answer tool (output.go); nil without
}

// New returns an agent that drives model with the tools of stage, whose
// tool stage runs every call the model asks for: its tool middlewares,
// injected arguments, approval ([toolstage.WithApproval]), ToolRetry and
// event handler are the agent's.
//
// Each tool's definition — its name, description and schema as
// [toolstage.Stage.Definitions] gives them — is sent with every model call
// through llms.WithTools, its Parameters as a map[string]any, the one form
// every langchaingo provider accepts (googleai requires it). The original
// schemas reach ToolArgValidation through the run's context
// ([toolstage.Stage.Scope]), so a typed tool's Validate hook is enforced
// by a re-ask, before the tool runs.
//
// New panics if model or stage is nil, or [WithOutputSchema] is given and
// a tool is named [OutputToolName].
func New(model llms.Model, stage *toolstage.Stage, opts ...Option) *Agent {
	if model == nil {
		panic("agent: New called with a nil model")
	}
	if stage == nil {
		panic("agent: New called with a nil tool stage")
	}
	cfg := config{maxIterations: DefaultMaxIterations}
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	a := &Agent{stage: stage, system: cfg.systemPrompt, maxIt: cfg.maxIterations}
	for _, d := range stage.Definitions() {
		a.defs = append(a.defs, llms.Tool{Type: "function", Function: &llms.FunctionDefinition{
			Name:        d.Name,
			Description: d.Description,
			Parameters:  d.Schema(),
		}})
	}
	a.addOutputTool(cfg.output) // structured output (output.go)
	if cfg.checkpointer != nil {
		a.checkpoints = &checkpoints{a: a, cp: cfg.checkpointer}
		a.stages = append(a.stages, a.checkpoints)
	}
	if a.output != nil {
		a.stages = append(a.stages, a.output)
	}
	a.installers = installers(cfg.middlewares)
	a.callOpts = slices.Clone(cfg.callOptions) // WithCallOptions, then the tools
	if len(a.defs) > 0 {
		a.callOpts = append(a.callOpts, llms.WithTools(a.defs))
	}
	a.callOpts = slices.Clip(a.callOpts) // shared by concurrent runs: no spare capacity to append into
	// The counter is the innermost middleware: it sees every call that
	// reaches the model, re-asks and retries included.
	mws := append(slices.Clone(cfg.middlewares), middleware.Func(countModelCalls))
	a.model = middleware.Wrap(model, mws...)
	return a
}

// modelCallsKey is the context key of a run's model-call counter.
type modelCallsKey struct{}

func countModelCalls(next middleware.Handler) middleware.Handler {
	return func(ctx context.Context, req *middleware.Request) (*llms.ContentResponse, error) {
		if n, ok := ctx.Value(modelCallsKey{}).(*atomic.Int64); ok {
			n.Add(1)
		}
		return next(ctx, req)
	}
}

// Result is what a run did.
type Result struct {
	// Output is the model's final text answer; "" when the run did not
	// finish. With [WithOutputSchema], the answer as compact JSON ([Output]
	// decodes it), and "" unless the run ended with a valid answer.
	Output string
	// Messages is the whole transcript, the history to continue from with
	// [Agent.RunMessages]: the system prompt (if any), the input (or the
	// messages given to RunMessages), then for each model turn with tool calls one AI message per
	// call followed by its tool message, and the final AI answer. Re-asks
	// made inside a middleware are not part of it: it holds only the calls
	// that ran.
	Messages []llms.MessageContent
	// Steps lists every tool call the agent handled, in order; Step.Turn
	// and Step.Message tell the model turns' batches apart.
	Steps []Step
	// ModelCalls counts the calls that reached the agent's model, including
	// those made by middlewares that re-ask (ToolArgValidation,
	// ToolCallLimit) or retry (ModelRetry), and those that failed.
	ModelCalls int
}

// Step is one tool call of a run.
type Step struct {
	// CallID is the call's id, as the model sent it or, when it sent none,
	// synthesized deterministically (the same one ToolArgValidation would
	// synthesize).
	CallID string
	// Tool is the name the model called.
	Tool string
	// Arguments is the JSON object of arguments the tool ran with: after
	// the tool middlewares (which may replace them) and the tool stage's
	// check (which strips empty values where that fixes a call), injected
	// arguments ([Inject]) included: it is for the program, never sent to
	// the model or logged by toolguard. For a call whose tool did not run,
	// the model's arguments. A call that ran in the turn a run paused in
	// for approval keeps them without its injected values once resumed:
	// those never travel in an [Interrupt].
	Arguments string
	// ModelArguments is the JSON object of arguments as the model stage
	// returned them (validated, stripped or repaired by its middlewares),
	// the ones recorded in Result.Messages. Values the model sent for
	// injected arguments are not in it: they were dropped.
	ModelArguments string
	// Result is what the model read as the call's result: the tool's
	// content (ToolResult.Content); "" when Err is not nil.
	Result string
	// Artifact is the ToolResult's Artifact, for the program only: never
	// sent to the model.
	Artifact any
	// Turn is the model turn, from 1, whose response asked for the call:
	// steps with the same Turn are one batch.
	Turn int
	// Message is the index in Result.Messages of the AI message recording
	// the call (its tool message follows it), or -1 when the call is not
	// recorded there (a call without a function, or a turn the run did
	// not finish).
	Message int
	// Err is the call's error: the tool's or a tool middleware's, a
	// *validation.Error for model arguments the tool stage rejects, an
	// *ArgsRejectedError for arguments a tool middleware replaced that do
	// not validate, an *InjectError for injected arguments that could not
	// be set, an error wrapping ErrUnknownTool or ErrStopRun, a
	// *ToolPanicError for a call whose tool stage panicked, or, for a call
	// that came without a function, an error saying so. Unless it wraps
	// ErrStopRun or is a *ToolPanicError, the model was told about it when
	// the run went on. A call of a turn the run ended inside that never
	// started has [ErrCallNotStarted]; one whose outcome is unknown (cut
	// off, or restored as such from a checkpoint) [ErrCallInterrupted].
	Err error
}

// Run answers input: it sends the model the system prompt and input with
// every tool, runs the tool calls of each response and sends their results
// back, until the model answers without calling a tool.
//
// The tool calls of one response run in parallel, at most
// [WithMaxConcurrency] at a time, and are recorded in call order. A tool's
// error and a call naming no tool of the agent become the call's tool
// message (see [errfmt.ToolError], [errfmt.Feedback], [errfmt.UnknownTool]),
// never an aborted run. Run returns a non-nil *[Result] holding what was
// done, and nil when the model answered; [ErrMaxIterations] when it still
// called tools after [WithMaxIterations] turns; ctx's error at once when ctx
// is done (running tools were given ctx; calls not started never start;
// Messages ends before the interrupted turn, Steps holds its calls that
// finished, not one whose tool returned ctx's error: its outcome is
// unknown, see [ErrCallInterrupted]); the error of a call that ended the run — one wrapping
// [ErrStopRun], or a [*ToolPanicError] — once the batch's running calls
// have finished (Messages and Steps record the whole turn, each call with
// its outcome: see [ErrStopRun]); else an error wrapping the failed model
// call.
//
// Each Run starts a run scope ([guard.WithRun]), so ToolCallLimit's run
// limit counts this run only; a thread named in ctx with
// [guard.WithThread] carries over from run to run. It hands
// ToolArgValidation its tools' schemas ([guard.WithToolSchemas]) and
// starts a fresh count of ModelCalls. A tool that panics does not crash
// the process: the panic is recovered on the tool call's goroutine and
// ends the run with a [*ToolPanicError] naming the tool.
//
// On a thread with a [Checkpointer] ([WithCheckpointer]), Run continues
// the thread's conversation; and whatever ends it inside a batch, the
// thread's state records every call that finished, with its result: the
// next Run (after ErrStopRun or a panic) or [Agent.Resume] (after a
// cancelled context) never runs a finished call again, and shows the model
// its real result.
//
// Run is [Agent.RunMessages] with one human message, input.
func (a *Agent) Run(ctx context.Context, input string) (*Result, error) {
	return a.RunMessages(ctx, []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, input)})
}

// loop runs r and returns its Result: the turn a continued run stopped in,
// then model turns until one ends the run.
func (r *run) loop(ctx context.Context) (*Result, error) {
	err := r.turns(ctx)
	r.res.ModelCalls = int(r.modelCalls.Load())
	return r.res, err
}

// turns plays r's turns: the turn a continued run stopped in, then model
// turns until one ends the run. The run's stages are called at the points
// [turnStage] names, here and in playTurn.
func (r *run) turns(ctx context.Context) (err error) {
	ctx, endRun := r.a.observeRun(ctx)
	defer func() { endRun(err) }()
	defer func() { err = r.end(ctx, err) }()
	t, made, err := r.continuedTurn()
	if err != nil {
		return err
	}
	for {
		if t == nil {
			if made >= r.a.maxIt {
				r.exhausted = true
				return fmt.Errorf("%w (%d)", ErrMaxIterations, r.a.maxIt)
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			if t, err = r.modelTurn(ctx, made+1); err != nil {
				return err
			}
		}
		if over, err := r.playTurn(ctx, t); over || err != nil {
			return err
		}
		made, t = t.number, nil
	}
}

// modelTurn calls the model with the transcript and returns its response as
// turn number n, its text and tool calls collected once.
func (r *run) modelTurn(ctx context.Context, n int) (*turn, error) {
	// The model gets its own copy of the transcript: a middleware or
	// model that appends to it must not write into ours.
	sent := slices.Clip(r.res.Messages)
	resp, err := r.a.model.GenerateContent(ctx, sent, r.opts...)
	if err != nil {
		r.reportUnclaimed(ctx)
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, ctxErr
		}
		return nil, fmt.Errorf("agent: model call: %w", err)
	}
	// Ids as ToolArgValidation synthesizes them, when the model sent none.
	calls := middleware.ToolCalls(resp, len(sent))
	// Forged values of calls a middleware discarded are reported with the
	// batch (runTools).
	r.cur = turn{number: n, text: middleware.ResponseText(resp), resp: resp, calls: calls}
	return &r.cur, nil
}

// playTurn plays turn t: the stages' hooks, the batch, the record. It
// reports whether the run is over, and with what error.
func (r *run) playTurn(ctx context.Context, t *turn) (bool, error) {
	if !t.resumed {
		if err := r.at(ctx, t, stageRun.atResponse); err != nil {
			return true, err
		}
		if t.settled {
			return false, r.at(ctx, t, stageRun.atTurnDone)
		}
		if len(t.calls) == 0 {
			r.answer(t.text)
			return true, nil
		}
	}
	if err := r.at(ctx, t, stageRun.atBeforeBatch); err != nil {
		return true, err
	}
	run := r.runTools
	if t.resumed && r.from != nil && r.from.decided != nil {
		run = r.resumeBatch // the stage resumes the batch it paused
	}
	if err := run(ctx, t); err != nil {
		if errors.Is(err, toolstage.ErrDecisionRefused) || errors.Is(err, toolstage.ErrInterruptRefused) {
			return true, err // nothing ran
		}
		return true, r.cutTurn(ctx, t, err)
	}
	if t.batch.paused != nil {
		// The run pauses before the turn is recorded: the calls that ran
		// are not forgotten.
		r.res.Steps = append(r.res.Steps, t.ranSteps()...)
		return true, r.pause(ctx, t)
	}
	if err := r.at(ctx, t, stageRun.atAfterBatch); err != nil {
		return true, err
	}
	recordTurn(r.res, t.text, t.calls, t.batch)
	if !t.ends && t.batch.direct >= 0 {
		t.finish(t.batch.steps[t.batch.direct].Result)
	}
	if t.ends {
		if t.err == nil {
			r.answer(t.output)
		}
		return true, t.err
	}
	return false, r.at(ctx, t, stageRun.atTurnDone)
}

// answer ends the run's transcript with output, its answer.
func (r *run) answer(output string) {
	r.res.Output = output
	r.res.Messages = append(r.res.Messages, llms.TextParts(llms.ChatMessageTypeAI, output))
}

// recordTurn appends a turn's finished batch to res: the turn's messages,
// then its steps, each with the index of the AI message recording its call
// (Step.Message; b.steps is updated too).
func recordTurn(res *Result, text string, calls []llms.ToolCall, b batch) {
	at := len(res.Messages)
	res.Messages = append(res.Messages, middleware.ToolCallMessages(text, calls, b.answers)...)
	for i := range b.steps {
		if calls[i].FunctionCall != nil {
			b.steps[i].Message = at
			at += 2
		}
	}
	res.Steps = append(res.Steps, b.steps...)
}
