package toolstage

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"runtime/debug"
	"slices"

	"github.com/toolguard/toolguard/errfmt"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/internal/exactjson"
	"github.com/toolguard/toolguard/internal/jsonptr"
	"github.com/toolguard/toolguard/repair"
	"github.com/toolguard/toolguard/strip"
	"github.com/toolguard/toolguard/validation"
)

// finished is one tool call's outcome, sent by the goroutine that ran it.
type finished struct {
	index int
	out   Outcome
}

// progress is how far a call of a batch got.
type progress uint8

const (
	callSkipped    progress = iota // not run in this batch (it waits for a person, or its outcome is known)
	callFinished                   // it finished, or was answered without running: its outcome is known
	callCutOff                     // it started and had not finished when the batch was cut short: its outcome is unknown
	callNotStarted                 // it never started
)

// callGate is what approval says the tool stage must do with a call,
// whatever the tool middlewares do to it. The zero value: nothing.
type callGate struct {
	// refuse is the error of a call that must never run: the tool stage
	// checks its arguments, tells the model what is wrong with them, and
	// otherwise returns refuse without running the tool.
	refuse error
	// pinned: the call runs with exactly args — not stripped or coerced
	// again, its tool not swapped — or not at all (a call a person
	// approved).
	pinned bool
	args   string // the pinned arguments
	// injected is args with the injected values set and checked by
	// Resume, for a tool with injected arguments.
	injected string
}

