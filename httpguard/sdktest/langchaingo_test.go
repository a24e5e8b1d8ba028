package sdktest

import (
	"context"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/anthropic"
	"github.com/tmc/langchaingo/llms/googleai"
	"github.com/tmc/langchaingo/llms/openai"
	fp "github.com/toolguard/toolguard/httpguard/fakeprovider"
	"google.golang.org/api/option"
)

func lcTools() []llms.Tool {
	return []llms.Tool{{Type: "function", Function: &llms.FunctionDefinition{Name: "get_weather", Parameters: weatherParams()}}}
}

func lcMessages() []llms.MessageContent {
	return []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "Weather in Paris?")}
}

// lcModels are langchaingo's clients pointed at srv.
func lcModels(t *testing.T, srv *fp.Server) map[string]llms.Model {
	t.Helper()
	oa, err := openai.New(openai.WithBaseURL(srv.URL+"/v1"), openai.WithToken("sk-test"), openai.WithModel("gpt-4o"))
	if err != nil {
		t.Fatal(err)
	}
	an, err := anthropic.New(anthropic.WithBaseURL(srv.URL+"/v1"), anthropic.WithToken("sk-ant-test"), anthropic.WithModel("claude-sonnet-4-5"))
	if err != nil {
		t.Fatal(err)
	}
	gg, err := googleai.New(context.Background(), googleai.WithAPIKey("g-test"), googleai.WithRest(), googleai.WithDefaultModel("gemini-2.5-flash"),
		func(o *googleai.Options) { o.ClientOptions = append(o.ClientOptions, option.WithEndpoint(srv.URL)) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gg.Close() })
	return map[string]llms.Model{"openai": oa, "anthropic": an, "googleai": gg}
}

// The fake speaks each protocol as langchaingo's openai, anthropic and
// googleai clients read it, sync and streaming.
func TestLangchaingoReadsFake(t *testing.T) {
	t.Parallel()
	for _, stream := range []bool{false, true} {
		reply := fp.Reply(fp.Text("Let me check."), fp.Call("get_weather", `{"city": "Paris"}`))
		srv := fp.New(reply, reply, reply)
		defer srv.Close()
		for _, name := range []string{"openai", "anthropic", "googleai"} {
			m := lcModels(t, srv)[name]
			opts := []llms.CallOption{llms.WithTools(lcTools())}
			var streamed strings.Builder
			if stream {
				opts = append(opts, llms.WithStreamingFunc(func(_ context.Context, b []byte) error {
					streamed.Write(b)
					return nil
				}))
			}
			resp, err := m.GenerateContent(context.Background(), lcMessages(), opts...)
			if err != nil {
				t.Errorf("%s stream=%v: %v", name, stream, err)
				continue
			}
			var calls []llms.ToolCall
			var text string
			for _, ch := range resp.Choices {
				calls = append(calls, ch.ToolCalls...)
				text += ch.Content
			}
			if len(calls) != 1 || calls[0].FunctionCall.Name != "get_weather" || !jsonEq(t, calls[0].FunctionCall.Arguments, `{"city":"Paris"}`) {
				t.Errorf("%s stream=%v: calls %+v", name, stream, calls)
			}
			if text != "Let me check." {
				t.Errorf("%s stream=%v: text %q", name, stream, text)
			}
			if stream && !strings.Contains(streamed.String(), "Let me check.") {
				t.Errorf("%s: streamed %q", name, streamed.String())
			}
		}
		for _, r := range srv.Requests() {
			if r.Stream != stream {
				t.Errorf("%s%s?%s: stream %v, want %v", r.Method, r.Path, r.RawQuery, r.Stream, stream)
			}
		}
	}
}
