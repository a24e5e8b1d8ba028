package agent_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/tmc/langchaingo/llms/openai"
	"github.com/toolguard/toolguard/agent"
	"github.com/toolguard/toolguard/errfmt"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/validation"
)

// oaiServer is a loopback OpenAI chat-completions endpoint answering with
// canned completions, in order, and keeping the request bodies.
type oaiServer struct {
	mu      sync.Mutex
	answers []string
	got     []map[string]any
}

func (s *oaiServer) serve(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req map[string]any
		_ = json.Unmarshal(body, &req)
		s.mu.Lock()
		defer s.mu.Unlock()
		s.got = append(s.got, req)
		if len(s.answers) == 0 {
			http.Error(w, `{"error": "script exhausted"}`, http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, s.answers[0])
		s.answers = s.answers[1:]
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func oaiCompletion(message string) string {
	return `{"id":"c","object":"chat.completion","created":1,"model":"gpt-test",
	  "usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2},
	  "choices":[{"index":0,"finish_reason":"stop","message":` + message + `}]}`
}

func oaiToolCall(id, name, args string) string {
	b, _ := json.Marshal(args)
	return oaiCompletion(`{"role":"assistant","content":"","tool_calls":[{"id":"` + id + `","type":"function","function":{"name":"` + name + `","arguments":` + string(b) + `}}]}`)
}

func oaiText(text string) string {
	b, _ := json.Marshal(text)
	return oaiCompletion(`{"role":"assistant","content":` + string(b) + `}`)
}

// TestOutputThroughOpenAIProvider runs the agent on langchaingo's real
// OpenAI client against a loopback server: the answer tool is sent with
// the schema; a text answer and an invalid answer are asked again in
// messages the client accepts and the API would; the valid answer ends the
// run.
func TestOutputThroughOpenAIProvider(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		mws  []any
	}{
		{"agent's own check", nil},
		{"ToolArgValidation", []any{agent.WithMiddleware(middleware.ToolArgValidation())}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := &oaiServer{answers: []string{
				oaiText("It is spam."),
				oaiToolCall("call_a", agent.OutputToolName, badAnswer),
				oaiToolCall("call_b", agent.OutputToolName, `{"label": "spam", "score": 3}`),
			}}
			llm, err := openai.New(openai.WithToken("test"), openai.WithBaseURL(srv.serve(t)), openai.WithModel("gpt-test"))
			if err != nil {
				t.Fatal(err)
			}
			a := build(llm, nil, append(tc.mws, agent.WithOutputSchema(validation.Typed[Verdict]()))...)
			res, err := a.Run(context.Background(), "Classify: WIN A PRIZE")
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			v, err := agent.Output[Verdict](res)
			if err != nil || v != (Verdict{"spam", 3}) {
				t.Errorf("Output = %+v, %v", v, err)
			}
			srv.mu.Lock()
			defer srv.mu.Unlock()
			if len(srv.got) != 3 {
				t.Fatalf("the server got %d requests, want 3", len(srv.got))
			}
			tools, _ := srv.got[0]["tools"].([]any)
			fn, _ := tools[0].(map[string]any)["function"].(map[string]any)
			props, _ := fn["parameters"].(map[string]any)["properties"].(map[string]any)
			if fn["name"] != agent.OutputToolName || props["label"] == nil || props["score"] == nil {
				t.Errorf("tools sent = %v, want the answer tool with the schema", tools)
			}
			second := srv.got[1]["messages"].([]any)
			if last := second[len(second)-1].(map[string]any); last["role"] != "user" || last["content"] != errfmt.AnswerInText(agent.OutputToolName) {
				t.Errorf("second request ends with %v, want the request for a structured answer", last)
			}
			third := srv.got[2]["messages"].([]any)
			last := third[len(third)-1].(map[string]any)
			content, _ := last["content"].(string)
			if last["role"] != "tool" || last["tool_call_id"] != "call_a" || !strings.Contains(content, `Invalid arguments for tool "final_answer"`) {
				b, _ := json.Marshal(third)
				t.Errorf("third request = %s, want the feedback on call_a", b)
			}
		})
	}
}