// runCalls runs calls through the tool stage, at most s.maxPar at a time,
// and returns each one's outcome and how far it got, by place. A call
// with skip set does not run (its outcome is left zero); gates, when not
// nil, say what approval decided of each call. A call of a tool the stage
// does not have is answered without running anything.
//
// When ctx is done it returns ctx.Err() at once; calls not yet started
// are not started, and running ones are left to honour ctx (their results
// are dropped: the channel they report to has room for all of them, so
// they never block). A call whose result comes once ctx is done, with an
// error wrapping ctx's (cutOffBy), is one of them, whichever runCalls sees
// first: its tool returned because ctx ended, and its outcome is unknown.
// When a call returns an error wrapping ErrStopRun, or its tool stage
// panics (a *ToolPanicError), calls not yet started are not started,
// running ones finish, and it returns that error. Either way the batch is
// cut short: the outcomes of the calls cut off are ErrCallInterrupted,
// those that never started ErrCallNotStarted.
func (s *Stage) runCalls(ctx context.Context, calls []guard.Call, gates []callGate, skip []bool) ([]Outcome, []progress, error) {
	outs := make([]Outcome, len(calls))
	prog := make([]progress, len(calls))
	record := guard.CallRecordFrom(ctx)
	var todo []int // calls of known tools, in order
	for i, c := range calls {
		if i < len(skip) && skip[i] {
			continue
		}
		prog[i] = callNotStarted
		if s.tools[c.Name] == nil {
			outs[i] = Outcome{Call: c, Err: fmt.Errorf("%w %q", ErrUnknownTool, c.Name), Content: errfmt.UnknownTool(c.Name, s.names)}
			prog[i] = callFinished
			continue
		}
		todo = append(todo, i)
	}

	thread := guard.ThreadFrom(ctx)
	results := make(chan finished, len(todo))
	running := 0
	var stop error
	// cut ends the batch of a run whose context ended: the calls not yet
	// started never start, the running ones are cut off.
	cut := func() ([]Outcome, []progress, error) {
		s.reportNotStarted(ctx, record, calls, todo)
		s.cutShort(calls, outs, prog)
		if stop != nil {
			return outs, prog, errors.Join(stop, ctx.Err())
		}
		return outs, prog, ctx.Err()
	}
	for len(todo) > 0 || running > 0 {
		if len(todo) > 0 && running < s.maxPar && ctx.Err() == nil && stop == nil {
			i := todo[0]
			todo = todo[1:]
			running++
			prog[i] = callCutOff // started: cut off unless it finishes
			c, gate := calls[i], callGate{}
			if i < len(gates) {
				gate = gates[i]
			}
			var forged *guard.Event
			var args string
			if gate.pinned {
				// Exactly the arguments pinned; the outcome keeps the call's.
				args = gate.args
			} else {
				// Values the model sent for injected arguments are dropped
				// here, so that they are in neither the outcome nor the span
				// (Run gave runCalls a copy of its calls when any can have
				// some).
				if _, injects := s.injection[c.Name]; injects {
					c, forged = s.dropForged(record, c)
					calls[i] = c
				}
				args = string(c.Args)
			}
			st := &callState{
				info:      CallInfo{ID: c.ID, Tool: c.Name, Thread: thread, Attempt: 1},
				modelArgs: args,
				tool:      s.tools[c.Name],
				checked:   !gate.pinned && record.Validated(c.ID, c.Name, args),
				out:       &callDone{},
				gate:      gate,
			}
			go s.callTool(ctx, i, calls[i], st, forged, results)
			continue
		}
		if len(todo) > 0 && stop != nil && running == 0 {
			break
		}
		select {
		case f := <-results:
			running--
			if cutOffBy(ctx, f.out.Err) {
				// The call returned because the run's context ended,
				// whether or not its result came before the context's
				// end: it was cut off, its outcome unknown, as a call
				// still running then is. Never a call that failed.
				return cut()
			}
			if f.out.Err != nil && f.out.Content == "" {
				// What the model reads, written here, as the results come
				// (an error's text may take time: never on a cut-off call).
				f.out.Content = errContent(f.out.Err)
			}
			outs[f.index], prog[f.index] = f.out, callFinished
			var panicked *ToolPanicError
			if stop == nil && (errors.As(f.out.Err, &panicked) || errors.Is(f.out.Err, ErrStopRun)) {
				stop = f.out.Err
			}
		case <-ctx.Done():
			return cut()
		}
	}
	s.reportNotStarted(ctx, record, calls, todo)
	record.Forget()
	if stop != nil {
		s.cutShort(calls, outs, prog)
		return outs, prog, stop
	}
	return outs, prog, nil
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

// cutShort gives the calls of a batch cut short that did not finish their
// outcome: unknown for those cut off, not run for those never started.
func (s *Stage) cutShort(calls []guard.Call, outs []Outcome, prog []progress) {
	for i, p := range prog {
		switch p {
		case callCutOff:
			outs[i] = Outcome{Call: s.WithoutInjected(calls[i]), Err: ErrCallInterrupted, Content: errfmt.CallInterrupted}
		case callNotStarted:
			outs[i] = Outcome{Call: s.WithoutInjected(calls[i]), Err: ErrCallNotStarted, Content: errfmt.CallNotStarted}
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
func (s *Stage) callTool(ctx context.Context, index int, c guard.Call, st *callState, forged *guard.Event, results chan<- finished) {
	f := finished{index: index, out: Outcome{Call: c}}
	ctx = withCallState(ctx, st)
	ctx, end := guard.ObserveToolCall(ctx, c)
	defer func() {
		// A panic in the tool stage (the tool, a tool middleware, an
		// injector) is the call's outcome: it ends the batch, not the
		// process.
		if p := recover(); p != nil {
			perr := &ToolPanicError{Tool: st.info.Tool, CallID: c.ID, Value: p, Stack: debug.Stack()}
			f.out = Outcome{Call: c, Err: perr, Content: errfmt.CallInterrupted} // whatever the tool did before it panicked is unknown
			if ran, args := st.out.get(); ran {
				f.out.Args = args
			}
			end("", errToolPanicked)
		}
		results <- f
	}()
	if forged != nil {
		ReportEvent(ctx, *forged)
	}
	// The starting arguments are prepared here, on the call's goroutine and
	// inside its span: preparing may take time (an injector looking a
	// value up) and may fail, which fails the call without running the
	// tool stage.
	var res *ToolResult
	stageArgs, err := s.prepareArgs(ctx, st)
	prepared := err == nil
	if prepared {
		st.stageArgs = stageArgs
		st.checked = st.checked && st.stageArgs == st.modelArgs
		s.precheck(st) // tool middlewares see the arguments the tool would get
		call := &ToolCall{ID: c.ID, Name: c.Name, Args: json.RawMessage(st.stageArgs), Tool: st.tool}
		res, err = s.chain(ctx, call)
		if err == nil && res == nil {
			err = errNoResult
		}
	}
	if ran, ranArgs := st.out.get(); ran {
		f.out.Args = ranArgs
	}
	switch {
	case err != nil:
		f.out.Err = err // its Content is written by runCalls
		if errors.Is(err, ErrStopRun) {
			ReportEvent(ctx, guard.Event{Kind: guard.EventRunStopped, Err: err})
		} else if prepared && f.out.Args == nil {
			var rejected *ArgsRejectedError
			var ve *validation.Error
			if !errors.As(err, &rejected) && !errors.As(err, &ve) {
				ReportEvent(ctx, guard.Event{Kind: guard.EventToolDenied, Err: err})
			}
		}
		end("", err)
	default:
		f.out.Content, f.out.Artifact, f.out.Direct = res.Content, res.Artifact, res.Direct
		end(res.Content, nil)
	}
}

// errContent returns what the model reads of a call that failed with err.
func errContent(err error) string {
	var rejected *ArgsRejectedError
	if errors.As(err, &rejected) {
		return errfmt.ToolError(rejected) // never the violations
	}
	var injectErr *InjectError
	if errors.As(err, &injectErr) {
		return errfmt.ToolError(injectErr) // never the cause: it may quote an injected value
	}
	var panicked *ToolPanicError
	if errors.As(err, &panicked) {
		return errfmt.CallInterrupted
	}
	var ve *validation.Error
	if errors.As(err, &ve) {
		return errfmt.Feedback(ve)
	}
	return errfmt.ToolError(err)
}

// errToolPanicked is what run observers are told of a tool that panicked.
var errToolPanicked = errors.New("toolstage: the tool panicked")

// prepareArgs returns the arguments a call enters the tool stage with: the
// model stage's (st.modelArgs). It is where arguments the model must not
// set are to be supplied; a call whose arguments it changes is checked
// against the tool's whole schema before the tool runs. It runs on the
// call's goroutine, with the call in ctx (CallFrom). An error fails the
// call without running the tool stage: Outcome.Err is the error and the model
// reads its text, so its text must be fit for the model.
func (s *Stage) prepareArgs(ctx context.Context, st *callState) (string, error) {
	return s.inject(ctx, st) // injected arguments (inject.go)
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
func (s *Stage) precheck(st *callState) {
	if st.checked || st.stageArgs != st.modelArgs || st.gate.pinned {
		return // validated already, set by the tool stage, or pinned as they are (not coerced)
	}
	sch, raw := s.compiled[st.info.Tool], []byte(st.stageArgs)
	takes := takesValue(st.tool)
	if !takes && len(bytes.TrimSpace(raw)) > 0 && sch.ValidateJSON(raw) == nil {
		st.checked = true // valid as they are: unchanged
		return
	}
	if r, err := checkArgs(st.info.Tool, sch, raw); err == nil {
		st.stageArgs, st.checked = string(r.Args), true
		if takes && !r.Changed {
			st.out.keepValue(r.Value)
		}
	}
}

// coercing returns the pipeline options for a call of tool whose arguments
// are the model's with the program's injected values set: the default
// coercions for the model's values, none for the injected ones.
func (s *Stage) coercing(tool string) guard.ArgsOptions {
	o := guard.ArgsOptions{Strip: strip.SchemaAware, Repair: repair.Coercions()}
	if inj, ok := s.injection[tool]; ok {
		o.Injected = inj.names
	}
	return o
}

// execute is the innermost handler of the tool stage: it checks the call's
// arguments unless the model stage already validated exactly these against
// the tool's schema, and runs the tool.
func (s *Stage) execute(ctx context.Context, call *ToolCall) (*ToolResult, error) {
	st := callStateFrom(ctx)
	if st == nil || call == nil {
		return nil, errors.New("toolstage: tool handler called outside the tool stage")
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
		v, err := s.pinnedArgs(ctx, st, call)
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
			o = s.coercing(call.Name)
		}
		res, err := checkArgsWith(call.Name, s.compiled[call.Name], args, o)
		if err != nil {
			if replaced {
				rejected := &ArgsRejectedError{Tool: call.Name, Err: err}
				var reported error = err
				if _, ok := s.injection[call.Name]; ok {
					reported = rejected // its violations may quote an injected value
				}
				ReportEvent(ctx, guard.Event{Kind: guard.EventArgsRejected, Err: reported})
				return nil, rejected
			}
			if _, ok := s.injection[call.Name]; ok {
				return nil, s.injectedCheckFailed(ctx, st, err) // never quote an injected value
			}
			return nil, err
		}
		if inj, ok := s.injection[call.Name]; ok {
			for _, n := range inj.names {
				if _, kept := res.Value[n]; !kept {
					// The check stripped an injected value (a null the
					// schema refuses, on a property it does not require):
					// the tool must not run without it.
					return nil, s.injectFailed(ctx, &InjectError{Tool: call.Name, Name: n,
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
	st.out.record(args)
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
var errApprovedArgsChanged = errors.New("toolstage: a tool middleware changed the arguments a person approved; the tool did not run")

// errApprovedToolChanged is the error of an approved call whose Tool a
// tool middleware replaced.
var errApprovedToolChanged = errors.New("toolstage: a tool middleware changed the tool of a call a person approved; the tool did not run")

// pinnedArgs is the innermost handler's check of a pinned call (a call a
// person approved, see callGate): it runs the tool the model called with
// exactly the approved arguments (and the injected values), or not at
// all. The arguments are validated as they are, never stripped or coerced
// again: if what they must meet changed since they were approved, the call
// fails with an [*ArgsRejectedError] (the model reads only that it could
// not run). It returns the arguments decoded.
func (s *Stage) pinnedArgs(ctx context.Context, st *callState, call *ToolCall) (map[string]any, error) {
	if call.Tool != nil && !sameTool(call.Tool, st.tool) {
		return nil, errApprovedToolChanged
	}
	if string(call.Args) != st.stageArgs {
		return nil, errApprovedArgsChanged
	}
	res, err := checkArgsWith(call.Name, s.compiled[call.Name], call.Args, guard.ArgsOptions{Strip: strip.Off})
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

// takesValue reports whether t, through the stage's wrappers, is a tool
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

// uncheckedCaller is implemented by the stage's own tool types: a call
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
