package sdktest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/ollama/ollama/api"
	"github.com/tmc/langchaingo/llms"
	lcollama "github.com/tmc/langchaingo/llms/ollama"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/httpguard"
)

// ollamaReply is one answer of the loopback Ollama: text, and tool calls
// (raw ToolCall objects as Ollama sends them: arguments an object).
type ollamaReply struct {
	text  string
	calls []string
}

// ollamaServer is a loopback server speaking Ollama's native /api/chat:
// the i-th request gets replies[i] (the last one again past the end), as
// one ChatResponse when the request says "stream": false, else as NDJSON
// lines (text in two lines, each call on a line of its own, then the done
// line), as Ollama answers. It records every request body.
type ollamaServer struct {
	*httptest.Server
	replies []ollamaReply
	mu      sync.Mutex
	bodies  []string
}

func newOllamaServer(t *testing.T, replies ...ollamaReply) *ollamaServer {
	s := &ollamaServer{replies: replies}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *ollamaServer) received() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.bodies...)
}

func (s *ollamaServer) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/api/chat" {
		http.Error(w, `{"error":"not found"}`, http.StatusNotFound)
		return
	}
	b, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	n := len(s.bodies)
	s.bodies = append(s.bodies, string(b))
	s.mu.Unlock()
	reply := s.replies[min(n, len(s.replies)-1)]
	var req struct {
		Model  string `json:"model"`
		Stream *bool  `json:"stream"`
	}
	_ = json.Unmarshal(b, &req)
	head := `{"model":` + mustJSON(req.Model) + `,"created_at":"2025-07-07T20:43:37.688511Z",`
	final := `"done":true,"done_reason":"stop","total_duration":890771750,"prompt_eval_count":94,"eval_count":11}`
	if req.Stream != nil && !*req.Stream {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		msg := `{"role":"assistant","content":` + mustJSON(reply.text)
		if len(reply.calls) > 0 {
			msg += `,"tool_calls":[` + strings.Join(reply.calls, ",") + `]`
		}
		_, _ = io.WriteString(w, head+`"message":`+msg+`},`+final)
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	line := func(msg string) {
		_, _ = io.WriteString(w, head+`"message":`+msg+`,"done":false}`+"\n")
		w.(http.Flusher).Flush()
	}
	if reply.text != "" {
		half := len(reply.text) / 2
		line(`{"role":"assistant","content":` + mustJSON(reply.text[:half]) + `}`)
		line(`{"role":"assistant","content":` + mustJSON(reply.text[half:]) + `}`)
	}
	for _, c := range reply.calls {
		line(`{"role":"assistant","content":"","tool_calls":[` + c + `]}`)
	}
	_, _ = io.WriteString(w, head+`"message":{"role":"assistant","content":""},`+final+"\n")
}

// ollamaTee is a RoundTripper that keeps a copy of the response body the
// client reads through it, and its Content-Type.
type ollamaTee struct {
	next        http.RoundTripper
	body        bytes.Buffer
	contentType string
}

func (b *ollamaTee) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := b.next.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	b.contentType = resp.Header.Get("Content-Type")
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.TeeReader(resp.Body, &b.body), resp.Body}
	return resp, nil
}

func ollamaWeatherTool() api.Tool {
	var t api.Tool
	if err := json.Unmarshal([]byte(`{"type":"function","function":{"name":"get_weather","description":"Get the weather in a city","parameters":`+
		weatherSchema+`}}`), &t); err != nil {
		panic(err)
	}
	return t
}

// The real ollama/api client through httpguard, sync (Stream false) and
// streamed (Stream unset: Ollama's default): a bad call is re-asked in
// Ollama's shape, and Chat's callback reads only the corrected call, with
// its arguments as ToolCallFunctionArguments.
func TestOllamaAPIClientBadThenGood(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stream *bool
	}{{"sync", new(bool)}, {"stream", nil}} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newOllamaServer(t,
				ollamaReply{"Let me check.", []string{`{"id":"call_bad1","function":{"index":0,"name":"get_weather","arguments":{"city":42}}}`}},
				ollamaReply{"Sorry.", []string{`{"id":"call_good","function":{"index":0,"name":"get_weather","arguments":{"city":"Paris"}}}`}})
			base, _ := url.Parse(srv.URL)
			var events []string
			tr := httpguard.New(nil, httpguard.ToolArgValidation(guard.WithEventHandler(func(_ context.Context, e guard.Event) {
				events = append(events, string(e.Kind))
			})))
			wire := &ollamaTee{next: tr}
			client := api.NewClient(base, &http.Client{Transport: wire})
			var content strings.Builder
			var calls []api.ToolCall
			var last api.ChatResponse
			err := client.Chat(context.Background(), &api.ChatRequest{
				Model:    "llama3.2",
				Messages: []api.Message{{Role: "user", Content: "Weather in Paris?"}},
				Tools:    api.Tools{ollamaWeatherTool()},
				Stream:   tc.stream,
			}, func(r api.ChatResponse) error {
				content.WriteString(r.Message.Content)
				calls = append(calls, r.Message.ToolCalls...)
				last = r
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			got := srv.received()
			for i, b := range got {
				t.Logf("the server received request %d: %s", i+1, b)
			}
			t.Logf("the client's bytes (%s):\n%s", wire.contentType, wire.body.String())
			t.Logf("the client read: content %q, tool calls %s, done %v (%s), prompt_eval_count %d, eval_count %d",
				content.String(), mustJSON(calls), last.Done, last.DoneReason, last.PromptEvalCount, last.EvalCount)
			if len(calls) != 1 || calls[0].ID != "call_good" || calls[0].Function.Name != "get_weather" {
				t.Fatalf("the client read the calls %s, want call_good", mustJSON(calls))
			}
			if city, _ := calls[0].Function.Arguments.Get("city"); city != "Paris" {
				t.Errorf("the client read city %v, want Paris", city)
			}
			if !last.Done || last.DoneReason != "stop" || last.EvalCount != 11 {
				t.Errorf("the client's last response %+v, want done with its counts", last)
			}
			if tc.stream == nil && content.String() != "Let me check." {
				t.Errorf("the client read the text %q, want the first attempt's once", content.String())
			}
			if len(got) != 2 {
				t.Fatalf("the server received %d requests, want 2", len(got))
			}
			var reask struct {
				Messages []map[string]any `json:"messages"`
				Tools    []any            `json:"tools"`
			}
			if err := json.Unmarshal([]byte(got[1]), &reask); err != nil || len(reask.Messages) != 3 || len(reask.Tools) != 1 {
				t.Fatalf("the re-ask: %v\n%s", err, got[1])
			}
			tool := reask.Messages[2]
			if reask.Messages[1]["role"] != "assistant" || tool["role"] != "tool" || tool["tool_name"] != "get_weather" ||
				tool["tool_call_id"] != "call_bad1" || !strings.Contains(tool["content"].(string), "/city") {
				t.Errorf("the re-ask's turn and tool message: %v, %v", reask.Messages[1], tool)
			}
			if len(events) < 2 || events[0] != string(guard.EventInvalid) {
				t.Errorf("events %v, want invalid, reask", events)
			}
		})
	}
}

