package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"runtime/debug"
	"slices"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/errfmt"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/internal/exactjson"
	"github.com/toolguard/toolguard/internal/jsonptr"
	"github.com/toolguard/toolguard/repair"
	"github.com/toolguard/toolguard/strip"
	"github.com/toolguard/toolguard/validation"
)

// errNoFunction is the Step.Err of a tool call that came without a function.
var errNoFunction = errors.New("agent: the tool call has no function name")

// finished is one tool call's outcome, sent by the goroutine that ran it.
type finished struct {
	index  int
	step   Step
	result *ToolResult
}

// batch is what the tool stage made of one model turn's calls, in call
// order.
type batch struct {
	steps   []Step
	answers []string // the tool messages' contents
	direct  int      // index of the first Direct result; -1 if none
	// cut is nil for a batch whose calls all finished; for a batch cut
	// short (the run ended inside it: ErrStopRun, a tool's panic, its
	// context), how far each call got. steps and answers hold the
	// outcome of the calls that finished.
	cut []progress
}

// progress is how far a call of a batch cut short got.
type progress uint8

const (
	callFinished   progress = iota // it finished: its step holds its outcome
	callCutOff                     // it started and had not finished: its outcome is unknown
	callNotStarted                 // it never started
)

// runTools runs the calls of t that the stages left in its batch through
// the tool stage, at most a.maxPar at a time, and writes their steps and
// tool-message contents into t.batch, by place. A call's gate (t.gates) goes
// with it into the tool stage; a call without a function or of an unknown
// tool is answered without it; a call a stage took out (waits, later) or
// whose outcome is known does not run.
//
// When ctx is done it returns ctx.Err() at once; calls not yet started are
// not started, and running ones are left to honour ctx (their results are
// dropped: the channel they report to has room for all of them, so they
// never block). A call whose result comes once ctx is done, with an error
// wrapping ctx's (cutOffBy), is one of them, whichever runTools sees
// first: its tool returned because ctx ended, and its outcome is unknown.
// When a call returns an error wrapping ErrStopRun, or its tool stage
// panics (a *ToolPanicError), calls not yet started are not started,
// running ones finish, and it returns that error. Either way the batch is
// cut short: it holds the outcome of every call that finished and says
// which calls were cut off and which never started.
func (r *run) runTools(ctx context.Context, t *turn) error {
	a, calls, b := r.a, t.calls, t.outcomes()
	done := make([]bool, len(calls))
	started := make([]bool, len(calls))
	var todo []int // calls of known tools, in order
	for i, c := range calls {
		switch t.plan(i) {
		case callKnown:
			done[i] = true
			continue
		case callWaits, callLater:
			continue
		}
		b.steps[i] = Step{CallID: c.ID, Turn: t.number, Message: -1}
		switch {
		case c.FunctionCall == nil:
			b.steps[i].Err, done[i] = errNoFunction, true
		case a.tools[c.FunctionCall.Name] == nil:
			b.steps[i].Tool, b.steps[i].Arguments = c.FunctionCall.Name, c.FunctionCall.Arguments
			b.steps[i].ModelArguments = c.FunctionCall.Arguments
			b.steps[i].Err = fmt.Errorf("%w %q", ErrUnknownTool, c.FunctionCall.Name)
			b.answers[i], done[i] = errfmt.UnknownTool(c.FunctionCall.Name, a.names), true
		default:
			todo = append(todo, i)
		}
	}

	history := slices.Clone(r.res.Messages)
	thread := guard.ThreadFrom(ctx)
	results := make(chan finished, len(todo))
	running := 0
	var stop error
	// cut ends the batch of a run whose context ended: the calls not yet
	// started never start, the running ones are cut off.
	cut := func() error {
		a.reportNotStarted(ctx, r.record, calls, todo)
		b.cutShort(done, started)
		if stop != nil {
			return errors.Join(stop, ctx.Err())
		}
		return ctx.Err()
	}
	for len(todo) > 0 || running > 0 {
		if len(todo) > 0 && running < a.maxPar && ctx.Err() == nil && stop == nil {
			i := todo[0]
			todo = todo[1:]
			running++
			started[i] = true
			c, gate := calls[i], gateAt(t.gates, i, calls[i])
			if gate.pinned { // exactly the arguments pinned; the transcript keeps its own
				fc := *c.FunctionCall
				fc.Arguments = gate.args
				c.FunctionCall = &fc
			}
			// Values the model sent for injected arguments are dropped here,
			// so that they are in neither the transcript nor the span.
			c, forged := a.dropForged(r.record, c)
			if !gate.pinned {
				calls[i] = c
			}
			st := &callState{
				info:      CallInfo{ID: c.ID, Tool: c.FunctionCall.Name, Thread: thread, Messages: history, Attempt: 1},
				modelArgs: c.FunctionCall.Arguments,
				tool:      a.tools[c.FunctionCall.Name],
				checked:   r.record.Validated(c.ID, c.FunctionCall.Name, c.FunctionCall.Arguments),
				out:       &callDone{},
				gate:      gate,
			}
			go a.callTool(ctx, i, c, st, forged, results)
			continue
		}
		if len(todo) > 0 && stop != nil && running == 0 {
			break
		}
		select {
		case f := <-results:
			running--
			if cutOffBy(ctx, f.step.Err) {
				// The call returned because the run's context ended,
				// whether or not its result came before the context's
				// end: it was cut off, its outcome unknown, as a call
				// still running then is. Never a call that failed.
				return cut()
			}
			f.step.Turn = t.number
			if i := f.index; i < len(t.gates) && t.gates[i].pinned {
				f.step.ModelArguments = t.gates[i].model
			}
			b.steps[f.index] = f.step
			b.answers[f.index], done[f.index] = toolMessage(f.step), true
			var panicked *ToolPanicError
			if errors.As(f.step.Err, &panicked) {
				b.answers[f.index] = interruptedAnswer // whatever the tool did before it panicked is unknown
			}
			if stop == nil && (panicked != nil || errors.Is(f.step.Err, ErrStopRun)) {
				stop = f.step.Err
			}
			if f.result != nil && f.result.Direct && f.step.Err == nil && (b.direct < 0 || f.index < b.direct) {
				b.direct = f.index
			}
		case <-ctx.Done():
			return cut()
		}
	}
	a.reportNotStarted(ctx, r.record, calls, todo)
	r.record.Forget()
	if stop != nil {
		b.cutShort(done, started)
		return stop
	}
	return nil
}

