package middleware_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/anthropic"
	"github.com/tmc/langchaingo/llms/openai"
	"github.com/toolguard/toolguard/middleware"
)

// provider is a loopback server that answers with canned bodies, in order,
// and keeps the request bodies it got.
type provider struct {
	mu      sync.Mutex
	answers []string
	got     []map[string]any
}

func (p *provider) serve(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req map[string]any
		if err := json.Unmarshal(body, &req); err != nil {
			t.Errorf("request body is not JSON: %v", err)
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		p.got = append(p.got, req)
		if len(p.answers) == 0 {
			http.Error(w, `{"error": "script exhausted"}`, http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, p.answers[0])
		p.answers = p.answers[1:]
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestReaskThroughAnthropicProvider sends a re-ask through langchaingo's own
// Anthropic provider to a loopback server. Anthropic answers with a text
// block and a tool_use block; the re-ask must carry the tool_use (the
// provider reads only the first part of an AI message) followed by its
// tool_result, or the real API answers 400.
func TestReaskThroughAnthropicProvider(t *testing.T) {
	t.Parallel()
	p := &provider{answers: []string{
		`{"id":"msg_1","type":"message","role":"assistant","model":"claude-test","stop_reason":"tool_use",
		  "usage":{"input_tokens":1,"output_tokens":1},
		  "content":[{"type":"text","text":"Let me check."},
		             {"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":42}}]}`,
		`{"id":"msg_2","type":"message","role":"assistant","model":"claude-test","stop_reason":"tool_use",
		  "usage":{"input_tokens":1,"output_tokens":1},
		  "content":[{"type":"tool_use","id":"toolu_2","name":"get_weather","input":{"city":"Paris"}}]}`,
	}}
	srv := p.serve(t)
	llm, err := anthropic.New(anthropic.WithToken("test"), anthropic.WithBaseURL(srv.URL), anthropic.WithModel("claude-test"))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := middleware.Wrap(llm, middleware.ToolArgValidation()).GenerateContent(context.Background(),
		[]llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "Weather in Paris?")},
		llms.WithTools([]llms.Tool{weatherTool}))
	if err != nil {
		t.Fatalf("re-ask through the Anthropic provider: %v", err)
	}
	if len(p.got) != 2 {
		t.Fatalf("provider got %d requests, want 2", len(p.got))
	}
	var call *llms.ToolCall
	for _, ch := range resp.Choices {
		for i := range ch.ToolCalls {
			call = &ch.ToolCalls[i]
		}
	}
	if call == nil || call.FunctionCall.Arguments != `{"city":"Paris"}` {
		t.Errorf("final tool call = %+v, want the corrected one", call)
	}

	msgs := p.got[1]["messages"].([]any)
	var toolUse, toolResult bool
	for _, m := range msgs {
		for _, c := range m.(map[string]any)["content"].([]any) {
			block := c.(map[string]any)
			switch block["type"] {
			case "tool_use":
				toolUse = toolUse || block["id"] == "toolu_1"
			case "tool_result":
				toolResult = toolUse && block["tool_use_id"] == "toolu_1" &&
					strings.Contains(block["content"].(string), "/city: expected string, got 42")
			}
		}
	}
	if !toolUse || !toolResult {
		b, _ := json.MarshalIndent(msgs, "", "  ")
		t.Errorf("re-ask sent to Anthropic lacks tool_use toolu_1 followed by its tool_result with the feedback:\n%s", b)
	}
}

// TestReaskThroughOpenAIProvider does the same through langchaingo's OpenAI
// provider, with arguments that are not JSON: the replayed assistant
// message carries {} and the tool message the feedback.
func TestReaskThroughOpenAIProvider(t *testing.T) {
	t.Parallel()
	completion := func(id, args string) string {
		b, _ := json.Marshal(args)
		return `{"id":"c","object":"chat.completion","created":1,"model":"gpt-test",
		  "usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2},
		  "choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":"",
		    "tool_calls":[{"id":"` + id + `","type":"function","function":{"name":"get_weather","arguments":` + string(b) + `}}]}}]}`
	}
	p := &provider{answers: []string{completion("call_a", `{"city": "Par`), completion("call_b", `{"city": "Paris"}`)}}
	srv := p.serve(t)
	llm, err := openai.New(openai.WithToken("test"), openai.WithBaseURL(srv.URL), openai.WithModel("gpt-test"))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := middleware.Wrap(llm, middleware.ToolArgValidation()).GenerateContent(context.Background(),
		[]llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "Weather in Paris?")},
		llms.WithTools([]llms.Tool{weatherTool}))
	if err != nil {
		t.Fatalf("re-ask through the OpenAI provider: %v", err)
	}
	if got := resp.Choices[0].ToolCalls[0].FunctionCall.Arguments; got != `{"city": "Paris"}` {
		t.Errorf("final arguments = %s, want the corrected call", got)
	}
	msgs := p.got[1]["messages"].([]any)
	assistant := msgs[1].(map[string]any)
	tool := msgs[2].(map[string]any)
	calls, _ := assistant["tool_calls"].([]any)
	if len(calls) != 1 || calls[0].(map[string]any)["id"] != "call_a" ||
		calls[0].(map[string]any)["function"].(map[string]any)["arguments"] != "{}" {
		t.Errorf("replayed assistant message = %v, want call_a with {} arguments", assistant)
	}
	if tool["role"] != "tool" || tool["tool_call_id"] != "call_a" ||
		!strings.Contains(tool["content"].(string), `arguments are not valid JSON: unexpected end of input`) ||
		!strings.Contains(tool["content"].(string), `got "{\"city\": \"Par"`) {
		t.Errorf("tool message = %v, want the feedback quoting the broken arguments", tool)
	}
}
