// Command openai shows httpguard guarding the official OpenAI Go SDK
// (openai-go) at the wire: the model's first tool call is bad, httpguard
// catches it inside the SDK's call, feeds the violation back to the model
// and hands the program the corrected call, read through the SDK's own
// accessor; then the tool runs and the model answers.
//
// It runs offline, always: the "provider" is httpguard/fakeprovider on a
// loopback port, scripted to make the mistake real models make (a number
// where a string belongs, a number sent as a string). Nothing but the
// *http.Client given to the SDK differs from a program that calls OpenAI:
// drop option.WithBaseURL and set OPENAI_API_KEY to run it for real.
//
//	cd examples/openai && go run .
package main

import (
	"context"
	"fmt"
	"log"
	"net/http"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/httpguard"
	fp "github.com/toolguard/toolguard/httpguard/fakeprovider"
)

func main() {
	if err := run(context.Background()); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context) error {
	// The provider's script: a bad call, the corrected one (days still a
	// string, which the guard coerces without asking again), the answer.
	provider := fp.New(
		fp.Reply(fp.Text("Let me check the forecast."), fp.Call("get_weather", `{"city": 75001, "days": "3"}`)),
		fp.Reply(fp.Call("get_weather", `{"city": "Paris", "days": "3"}`)),
		fp.Reply(fp.Text("Sunny in Paris for the next 3 days, 24°C.")),
	)
	defer provider.Close()

	// The guard: the SDK's client gets an *http.Client whose transport is
	// httpguard's. Its retries are httpguard's ModelRetry, so the SDK's
	// own are off.
	events := guard.WithEventHandler(func(_ context.Context, e guard.Event) {
		switch e.Kind {
		case guard.EventInvalid:
			fmt.Printf("  [toolguard] %s: %v\n", e.Kind, e.Err)
		case guard.EventReask, guard.EventRepaired:
			fmt.Printf("  [toolguard] %s %v\n", e.Kind, e.Paths)
		}
	})
	guarded := &http.Client{Transport: httpguard.New(nil, httpguard.ToolArgValidation(events), httpguard.ModelRetry(events))}
	client := openai.NewClient(option.WithHTTPClient(guarded), option.WithMaxRetries(0),
		option.WithBaseURL(provider.URL+"/v1/"), option.WithAPIKey("sk-offline"))

	params := openai.ChatCompletionNewParams{
		Model:    "gpt-4o",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("What's the weather in Paris for the next 3 days?")},
		Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: "get_weather",
			Parameters: shared.FunctionParameters{"type": "object", "required": []string{"city"}, "properties": map[string]any{
				"city": map[string]any{"type": "string"}, "days": map[string]any{"type": "integer"}}},
		})},
	}
	fmt.Println("user: What's the weather in Paris for the next 3 days?")
	for {
		cc, err := client.Chat.Completions.New(ctx, params)
		if err != nil {
			return err
		}
		msg := cc.Choices[0].Message
		if len(msg.ToolCalls) == 0 {
			fmt.Println("assistant:", msg.Content)
			break
		}
		params.Messages = append(params.Messages, msg.ToParam())
		for _, tc := range msg.ToolCalls {
			fn := tc.AsFunction()
			fmt.Printf("the program reads AsFunction(): %s(%s)\n", fn.Function.Name, fn.Function.Arguments)
			params.Messages = append(params.Messages, openai.ToolMessage("sunny, 24°C", fn.ID))
		}
	}

	reqs := provider.Requests()
	if len(reqs) != 3 {
		return fmt.Errorf("the provider received %d requests, want 3", len(reqs))
	}
	fmt.Printf("the provider received %d requests; the second is the re-ask, which the program never saw:\n  %s\n", len(reqs), reqs[1].Body)
	return nil
}
