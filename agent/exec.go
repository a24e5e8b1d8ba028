package agent

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/errfmt"
)

// errNoFunction is the Step.Err of a tool call that came without a function.
var errNoFunction = errors.New("agent: the tool call has no function name")

// finished is one tool call's outcome, sent by the goroutine that ran it.
type finished struct {
	index  int
	result string
	err    error
	panic  any // the tool's panic value, re-raised on Run's goroutine
	stack  []byte
}

// runTools runs calls, at most a.maxPar at a time, and returns their steps
// and tool-message contents in call order. When ctx is done it returns
// ctx.Err() at once with the steps of the calls that finished; calls not yet
// started are not started, and running ones are left to honour ctx (their
// results are dropped: the channel they report to has room for all of them,
// so they never block).
func (a *Agent) runTools(ctx context.Context, calls []llms.ToolCall) ([]Step, []string, error) {
	steps := make([]Step, len(calls))
	answers := make([]string, len(calls))
	done := make([]bool, len(calls))
	var todo []int // calls of known tools, in order
	for i, c := range calls {
		steps[i] = Step{CallID: c.ID}
		switch {
		case c.FunctionCall == nil:
			steps[i].Err, done[i] = errNoFunction, true
		case a.tools[c.FunctionCall.Name] == nil:
			steps[i].Tool, steps[i].Arguments = c.FunctionCall.Name, c.FunctionCall.Arguments
			steps[i].Err = fmt.Errorf("%w %q", ErrUnknownTool, c.FunctionCall.Name)
			answers[i], done[i] = errfmt.UnknownTool(c.FunctionCall.Name, a.names), true
		default:
			steps[i].Tool, steps[i].Arguments = c.FunctionCall.Name, c.FunctionCall.Arguments
			todo = append(todo, i)
		}
	}

	results := make(chan finished, len(todo))
	running := 0
	for len(todo) > 0 || running > 0 {
		if len(todo) > 0 && running < a.maxPar && ctx.Err() == nil {
			i := todo[0]
			todo = todo[1:]
			running++
			go callTool(ctx, a.tools[calls[i].FunctionCall.Name], i, calls[i], results)
			continue
		}
		select {
		case f := <-results:
			running--
			if f.panic != nil {
				panic(fmt.Sprintf("agent: tool %q panicked: %v\n\n%s", steps[f.index].Tool, f.panic, f.stack))
			}
			steps[f.index].Result, steps[f.index].Err = f.result, f.err
			answers[f.index], done[f.index] = toolMessage(steps[f.index]), true
		case <-ctx.Done():
			var finishedSteps []Step
			for i, s := range steps {
				if done[i] && calls[i].FunctionCall != nil {
					finishedSteps = append(finishedSteps, s)
				}
			}
			return finishedSteps, nil, ctx.Err()
		}
	}
	return steps, answers, nil
}

// callTool runs one tool call and reports its outcome on results.
func callTool(ctx context.Context, t Tool, index int, call llms.ToolCall, results chan<- finished) {
	f := finished{index: index}
	defer func() {
		if p := recover(); p != nil {
			f.panic, f.stack = p, debug.Stack()
		}
		results <- f
	}()
	f.result, f.err = runObserved(ctx, t, call)
	if f.err != nil {
		f.result = ""
	}
}
