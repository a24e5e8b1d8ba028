package agent_test

import (
	"context"
	"fmt"
	"strconv"

	"github.com/cenkalti/backoff/v4"
	"github.com/toolguard/toolguard/agent"
	"github.com/toolguard/toolguard/middleware/fakemodel"
	"github.com/toolguard/toolguard/toolstage"
)

// The first tool middleware is the outermost: it sees the call first and
// the result last.
func ExampleNew_toolMiddleware() {
	layer := func(name string) toolstage.ToolMiddleware {
		return toolstage.ToolFunc(func(next toolstage.ToolHandler) toolstage.ToolHandler {
			return func(ctx context.Context, call *toolstage.ToolCall) (*toolstage.ToolResult, error) {
				fmt.Printf("%s: call %s(%s)\n", name, call.Name, call.Args)
				res, err := next(ctx, call)
				fmt.Printf("%s: result %s\n", name, res.Content)
				return res, err
			}
		})
	}
	add := toolstage.NewTool("add", "Adds two integers.", func(_ context.Context, args AddArgs) (string, error) {
		fmt.Println("tool add runs")
		return strconv.Itoa(args.A + args.B), nil
	})
	model := fakemodel.New(fakemodel.ToolCalls(fakemodel.Call("add", `{"a": 2, "b": 3}`)), fakemodel.Text("2 + 3 = 5"))
	a := agent.New(model, toolstage.New([]toolstage.Tool{add}, toolstage.WithToolMiddleware(layer("a"), layer("b"))))

	res, err := a.Run(context.Background(), "What is 2 + 3?")
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Output)
	// Output:
	// a: call add({"a": 2, "b": 3})
	// b: call add({"a": 2, "b": 3})
	// tool add runs
	// b: result 5
	// a: result 5
	// 2 + 3 = 5
}

// ToolRetry runs an idempotent tool again after a timeout, but never a
// tool that is not idempotent: its outcome is unknown, and the model is
// told to check before repeating it.
func ExampleNew_toolRetry() {
	timeouts := map[string]int{"get_rate": 1, "pay": 1}
	flaky := func(name string) toolstage.Tool {
		return toolstage.NewSchemaTool(name, "A flaky service.", nil, func(ctx context.Context, _ map[string]any) (string, error) {
			call, _ := toolstage.CallFrom(ctx)
			fmt.Printf("%s runs, attempt %d\n", name, call.Attempt)
			if timeouts[name] > 0 {
				timeouts[name]--
				return "", fmt.Errorf("%s: %w", name, context.DeadlineExceeded)
			}
			return "ok", nil
		})
	}
	model := fakemodel.New(
		fakemodel.ToolCalls(fakemodel.Call("get_rate", `{}`)),
		fakemodel.ToolCalls(fakemodel.Call("pay", `{}`)),
		fakemodel.Text("done"),
	)
	a := agent.New(model, toolstage.New([]toolstage.Tool{toolstage.Idempotent(flaky("get_rate")), flaky("pay")}, toolstage.WithToolMiddleware(toolstage.ToolRetry(
		toolstage.WithBackOff(func() backoff.BackOff { return &backoff.ZeroBackOff{} }), // no waits in the example
	))))

	res, err := a.Run(context.Background(), "rate, then pay")
	if err != nil {
		panic(err)
	}
	for _, s := range res.Steps {
		fmt.Printf("%s: result %q, error %v\n", s.Tool, s.Result, s.Err)
	}
	// Output:
	// get_rate runs, attempt 1
	// get_rate runs, attempt 2
	// pay runs, attempt 1
	// get_rate: result "ok", error <nil>
	// pay: result "", error toolstage: tool "pay" failed and its outcome is unknown (pay: context deadline exceeded): it may have taken effect. It was not run again; check whether it took effect before calling it again
}
