package sdktest

import (
	"context"
	"errors"
	"io"
	"testing"

	goopenai "github.com/sashabaranov/go-openai"
	fp "github.com/toolguard/toolguard/httpguard/fakeprovider"
)

func goopenaiClient(srv *fp.Server) *goopenai.Client {
	cfg := goopenai.DefaultConfig("sk-test")
	cfg.BaseURL = srv.URL + "/v1"
	return goopenai.NewClientWithConfig(cfg)
}

func goopenaiRequest() goopenai.ChatCompletionRequest {
	return goopenai.ChatCompletionRequest{
		Model:    "gpt-4o",
		Messages: []goopenai.ChatCompletionMessage{{Role: "user", Content: "Weather in Paris?"}},
		Tools: []goopenai.Tool{{Type: goopenai.ToolTypeFunction, Function: &goopenai.FunctionDefinition{
			Name: "get_weather", Parameters: weatherParams(),
		}}},
	}
}

// The fake speaks Chat Completions as go-openai reads it, sync and through
// the stream's Recv.
func TestGoOpenAIReadsFake(t *testing.T) {
	t.Parallel()
	reply := fp.Reply(fp.Text("Let me check."), fp.Call("get_weather", `{"city": "Paris"}`)).WithUsage(11, 7)
	srv := fp.New(reply, reply)
	defer srv.Close()
	client := goopenaiClient(srv)
	ctx := context.Background()

	resp, err := client.CreateChatCompletion(ctx, goopenaiRequest())
	if err != nil {
		t.Fatal(err)
	}
	m := resp.Choices[0].Message
	if m.Content != "Let me check." || len(m.ToolCalls) != 1 || m.ToolCalls[0].Function.Arguments != `{"city": "Paris"}` ||
		resp.Choices[0].FinishReason != goopenai.FinishReasonToolCalls || resp.Usage.PromptTokens != 11 {
		t.Errorf("sync: %+v", resp)
	}

	req := goopenaiRequest()
	req.StreamOptions = &goopenai.StreamOptions{IncludeUsage: true}
	stream, err := client.CreateChatCompletionStream(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	var text, args, id, finish string
	var usage *goopenai.Usage
	for {
		c, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if c.Usage != nil {
			usage = c.Usage
		}
		for _, ch := range c.Choices {
			text += ch.Delta.Content
			for _, tc := range ch.Delta.ToolCalls {
				args += tc.Function.Arguments
				if tc.ID != "" {
					id = tc.ID
				}
			}
			if ch.FinishReason != "" {
				finish = string(ch.FinishReason)
			}
		}
	}
	if text != "Let me check." || args != `{"city": "Paris"}` || id == "" || finish != "tool_calls" || usage == nil || usage.CompletionTokens != 7 {
		t.Errorf("stream: text %q args %q id %q finish %q usage %+v", text, args, id, finish, usage)
	}
}
