package toolstage_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/cenkalti/backoff/v4"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/toolstage"
)

// AddArgs are the arguments of the examples' add tool.
type AddArgs struct {
	A int `json:"a"`
	B int `json:"b"`
}

// A program's own loop (an openai-go, anthropic-sdk-go or genai one)
// hands each model turn's calls to Run and appends a tool message per
// outcome; here the model's turns are a scripted list. A call of a tool
// the stage does not have, or with arguments its schema rejects, is an
// outcome the model reads, and its siblings run.
func ExampleStage_Run() {
	add := toolstage.NewTool("add", "Adds two integers.", func(_ context.Context, a AddArgs) (string, error) {
		return strconv.Itoa(a.A + a.B), nil
	})
	stage := toolstage.New([]toolstage.Tool{add})
	turns := [][]guard.Call{ // what the model answers, turn by turn
		{{ID: "call_1", Name: "add", Args: []byte(`{"a": 2, "b": 3}`)}, {ID: "call_2", Name: "multiply", Args: []byte(`{"a": 2, "b": 3}`)}},
		{{ID: "call_3", Name: "add", Args: []byte(`{"a": "two", "b": 3}`)}},
		{}, // a final answer: no calls
	}
	ctx := stage.Scope(context.Background()) // the model calls go with it, through httpguard
	for _, calls := range turns {
		if len(calls) == 0 {
			break
		}
		batch, err := stage.Run(ctx, calls)
		if err != nil {
			panic(err)
		}
		for _, o := range batch.Outcomes {
			fmt.Printf("tool message for %s (%s): %s\n", o.Call.ID, o.Call.Name, o.Content)
		}
	}
	// Output:
	// tool message for call_1 (add): 5
	// tool message for call_2 (multiply): Tool "multiply" does not exist. Available tools: "add". Did you mean "add"? Call one of the available tools by its exact name.
	// tool message for call_3 (add): Invalid arguments for tool "add": 1 error.
	// - /a: expected integer, got "two"
	// Call add again with corrected arguments.
}

// A payment waits for a person: Run runs the batch's other call and
// returns the interrupt, which travels as JSON (to a reviewer's screen,
// to another replica) and comes back with a decision; Resume runs the
// payment and gives every call's outcome, in call order.
func ExampleStage_Resume() {
	pay := toolstage.NewTool("transfer_money", "Pays someone.", func(_ context.Context, a transferArgs) (string, error) {
		return fmt.Sprintf("paid %d to %s", a.Amount, a.To), nil
	})
	rate := toolstage.NewSchemaTool("get_rate", "The exchange rate.", nil, func(context.Context, map[string]any) (string, error) {
		return "1.08", nil
	})
	stage := toolstage.New([]toolstage.Tool{pay, rate},
		toolstage.WithApprovalFor("transfer_money"),
		toolstage.WithInterruptKey([]byte("the application's secret key")))
	ctx := context.Background()

	batch, err := stage.Run(ctx, []guard.Call{
		{ID: "call_1", Name: "transfer_money", Args: []byte(`{"amount": 500, "to": "bob"}`)},
		{ID: "call_2", Name: "get_rate", Args: []byte(`{}`)},
	})
	if err != nil {
		panic(err)
	}
	for _, o := range batch.Outcomes {
		fmt.Printf("ran %s: %s\n", o.Call.ID, o.Content)
	}
	sent, _ := json.Marshal(batch.Interrupt) // to the reviewer

	var in toolstage.Interrupt // back from the reviewer
	if err := json.Unmarshal(sent, &in); err != nil {
		panic(err)
	}
	p := in.Pending[0]
	fmt.Printf("a person decides on %s %s(%s)\n", p.ID, p.Tool, p.Args)
	batch, err = stage.Resume(ctx, &in, toolstage.Decision{CallID: p.ID, Action: toolstage.Accept, Digest: p.Digest})
	if err != nil {
		panic(err)
	}
	for _, o := range batch.Outcomes {
		fmt.Printf("outcome %d, %s: %s\n", o.Index, o.Call.ID, o.Content)
	}
	_, err = stage.Resume(ctx, &in, toolstage.Decision{CallID: p.ID, Action: toolstage.Accept, Digest: p.Digest})
	fmt.Println("again:", err)
	// Output:
	// ran call_2: 1.08
	// a person decides on call_1 transfer_money({"amount":500,"to":"bob"})
	// outcome 0, call_1: paid 500 to bob
	// outcome 1, call_2: 1.08
	// again: toolstage: interrupt refused: it was already resumed
}