// cutOffBy reports whether err, the error of a call of a run whose context
// is ctx, says the call returned because ctx ended: ctx is done, and err
// wraps its error or its cause. Such a call was cut off: whether it took
// effect is unknown (the payment may have gone through before the tool
// gave up waiting for the bank's reply).
func cutOffBy(ctx context.Context, err error) bool {
	if err == nil || ctx.Err() == nil {
		return false
	}
	return errors.Is(err, ctx.Err()) || errors.Is(err, context.Cause(ctx))
}

// cutShort marks b as a batch the run ended inside: done says which calls
// finished, started which had started.
func (b *batch) cutShort(done, started []bool) {
	b.cut = make([]progress, len(b.steps))
	for i := range b.cut {
		switch {
		case done[i]:
			b.cut[i] = callFinished
		case started[i]:
			b.cut[i] = callCutOff
		default:
			b.cut[i] = callNotStarted
		}
	}
}

// callTool runs one tool call through the tool stage and reports its
// outcome on results. The run's observers see the whole stage as the call's
// execution (otelguard's execute_tool span).
//
// forged is the forged_argument event of the values the model sent for
// injected arguments, dropped from c (dropForged), to report on the call's
// span; nil if none.
func (a *Agent) callTool(ctx context.Context, index int, c llms.ToolCall, st *callState, forged *guard.Event, results chan<- finished) {
	f := finished{index: index}
	ctx = withCallState(ctx, st)
	ctx, end := guard.ObserveToolCall(ctx, guardCall(c))
	defer func() {
		// A panic in the tool stage (the tool, a tool middleware, an
		// injector) is the call's outcome: it ends the run, not the
		// process.
		if p := recover(); p != nil {
			perr := &ToolPanicError{Tool: st.info.Tool, CallID: c.ID, Value: p, Stack: debug.Stack()}
			f.step = Step{CallID: c.ID, Tool: st.info.Tool, ModelArguments: st.modelArgs, Arguments: st.modelArgs, Message: -1, Err: perr}
			if ran, args := st.out.get(); ran {
				f.step.Arguments = args
			}
			f.result = nil
			end("", errToolPanicked)
		}
		results <- f
	}()
	if forged != nil && !st.gate.pinned { // a pinned call runs arguments a person saw, which hold none
		ReportEvent(ctx, *forged)
	}
	// The starting arguments are prepared here, on the call's goroutine and
	// inside its span: preparing may take time (an injector looking a
	// value up) and may fail, which fails the call without running the
	// tool stage.
	var res *ToolResult
	stageArgs, err := a.prepareArgs(ctx, st)
	prepared := err == nil
	if prepared {
		st.stageArgs = stageArgs
		st.checked = st.checked && st.stageArgs == st.modelArgs
		a.precheck(st) // tool middlewares see the arguments the tool would get
		call := &ToolCall{ID: c.ID, Name: c.FunctionCall.Name, Args: json.RawMessage(st.stageArgs), Tool: st.tool}
		res, err = a.toolStage(ctx, call)
		if err == nil && res == nil {
			err = errNoResult
		}
	}
	f.step = Step{
		CallID:         c.ID,
		Tool:           st.info.Tool,
		ModelArguments: st.modelArgs,
		Arguments:      st.modelArgs,
		Message:        -1,
	}
	ran, ranArgs := st.out.get()
	if ran {
		f.step.Arguments = ranArgs
	}
	switch {
	case err != nil:
		f.step.Err = err
		if errors.Is(err, ErrStopRun) {
			ReportEvent(ctx, guard.Event{Kind: guard.EventRunStopped, Err: err})
		} else if prepared && !ran {
			var rejected *ArgsRejectedError
			var ve *validation.Error
			if !errors.As(err, &rejected) && !errors.As(err, &ve) {
				ReportEvent(ctx, guard.Event{Kind: guard.EventToolDenied, Err: err})
			}
		}
		end("", err)
	default:
		f.step.Result, f.step.Artifact = res.Content, res.Artifact
		f.result = res
		end(res.Content, nil)
	}
}

