package otelguard_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/anthropic"
	"github.com/tmc/langchaingo/llms/openai"
	"github.com/toolguard/toolguard/middleware"
)

// loopback serves body to every request, as a provider's API would.
func loopback(t *testing.T, body string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestTokenUsageThroughProviders: langchaingo's own OpenAI and Anthropic
// clients, talking to a loopback server in their wire format, yield the
// usage their API reports on the chat span.
func TestTokenUsageThroughProviders(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		body    string
		model   func(url string) (llms.Model, error)
		in, out string
	}{
		{
			name: "openai",
			body: `{"id":"c1","object":"chat.completion","created":1,"model":"gpt-test",
				"choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],
				"usage":{"prompt_tokens":21,"completion_tokens":5,"total_tokens":26}}`,
			model: func(url string) (llms.Model, error) {
				return openai.New(openai.WithToken("test"), openai.WithBaseURL(url+"/v1"), openai.WithModel("gpt-test"))
			},
			in: "21", out: "5",
		},
		{
			name: "anthropic",
			body: `{"id":"msg_1","type":"message","role":"assistant","model":"claude-test","stop_reason":"tool_use",
				"usage":{"input_tokens":31,"output_tokens":6},
				"content":[{"type":"text","text":"Let me check."},
				           {"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris"}}]}`,
			model: func(url string) (llms.Model, error) {
				return anthropic.New(anthropic.WithToken("test"), anthropic.WithBaseURL(url+"/v1"), anthropic.WithModel("claude-test"))
			},
			in: "31", out: "6",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := loopback(t, tc.body)
			model, err := tc.model(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			tel := newTelemetry(t)
			llm := middleware.Wrap(model, tel.middleware())
			if _, err := llm.GenerateContent(context.Background(), human("weather?"), llms.WithTools([]llms.Tool{weatherTool})); err != nil {
				t.Fatal(err)
			}
			chats := tel.ended("chat")
			if len(chats) != 1 {
				t.Fatalf("spans %v, want one chat span", tel.ended(""))
			}
			if got := attr(chats[0].Attributes(), "gen_ai.usage.input_tokens"); got != tc.in {
				t.Errorf("gen_ai.usage.input_tokens = %q, want %q", got, tc.in)
			}
			if got := attr(chats[0].Attributes(), "gen_ai.usage.output_tokens"); got != tc.out {
				t.Errorf("gen_ai.usage.output_tokens = %q, want %q", got, tc.out)
			}
		})
	}
}