// The signed-in user's id is an injected argument: the model is offered
// the tool without it, a value the model sends for it is dropped (and
// reported), and the tool gets the program's.
func ExampleInject() {
	type OrderArgs struct {
		Item   string `json:"item"`
		UserID string `json:"user_id" toolguard:"inject"`
	}
	order := toolstage.NewTool("place_order", "Orders an item.", func(_ context.Context, a OrderArgs) (string, error) {
		return "ordered " + a.Item + " for " + a.UserID, nil
	})
	type userKey struct{}
	stage := toolstage.New([]toolstage.Tool{order},
		toolstage.Inject("user_id", func(ctx context.Context, _ *toolstage.ToolCall) (any, error) {
			return ctx.Value(userKey{}), nil // the request's signed-in user
		}),
		toolstage.WithEventHandler(func(_ context.Context, e guard.Event) {
			if e.Kind == guard.EventForgedArgument {
				fmt.Printf("event %s: tool %s, call %s, %v\n", e.Kind, e.Tool, e.CallID, e.Paths)
			}
		}))
	fmt.Printf("offered: %s\n", stage.Definitions()[0].Parameters)

	ctx := context.WithValue(context.Background(), userKey{}, "u-alice")
	batch, err := stage.Run(ctx, []guard.Call{{ID: "call_1", Name: "place_order", Args: []byte(`{"item": "book", "user_id": "u-attacker"}`)}})
	if err != nil {
		panic(err)
	}
	o := batch.Outcomes[0]
	fmt.Printf("the model sent %s and reads: %s\n", o.Call.Args, o.Content)
	// Output:
	// offered: {"additionalProperties":false,"properties":{"item":{"type":"string"}},"required":["item"],"type":"object"}
	// event forged_argument: tool place_order, call call_1, [/user_id]
	// the model sent {"item":"book"} and reads: ordered book for u-alice
}

// ToolRetry runs an idempotent tool again after a timeout, but never a
// tool that is not idempotent: its outcome is unknown, and the model is
// told to check before repeating it.
func ExampleToolRetry() {
	flaky := func(name string) toolstage.Tool {
		return toolstage.NewSchemaTool(name, "A flaky service.", nil, func(ctx context.Context, _ map[string]any) (string, error) {
			call, _ := toolstage.CallFrom(ctx)
			fmt.Printf("%s runs, attempt %d\n", name, call.Attempt)
			if call.Attempt == 1 {
				return "", fmt.Errorf("%s: %w", name, context.DeadlineExceeded)
			}
			return "ok", nil
		})
	}
	stage := toolstage.New([]toolstage.Tool{toolstage.Idempotent(flaky("get_rate")), flaky("pay")},
		toolstage.WithMaxConcurrency(1), // one at a time, for the example's output
		toolstage.WithToolMiddleware(toolstage.ToolRetry(
			toolstage.WithBackOff(func() backoff.BackOff { return &backoff.ZeroBackOff{} }), // no waits in the example
		)))
	batch, err := stage.Run(context.Background(), []guard.Call{
		{ID: "call_1", Name: "get_rate", Args: []byte(`{}`)},
		{ID: "call_2", Name: "pay", Args: []byte(`{}`)},
	})
	if err != nil {
		panic(err)
	}
	for _, o := range batch.Outcomes {
		fmt.Printf("%s: %q, error %v\n", o.Call.Name, o.Content, o.Err)
	}
	// Output:
	// get_rate runs, attempt 1
	// get_rate runs, attempt 2
	// pay runs, attempt 1
	// get_rate: "ok", error <nil>
	// pay: "Error: toolstage: tool \"pay\" failed and its outcome is unknown (pay: context deadline exceeded): it may have taken effect. It was not run again; check whether it took effect before calling it again", error toolstage: tool "pay" failed and its outcome is unknown (pay: context deadline exceeded): it may have taken effect. It was not run again; check whether it took effect before calling it again
}

// The first tool middleware is the outermost: it sees the call first and
// the result last.
func ExampleWithToolMiddleware() {
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
	add := toolstage.NewTool("add", "Adds two integers.", func(_ context.Context, a AddArgs) (string, error) {
		fmt.Println("tool add runs")
		return strconv.Itoa(a.A + a.B), nil
	})
	stage := toolstage.New([]toolstage.Tool{add}, toolstage.WithToolMiddleware(layer("a"), layer("b")))
	if _, err := stage.Run(context.Background(), []guard.Call{{ID: "call_1", Name: "add", Args: []byte(`{"a": 2, "b": 3}`)}}); err != nil {
		panic(err)
	}
	// Output:
	// a: call add({"a": 2, "b": 3})
	// b: call add({"a": 2, "b": 3})
	// tool add runs
	// b: result 5
	// a: result 5
}