// prepareArgs returns the arguments a call enters the tool stage with: the
// model stage's (st.modelArgs). It is where arguments the model must not
// set are to be supplied; a call whose arguments it changes is checked
// against the tool's whole schema before the tool runs. It runs on the
// call's goroutine, with the call in ctx (CallFrom). An error fails the
// call without running the tool stage: Step.Err is the error and the model
// reads its text, so its text must be fit for the model.
func (a *Agent) prepareArgs(ctx context.Context, st *callState) (string, error) {
	return a.inject(ctx, st) // injected arguments (inject.go)
}

// precheck checks the model's arguments of a call the model stage did not
// validate before the call enters the tool middlewares, so that they see
// the arguments the tool would get (stripped, coerced: a policy reading
// "5000" as no amount would let a 5000 transfer through). Arguments that
// fail are left as they are: execute reports them.
//
// The arguments are decoded once: a tool that takes them decoded (a
// NewSchemaTool's) is given the check's map when they pass as they are;
// for any other, arguments the schema accepts as they are need no map,
// only the verdict ([validation.Schema.ValidateJSON], which agrees with
// the pipeline's), and only those it refuses go through the pipeline
// (strip, coerce).
func (a *Agent) precheck(st *callState) {
	if st.checked || st.stageArgs != st.modelArgs || st.gate.pinned {
		return // validated already, set by the tool stage, or pinned as they are (not coerced)
	}
	s, raw := a.compiled[st.info.Tool], []byte(st.stageArgs)
	takes := takesValue(st.tool)
	if !takes && len(bytes.TrimSpace(raw)) > 0 && s.ValidateJSON(raw) == nil {
		st.checked = true // valid as they are: unchanged
		return
	}
	if r, err := checkArgs(st.info.Tool, s, raw); err == nil {
		st.stageArgs, st.checked = string(r.Args), true
		if takes && !r.Changed {
			st.out.keepValue(r.Value)
		}
	}
}

