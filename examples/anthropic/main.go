// Command anthropic shows httpguard guarding the official Anthropic Go SDK
// (anthropic-sdk-go) at the wire, streaming: the model's first tool call
// is bad, httpguard holds it back from the stream, feeds the violation back
// to the model (a tool_result with is_error: true) and streams the
// corrected call in its place, so the SDK's Message.Accumulate assembles
// one well-formed message holding only the call that may run.
//
// It runs offline, always: the "provider" is httpguard/fakeprovider on a
// loopback port, scripted to make the mistake real models make. Nothing
// but the *http.Client given to the SDK differs from a program that calls
// Anthropic: drop option.WithBaseURL and set ANTHROPIC_API_KEY to run it
// for real.
//
//	cd examples/anthropic && go run .
package main

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
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
	provider := fp.New(
		fp.Reply(fp.Thinking("The user wants a forecast.", "c2lnLTE="), fp.Text("Let me check."),
			fp.Call("get_weather", `{"city": ["Paris"], "units": "kelvin"}`)),
		fp.Reply(fp.Call("get_weather", `{"city": "Paris", "units": "celsius"}`)),
		fp.Reply(fp.Text("It is sunny in Paris, 24°C.")),
	)
	defer provider.Close()

	events := guard.WithEventHandler(func(_ context.Context, e guard.Event) {
		if e.Kind == guard.EventInvalid || e.Kind == guard.EventReask {
			fmt.Printf("\n  [toolguard] %s %v", e.Kind, errText(e.Err))
		}
	})
	guarded := &http.Client{Transport: httpguard.New(nil, httpguard.ToolArgValidation(events), httpguard.ModelRetry(events))}
	client := anthropic.NewClient(option.WithHTTPClient(guarded), option.WithMaxRetries(0),
		option.WithBaseURL(provider.URL), option.WithAPIKey("sk-ant-offline"))

	params := anthropic.MessageNewParams{
		Model:     "claude-sonnet-4-5",
		MaxTokens: 1024,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("What's the weather in Paris?"))},
		Tools: []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{
			Name: "get_weather",
			InputSchema: anthropic.ToolInputSchemaParam{Required: []string{"city"}, Properties: map[string]any{
				"city":  map[string]any{"type": "string"},
				"units": map[string]any{"type": "string", "enum": []string{"celsius", "fahrenheit"}},
			}},
		}}},
	}
	fmt.Println("user: What's the weather in Paris?")
	for {
		stream := client.Messages.NewStreaming(ctx, params)
		var msg anthropic.Message
		fmt.Print("assistant (streamed): ")
		for stream.Next() {
			ev := stream.Current()
			if err := msg.Accumulate(ev); err != nil {
				return err
			}
			if d, ok := ev.AsAny().(anthropic.ContentBlockDeltaEvent); ok && d.Delta.Type == "text_delta" {
				fmt.Print(d.Delta.Text)
			}
		}
		fmt.Println()
		if err := stream.Err(); err != nil {
			return err
		}
		var results []anthropic.ContentBlockParamUnion
		for _, b := range msg.Content {
			if tu, ok := b.AsAny().(anthropic.ToolUseBlock); ok {
				fmt.Printf("the program reads AsToolUse(): %s(%s)\n", tu.Name, tu.Input)
				results = append(results, anthropic.NewToolResultBlock(tu.ID, "sunny, 24°C", false))
			}
		}
		if len(results) == 0 {
			break
		}
		params.Messages = append(params.Messages, msg.ToParam(), anthropic.NewUserMessage(results...))
	}

	reqs := provider.Requests()
	if len(reqs) != 3 {
		return fmt.Errorf("the provider received %d requests, want 3", len(reqs))
	}
	body := string(reqs[1].Body)
	i := strings.Index(body, `{"type":"tool_result"`)
	fmt.Printf("the provider received %d requests; the second is the re-ask, which the program never saw; its tool result:\n  %s\n", len(reqs), body[i:strings.Index(body[i:], "}")+i+1])
	return nil
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
