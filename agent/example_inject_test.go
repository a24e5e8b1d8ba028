package agent_test

import (
	"context"
	"fmt"

	"github.com/toolguard/toolguard/agent"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/middleware/fakemodel"
	"github.com/toolguard/toolguard/toolstage"
)

// ExampleNew_injected: the user id comes from the request, never from the model.
// The model is not told of user_id; the "admin" it sends anyway is dropped
// and reported, and the tool runs for the signed-in user.
func ExampleNew_injected() {
	type orderArgs struct {
		Item   string `json:"item"`
		UserID string `json:"user_id" toolguard:"inject"`
	}
	type userKey struct{}
	order := toolstage.NewTool("place_order", "Order an item.", func(_ context.Context, a orderArgs) (string, error) {
		return fmt.Sprintf("%s ordered for %s", a.Item, a.UserID), nil
	})
	model := fakemodel.New(
		fakemodel.ToolCalls(fakemodel.Call("place_order", `{"item": "tea", "user_id": "admin"}`)),
		fakemodel.Text("Ordered."),
	)
	a := agent.New(model, toolstage.New([]toolstage.Tool{order}, toolstage.Inject("user_id", func(ctx context.Context, _ *toolstage.ToolCall) (any, error) {
		return ctx.Value(userKey{}), nil
	}), toolstage.WithEventHandler(func(_ context.Context, e guard.Event) {
		fmt.Println("event:", e.Kind, e.Tool, e.CallID, e.Paths)
	})))
	res, err := a.Run(context.WithValue(context.Background(), userKey{}, "alice"), "Tea, please.")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("model was sent:", model.Requests()[0].Options.Tools[0].Function.Parameters)
	fmt.Println("tool:", res.Steps[0].Result)
	fmt.Println("transcript keeps:", res.Steps[0].ModelArguments)
	// Output:
	// event: forged_argument place_order call_1 [/user_id]
	// model was sent: map[additionalProperties:false properties:map[item:map[type:string]] required:[item] type:object]
	// tool: tea ordered for alice
	// transcript keeps: {"item":"tea"}
}