// coercing returns the pipeline options for a call of tool whose arguments
// are the model's with the program's injected values set: the default
// coercions for the model's values, none for the injected ones.
func (a *Agent) coercing(tool string) guard.ArgsOptions {
	o := guard.ArgsOptions{Strip: strip.SchemaAware, Repair: repair.Coercions()}
	if inj, ok := a.injection[tool]; ok {
		o.Injected = inj.names
	}
	return o
}

// execute is the innermost handler of the tool stage: it checks the call's
// arguments unless the model stage already validated exactly these against
// the tool's schema, and runs the tool.
func (a *Agent) execute(ctx context.Context, call *ToolCall) (*ToolResult, error) {
	st := callStateFrom(ctx)
	if st == nil || call == nil {
		return nil, errors.New("agent: tool handler called outside the tool stage")
	}
	if call.Name != st.info.Tool {
		return nil, errToolChanged
	}
	t := call.Tool
	if t == nil {
		t = st.tool
	}
	args := []byte(call.Args)
	replaced := string(args) != st.stageArgs
	var value map[string]any // the decoded arguments, when checked here or by precheck
	if !replaced {
		value = st.out.takeValue()
	}
	if st.gate.pinned {
		// Exactly what was pinned (a person approved), or nothing.
		v, err := a.pinnedArgs(ctx, st, call)
		if err != nil {
			return nil, err
		}
		value = v
	} else if replaced || !st.checked {
		// The model's own arguments get the model stage's default
		// coercions; arguments the tool stage set get none, nor do the
		// injected values: a value of the wrong type there is a mistake to
		// report, not to guess around.
		o := guard.ArgsOptions{Strip: strip.SchemaAware}
		if !replaced {
			o = a.coercing(call.Name)
		}
		res, err := checkArgsWith(call.Name, a.compiled[call.Name], args, o)
		if err != nil {
			if replaced {
				rejected := &ArgsRejectedError{Tool: call.Name, Err: err}
				var reported error = err
				if _, ok := a.injection[call.Name]; ok {
					reported = rejected // its violations may quote an injected value
				}
				ReportEvent(ctx, guard.Event{Kind: guard.EventArgsRejected, Err: reported})
				return nil, rejected
			}
			if _, ok := a.injection[call.Name]; ok {
				return nil, a.injectedCheckFailed(ctx, st, err) // never quote an injected value
			}
			return nil, err
		}
		if inj, ok := a.injection[call.Name]; ok {
			for _, n := range inj.names {
				if _, kept := res.Value[n]; !kept {
					// The check stripped an injected value (a null the
					// schema refuses, on a property it does not require):
					// the tool must not run without it.
					return nil, a.injectFailed(ctx, &InjectError{Tool: call.Name, Name: n,
						Err: errors.New("the injected value is empty where the schema refuses it")})
				}
			}
		}
		args, value = res.Args, res.Value
	}
	if st.gate.refuse != nil {
		return nil, st.gate.refuse
	}
	if replaced {
		ReportEvent(ctx, guard.Event{Kind: guard.EventArgsRewritten, Paths: changedPaths(st.stageArgs, args)})
	}
	st.out.record(string(args))
	if r := resultToolOf(t); r != nil { // a tool that returns a whole ToolResult (toolresult.go)
		return callResultTool(ctx, r, args, value)
	}
	var content string
	var err error
	if u, ok := t.(uncheckedCaller); ok {
		content, err = u.callChecked(ctx, args, value)
	} else {
		content, err = t.Call(ctx, string(args))
	}
	if err != nil {
		return nil, err
	}
	return &ToolResult{Content: content}, nil
}

