package middleware_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/ollama"
	"github.com/tmc/langchaingo/llms/openai"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/middleware"
)

// ollamaServer imitates Ollama: its native /api/chat and its
// OpenAI-compatible /v1/chat/completions both answer with a tool call, each
// in its own wire format. It keeps the request bodies by path.
func ollamaServer(t *testing.T) (*httptest.Server, func(path string) map[string]any) {
	t.Helper()
	var mu sync.Mutex
	got := map[string]map[string]any{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req map[string]any
		if err := json.Unmarshal(body, &req); err != nil {
			t.Errorf("%s: request body is not JSON: %v", r.URL.Path, err)
		}
		mu.Lock()
		got[r.URL.Path] = req
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/api/chat":
			// One JSON object per line, as Ollama streams them.
			_, _ = io.WriteString(w, `{"model":"qwen3","created_at":"2026-11-24T05:00:00Z","done":true,"done_reason":"stop",`+
				`"message":{"role":"assistant","content":"","tool_calls":[{"function":{"name":"get_weather","arguments":{"city":"Paris"}}}]}}`+"\n")
		case "/v1/chat/completions":
			_, _ = io.WriteString(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"qwen3",
				"choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":"",
				"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]}}],
				"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, func(path string) map[string]any {
		mu.Lock()
		defer mu.Unlock()
		return got[path]
	}
}

// TestOllamaNativeClientDropsTools checks the package doc's Ollama note ("Provider clients") against
// langchaingo's real clients: the native ollama client sends no "tools" and
// drops the tool_calls of the answer, leaving an empty response, which
// ToolArgValidation reports; the openai client against Ollama's /v1 sends
// the tools and returns the call.
func TestOllamaNativeClientDropsTools(t *testing.T) {
	t.Parallel()
	srv, request := ollamaServer(t)
	native, err := ollama.New(ollama.WithServerURL(srv.URL), ollama.WithModel("qwen3"))
	if err != nil {
		t.Fatal(err)
	}
	compat, err := openai.New(openai.WithBaseURL(srv.URL+"/v1"), openai.WithToken("ollama"), openai.WithModel("qwen3"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		model     llms.Model
		path      string
		wantCalls int
	}{
		{"native ollama client", native, "/api/chat", 0},
		{"openai client against /v1", compat, "/v1/chat/completions", 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{}
			resp, err := middleware.Wrap(tc.model, middleware.ToolArgValidation(guard.WithEventHandler(rec.handle))).
				GenerateContent(context.Background(), question, llms.WithTools([]llms.Tool{weatherTool}))
			if err != nil {
				t.Fatalf("GenerateContent = %v", err)
			}
			_, sentTools := request(tc.path)["tools"]
			if sentTools != (tc.wantCalls > 0) {
				t.Errorf("request to %s has tools: %v, want %v", tc.path, sentTools, tc.wantCalls > 0)
			}
			calls := 0
			for _, c := range resp.Choices {
				calls += len(c.ToolCalls)
			}
			if calls != tc.wantCalls {
				t.Errorf("response has %d tool calls, want %d", calls, tc.wantCalls)
			}
			if _, got := rec.find(guard.EventEmptyResponse); got != (tc.wantCalls == 0) {
				t.Errorf("events = %v, want EventEmptyResponse: %v", rec.all(), tc.wantCalls == 0)
			}
		})
	}
}
