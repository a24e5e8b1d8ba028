package guard

import "context"

// RunObserver is an optional interface of an [Observer]: an observer that
// implements it is also told about the runs of an agent loop and the tools
// each run executes. Package agent reports runs to it through
// [ObserveRun], package toolstage each tool call it executes, whatever the
// host, through [ObserveToolCall]; package otelguard turns the reports
// into invoke_agent and execute_tool spans. Its methods follow the rules of Observer's.
type RunObserver interface {
	// OnRun is called as a run starts. It returns the context to run with
	// and a function called with the run's outcome; either may be ctx and
	// nil.
	OnRun(ctx context.Context) (context.Context, func(err error))
	// OnToolCall is called as a tool call is about to be executed, with the
	// call as the middlewares returned it. It returns the context to run the
	// tool with and a function called with the tool's result or error.
	OnToolCall(ctx context.Context, call Call) (context.Context, func(result string, err error))
}

// ObserverInstaller is an optional interface of an adapter's middleware
// that installs an [Observer] in the context of the calls it handles (the
// one package middleware's Observe returns does). An agent loop finds it
// among its middlewares and calls InstallObserver once per run, so that the
// run and its tool calls are observed too.
type ObserverInstaller interface {
	// InstallObserver returns ctx carrying the middleware's observer. The
	// middleware does not install it again in a call whose context it
	// already reaches through ctx.
	InstallObserver(ctx context.Context) context.Context
}

// ObserveRun tells each [RunObserver] among the observers ctx carries that
// a run starts, the outermost first. It returns the context to run with and
// a function to call once with the run's outcome, which tells them in
// reverse order. Without such an observer it returns ctx and a no-op.
func ObserveRun(ctx context.Context) (context.Context, func(error)) {
	var ends []func(error)
	for _, o := range flatten(ObserverFrom(ctx), nil) {
		if ro, ok := o.(RunObserver); ok {
			var end func(error)
			if ctx, end = ro.OnRun(ctx); end != nil {
				ends = append(ends, end)
			}
		}
	}
	return ctx, func(err error) {
		for i := len(ends) - 1; i >= 0; i-- {
			ends[i](err)
		}
	}
}

// ObserveToolCall tells each [RunObserver] among the observers ctx carries
// that call is about to be executed, as [ObserveRun] tells of a run. The
// returned function is to be called once with the tool's result or error.
func ObserveToolCall(ctx context.Context, call Call) (context.Context, func(string, error)) {
	var ends []func(string, error)
	for _, o := range flatten(ObserverFrom(ctx), nil) {
		if ro, ok := o.(RunObserver); ok {
			var end func(string, error)
			if ctx, end = ro.OnToolCall(ctx, call); end != nil {
				ends = append(ends, end)
			}
		}
	}
	return ctx, func(result string, err error) {
		for i := len(ends) - 1; i >= 0; i-- {
			ends[i](result, err)
		}
	}
}

// flatten appends the observers o combines to list, the outermost first.
func flatten(o Observer, list []Observer) []Observer {
	switch o := o.(type) {
	case nil:
		return list
	case observers:
		return flatten(o.inner, flatten(o.outer, list))
	}
	return append(list, o)
}
