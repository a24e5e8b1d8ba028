package sdktest

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	goopenai "github.com/sashabaranov/go-openai"
	"github.com/tmc/langchaingo/llms"
	lcanthropic "github.com/tmc/langchaingo/llms/anthropic"
	lcopenai "github.com/tmc/langchaingo/llms/openai"
	"github.com/toolguard/toolguard/guard"
	fp "github.com/toolguard/toolguard/httpguard/fakeprovider"
)

// sashabaranov/go-openai, sync and streamed through Recv: the corrected
// call, one per index.
func TestGuardedGoOpenAI(t *testing.T) {
	t.Parallel()
	for _, stream := range []bool{false, true} {
		srv := fp.New(badThenGood()...)
		defer srv.Close()
		var events []guard.Event
		cfg := goopenai.DefaultConfig("sk-test")
		cfg.BaseURL, cfg.HTTPClient = srv.URL+"/v1", guardedClient(&events)
		client := goopenai.NewClientWithConfig(cfg)
		req := goopenai.ChatCompletionRequest{
			Model:    "gpt-4o",
			Messages: []goopenai.ChatCompletionMessage{{Role: "user", Content: "Weather in Paris for 3 days?"}},
			Tools: []goopenai.Tool{{Type: goopenai.ToolTypeFunction, Function: &goopenai.FunctionDefinition{
				Name: "get_weather", Parameters: daysParams(),
			}}},
		}
		var args, text string
		if !stream {
			resp, err := client.CreateChatCompletion(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			m := resp.Choices[0].Message
			if len(m.ToolCalls) != 1 {
				t.Fatalf("sync: %+v", m)
			}
			args, text = m.ToolCalls[0].Function.Arguments, m.Content
		} else {
			s, err := client.CreateChatCompletionStream(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			ids := map[string]bool{}
			for {
				c, err := s.Recv()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				for _, ch := range c.Choices {
					text += ch.Delta.Content
					for _, tc := range ch.Delta.ToolCalls {
						args += tc.Function.Arguments
						if tc.ID != "" {
							ids[tc.ID] = true
						}
					}
				}
			}
			s.Close()
			if len(ids) != 1 {
				t.Errorf("stream: calls %v, want one", ids)
			}
		}
		checkReask(t, srv, events)
		want := map[bool]string{false: "Sorry.", true: "Let me check."}[stream]
		if !jsonEq(t, args, correctedArgs) || text != want {
			t.Errorf("stream %v: arguments %s, text %q", stream, args, text)
		}
	}
}

// langchaingo's openai and anthropic clients, given httpguard's client:
// the corrected call in the response's ToolCalls, sync and streaming.
func TestGuardedLangchaingo(t *testing.T) {
	t.Parallel()
	tools := []llms.Tool{{Type: "function", Function: &llms.FunctionDefinition{Name: "get_weather", Parameters: daysParams()}}}
	for _, stream := range []bool{false, true} {
		for _, name := range []string{"openai", "anthropic"} {
			srv := fp.New(badThenGood()...)
			defer srv.Close()
			var events []guard.Event
			hc := guardedClient(&events)
			var m llms.Model
			var err error
			switch name {
			case "openai":
				m, err = lcopenai.New(lcopenai.WithBaseURL(srv.URL+"/v1"), lcopenai.WithToken("sk-test"), lcopenai.WithModel("gpt-4o"), lcopenai.WithHTTPClient(hc))
			case "anthropic":
				m, err = lcanthropic.New(lcanthropic.WithBaseURL(srv.URL+"/v1"), lcanthropic.WithToken("sk-ant-test"),
					lcanthropic.WithModel("claude-sonnet-4-5"), lcanthropic.WithHTTPClient(hc))
			}
			if err != nil {
				t.Fatal(err)
			}
			opts := []llms.CallOption{llms.WithTools(tools)}
			var streamed strings.Builder
			if stream {
				opts = append(opts, llms.WithStreamingFunc(func(_ context.Context, b []byte) error { streamed.Write(b); return nil }))
			}
			resp, err := m.GenerateContent(context.Background(), []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "Weather in Paris for 3 days?")}, opts...)
			if err != nil {
				t.Fatalf("%s stream %v: %v", name, stream, err)
			}
			checkReask(t, srv, events)
			var calls []llms.ToolCall
			for _, ch := range resp.Choices {
				calls = append(calls, ch.ToolCalls...)
			}
			if len(calls) != 1 || !jsonEq(t, calls[0].FunctionCall.Arguments, correctedArgs) {
				t.Errorf("%s stream %v: calls %+v", name, stream, calls)
			}
			if stream && strings.Contains(streamed.String(), "42") {
				t.Errorf("%s: the stream carried the rejected call: %s", name, streamed.String())
			}
		}
	}
}