// Failing closed, the ollama/api client surfaces the guard's refusal as
// its api.StatusError: status 422, the type leading the message.
func TestOllamaAPIClientFailClosed(t *testing.T) {
	srv := newOllamaServer(t, ollamaReply{"", []string{`{"id":"call_1","function":{"index":0,"name":"get_weather","arguments":{"city":42}}}`}})
	base, _ := url.Parse(srv.URL)
	client := api.NewClient(base, &http.Client{Transport: httpguard.New(nil, httpguard.ToolArgValidation(guard.WithMaxRetries(1), guard.WithFailClosed()))})
	stream := false
	err := client.Chat(context.Background(), &api.ChatRequest{Model: "llama3.2", Stream: &stream,
		Messages: []api.Message{{Role: "user", Content: "Weather in Paris?"}}, Tools: api.Tools{ollamaWeatherTool()}},
		func(api.ChatResponse) error { return nil })
	var se api.StatusError
	if !errors.As(err, &se) || se.StatusCode != http.StatusUnprocessableEntity || !strings.HasPrefix(se.ErrorMessage, "invalid_tool_calls: ") {
		t.Fatalf("Chat = %v, want an api.StatusError 422 invalid_tool_calls", err)
	}
	t.Logf("the client's error: %v", err)
}

// langchaingo's native ollama client (llms/ollama, v0.1.14) sends no tools
// and reads no tool calls: GenerateContent with llms.WithTools sends a
// request without "tools", so httpguard has nothing to guard, and passes
// the exchange through as it came, sync and streamed. Its sync call leaves
// "stream" out (a false with omitempty), so Ollama streams it anyway, and
// the client reads the stream. Tool calling with langchaingo and Ollama
// goes through langchaingo's openai client and Ollama's /v1 endpoint,
// which httpguard guards as Chat Completions.
func TestOllamaLangchaingoClient(t *testing.T) {
	for _, streamed := range []bool{false, true} {
		srv := newOllamaServer(t, ollamaReply{"It is sunny in Paris.", nil})
		llm, err := lcollama.New(lcollama.WithServerURL(srv.URL), lcollama.WithModel("llama3.2"),
			lcollama.WithHTTPClient(&http.Client{Transport: httpguard.New(nil, httpguard.ToolArgValidation())}))
		if err != nil {
			t.Fatal(err)
		}
		opts := []llms.CallOption{llms.WithTools([]llms.Tool{{Type: "function", Function: &llms.FunctionDefinition{
			Name: "get_weather", Description: "Get the weather in a city", Parameters: weatherParams()}}})}
		var chunks []string
		if streamed {
			opts = append(opts, llms.WithStreamingFunc(func(_ context.Context, b []byte) error {
				chunks = append(chunks, string(b))
				return nil
			}))
		}
		resp, err := llm.GenerateContent(context.Background(),
			[]llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "Weather in Paris?")}, opts...)
		if err != nil {
			t.Fatal(err)
		}
		got := srv.received()
		t.Logf("streamed %v: the server received %s; the client read %q", streamed, got, resp.Choices[0].Content)
		if len(got) != 1 || strings.Contains(got[0], `"tools"`) {
			t.Errorf("the server received %q, want one request without tools", got)
		}
		if strings.Contains(got[0], `"stream":false`) {
			t.Errorf("langchaingo's sync request says stream false: %s", got[0])
		}
		if resp.Choices[0].Content != "It is sunny in Paris." || len(resp.Choices[0].ToolCalls) != 0 {
			t.Errorf("the client read %+v", resp.Choices[0])
		}
		if streamed && strings.Join(chunks, "") != "It is sunny in Paris." {
			t.Errorf("the streaming func read %q", chunks)
		}
	}
}
