package sdktest

import (
	"context"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	fp "github.com/toolguard/toolguard/httpguard/fakeprovider"
)

func anthropicClient(srv *fp.Server, opts ...option.RequestOption) *anthropic.Client {
	c := anthropic.NewClient(append([]option.RequestOption{option.WithBaseURL(srv.URL), option.WithAPIKey("sk-ant-test")}, opts...)...)
	return &c
}

func messageParams() anthropic.MessageNewParams {
	return anthropic.MessageNewParams{
		Model:     "claude-sonnet-4-5",
		MaxTokens: 1024,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Weather in Paris?"))},
		Tools: []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{
			Name:        "get_weather",
			InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"city": map[string]any{"type": "string"}}, Required: []string{"city"}},
		}}},
	}
}

// The fake speaks Messages as anthropic-sdk-go reads it: thinking with its
// signature, text, tool_use through AsToolUse and ToParam, sync and
// streamed through Message.Accumulate.
func TestAnthropicReadsFake(t *testing.T) {
	t.Parallel()
	reply := fp.Reply(fp.Thinking("think", "sig1"), fp.Text("Let me check."), fp.Call("get_weather", `{"city": "Paris"}`)).WithUsage(11, 7)
	srv := fp.New(reply, reply)
	defer srv.Close()
	client := anthropicClient(srv)
	ctx := context.Background()

	check := func(name string, m *anthropic.Message) {
		t.Helper()
		if len(m.Content) != 3 || m.StopReason != "tool_use" {
			t.Fatalf("%s: content %d blocks, stop %q: %s", name, len(m.Content), m.StopReason, m.RawJSON())
		}
		if th := m.Content[0].AsThinking(); th.Thinking != "think" || th.Signature != "sig1" {
			t.Errorf("%s: thinking %+v", name, th)
		}
		if tx := m.Content[1].AsText(); tx.Text != "Let me check." {
			t.Errorf("%s: text %+v", name, tx)
		}
		tu := m.Content[2].AsToolUse()
		if tu.ID == "" || tu.Name != "get_weather" || !jsonEq(t, string(tu.Input), `{"city":"Paris"}`) {
			t.Errorf("%s: AsToolUse() = %+v (input %s)", name, tu, tu.Input)
		}
		p := m.ToParam()
		if in := p.OfAssistant.Content[2].OfToolUse; in == nil || in.ID != tu.ID || !jsonEq(t, mustJSON(in.Input), `{"city":"Paris"}`) {
			t.Errorf("%s: ToParam() tool_use = %+v", name, in)
		}
		if m.Usage.InputTokens != 11 || m.Usage.OutputTokens != 7 {
			t.Errorf("%s: usage %+v", name, m.Usage)
		}
	}
	m, err := client.Messages.New(ctx, messageParams())
	if err != nil {
		t.Fatal(err)
	}
	check("sync", m)

	stream := client.Messages.NewStreaming(ctx, messageParams())
	var acc anthropic.Message
	for stream.Next() {
		if err := acc.Accumulate(stream.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	check("stream", &acc)
}