// errApprovedArgsChanged is the error of an approved call whose arguments
// a tool middleware replaced.
var errApprovedArgsChanged = errors.New("agent: a tool middleware changed the arguments a person approved; the tool did not run")

// errApprovedToolChanged is the error of an approved call whose Tool a
// tool middleware replaced.
var errApprovedToolChanged = errors.New("agent: a tool middleware changed the tool of a call a person approved; the tool did not run")

// pinnedArgs is the innermost handler's check of a pinned call (a call a
// person approved, see callGate): it runs the tool the model called with
// exactly the approved arguments (and the injected values), or not at
// all. The arguments are validated as they are, never stripped or coerced
// again: if what they must meet changed since they were approved, the call
// fails with an [*ArgsRejectedError] (the model reads only that it could
// not run). It returns the arguments decoded.
func (a *Agent) pinnedArgs(ctx context.Context, st *callState, call *ToolCall) (map[string]any, error) {
	if call.Tool != nil && !sameTool(call.Tool, st.tool) {
		return nil, errApprovedToolChanged
	}
	if string(call.Args) != st.stageArgs {
		return nil, errApprovedArgsChanged
	}
	res, err := checkArgsWith(call.Name, a.compiled[call.Name], call.Args, guard.ArgsOptions{Strip: strip.Off})
	if err != nil {
		rejected := &ArgsRejectedError{Tool: call.Name, Err: err}
		ReportEvent(ctx, guard.Event{Kind: guard.EventArgsRejected, Err: rejected}) // never the violations
		return nil, rejected
	}
	return res.Value, nil
}

// sameTool reports whether x and y are the same tool: equal interface
// values, or for a tool of a type == cannot compare, deeply equal ones.
func sameTool(x, y Tool) bool {
	if reflect.TypeOf(x) != reflect.TypeOf(y) {
		return false
	}
	if v := reflect.ValueOf(x); v.IsValid() && !v.Comparable() {
		return reflect.DeepEqual(x, y)
	}
	return x == y
}

// takesValue reports whether t, through the agent's wrappers, is a tool
// whose unchecked path takes the arguments decoded (NewSchemaTool's).
func takesValue(t Tool) bool {
	for {
		switch w := t.(type) {
		case *schemaTool:
			return true
		case *injectedTool:
			t = w.Tool
		case toolWrapper:
			t = w.unwrapTool()
		default:
			return false
		}
	}
}

// uncheckedCaller is implemented by the agent's own tool types: a call
// whose arguments the tool stage has checked skips the tool's own check.
// value is the arguments decoded (numbers as json.Number) when the stage
// has them, else nil.
type uncheckedCaller interface {
	callChecked(ctx context.Context, args []byte, value map[string]any) (string, error)
}

// changedPaths returns the top-level properties that differ between two
// JSON objects, as JSON Pointers, sorted; nil when either is not an object.
func changedPaths(before string, after []byte) []string {
	b, err1 := exactjson.DecodeObject([]byte(before))
	a, err2 := exactjson.DecodeObject(after)
	if err1 != nil || err2 != nil {
		return nil
	}
	var paths []string
	for k, v := range a {
		if old, ok := b[k]; !ok || !jsonEqual(old, v) {
			paths = append(paths, "/"+jsonptr.Escape(k))
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			paths = append(paths, "/"+jsonptr.Escape(k))
		}
	}
	slices.Sort(paths)
	return paths
}

func jsonEqual(x, y any) bool {
	bx, err1 := json.Marshal(x)
	by, err2 := json.Marshal(y)
	return err1 == nil && err2 == nil && bytes.Equal(bx, by)
}

// guardCall is c as the observers of a run see a tool call.
func guardCall(c llms.ToolCall) guard.Call {
	gc := guard.Call{ID: c.ID}
	if c.FunctionCall != nil {
		gc.Name, gc.Args = c.FunctionCall.Name, []byte(c.FunctionCall.Arguments)
	}
	return gc
}
