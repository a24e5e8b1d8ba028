package agent_test

import (
	"context"
	"fmt"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/agent"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/fakemodel"
	"github.com/toolguard/toolguard/toolstage"
)

// A conversation of two turns: the second continues from the first's
// transcript, and the thread limit spans both.
func ExampleAgent_RunMessages() {
	weather := toolstage.NewTool("get_weather", "Current weather of a city.",
		func(_ context.Context, args struct {
			City string `json:"city"`
		}) (string, error) {
			return "sunny in " + args.City, nil
		})
	llm := fakemodel.New( // a scripted model; use any llms.Model
		fakemodel.ToolCalls(fakemodel.Call("get_weather", `{"city": "Paris"}`)),
		fakemodel.Text("It is sunny in Paris."),
		fakemodel.ToolCalls(fakemodel.Call("get_weather", `{"city": "Lyon"}`)),
	)
	a := agent.New(llm, toolstage.New([]toolstage.Tool{weather}),
		agent.WithMiddleware(middleware.ToolCallLimit(
			guard.WithThreadLimit(1), guard.WithExitBehavior(guard.ExitEnd))),
		agent.WithCallOptions(llms.WithModel("gpt-4o-mini"), llms.WithTemperature(0)),
	)
	ctx := guard.WithThread(context.Background(), "user-42")

	history := []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "Weather in Paris?")}
	res, err := a.RunMessages(ctx, history)
	if err != nil {
		panic(err)
	}
	fmt.Println("turn 1:", res.Output)

	history = append(res.Messages, llms.TextParts(llms.ChatMessageTypeHuman, "And in Lyon?"))
	res, err = a.RunMessages(ctx, history)
	if err != nil {
		panic(err)
	}
	fmt.Println("turn 2:", res.Output)
	fmt.Println("messages the model saw in turn 2:", len(llm.Requests()[2].Messages))
	// Output:
	// turn 1: It is sunny in Paris.
	// turn 2: Tool call limit reached: thread limit exceeded (1/1 calls).
	// messages the model saw in turn 2: 5
}
