package middleware_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/cenkalti/backoff/v4"
	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/anthropic"
	"github.com/tmc/langchaingo/llms/ollama"
	"github.com/tmc/langchaingo/llms/openai"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/retry"
	"github.com/toolguard/toolguard/strip"
)

// reply is one scripted HTTP answer of a streaming loopback provider.
type reply struct {
	status int
	ctype  string
	body   string
	cut    bool // break the connection after the body, mid-stream
}

// streamServer answers each request with the next reply, whole, and keeps
// the request bodies.
type streamServer struct {
	mu      sync.Mutex
	replies []reply
	got     []map[string]any
}

func (s *streamServer) serve(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req map[string]any
		_ = json.Unmarshal(body, &req)
		s.mu.Lock()
		defer s.mu.Unlock()
		s.got = append(s.got, req)
		if len(s.replies) == 0 {
			http.Error(w, `{"error": "script exhausted"}`, http.StatusInternalServerError)
			return
		}
		rp := s.replies[0]
		s.replies = s.replies[1:]
		w.Header().Set("Content-Type", rp.ctype)
		w.WriteHeader(rp.status)
		io.WriteString(w, rp.body)
		if rp.cut {
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler) // the connection drops mid-stream
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func (s *streamServer) requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.got)
}

// The wire formats. Each builder returns one whole streamed answer.

func sse(events ...string) reply {
	return reply{status: http.StatusOK, ctype: "text/event-stream", body: strings.Join(events, "")}
}

// oaiDelta is one OpenAI chat.completion.chunk with the given delta.
func oaiDelta(delta, finish string) string {
	f := "null"
	if finish != "" {
		f = `"` + finish + `"`
	}
	return `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-test","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + f + "}]}\n\n"
}

// oaiAnswer streams text (if any) then one tool call (if name is set)
// whose arguments arrive in two deltas, as OpenAI sends them.
func oaiAnswer(text, id, name, args string) reply {
	if name == "" {
		return oaiCalls(text)
	}
	return oaiCalls(text, oaiCall{id, name, args})
}

type oaiCall struct{ id, name, args string }

// oaiCalls streams text (if any) then each call, its arguments in a second
// delta.
func oaiCalls(text string, calls ...oaiCall) reply {
	events := []string{oaiDelta(`{"role":"assistant","content":""}`, "")}
	if text != "" {
		events = append(events, oaiDelta(`{"content":`+jsonString(text)+`}`, ""))
	}
	finish := "stop"
	for i, c := range calls {
		finish = "tool_calls"
		idx := fmt.Sprint(i)
		events = append(events,
			oaiDelta(`{"tool_calls":[{"index":`+idx+`,"id":"`+c.id+`","type":"function","function":{"name":"`+c.name+`","arguments":""}}]}`, ""),
			oaiDelta(`{"tool_calls":[{"index":`+idx+`,"function":{"arguments":`+jsonString(c.args)+`}}]}`, ""))
	}
	events = append(events, oaiDelta(`{}`, finish),
		`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-test","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`+"\n\n",
		"data: [DONE]\n\n")
	return sse(events...)
}

func antEvent(typ, data string) string {
	return "event: " + typ + "\ndata: " + data + "\n\n"
}

const antStart = `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-test","content":[],"usage":{"input_tokens":1,"output_tokens":1}}}`

// antAnswer streams a text block (if any) then a tool_use block (if name
// is set) whose input arrives as input_json_delta, as Anthropic sends them.
func antAnswer(text, id, name, input string) reply {
	events := []string{antEvent("message_start", antStart)}
	idx, stop := 0, "end_turn"
	if text != "" {
		events = append(events,
			antEvent("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`),
			antEvent("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":`+jsonString(text)+`}}`),
			antEvent("content_block_stop", `{"type":"content_block_stop","index":0}`))
		idx++
	}
	if name != "" {
		stop = "tool_use"
		i := fmt.Sprint(idx)
		events = append(events,
			antEvent("content_block_start", `{"type":"content_block_start","index":`+i+`,"content_block":{"type":"tool_use","id":"`+id+`","name":"`+name+`","input":{}}}`),
			antEvent("content_block_delta", `{"type":"content_block_delta","index":`+i+`,"delta":{"type":"input_json_delta","partial_json":`+jsonString(input)+`}}`),
			antEvent("content_block_stop", `{"type":"content_block_stop","index":`+i+`}`))
	}
	events = append(events,
		antEvent("message_delta", `{"type":"message_delta","delta":{"stop_reason":"`+stop+`"},"usage":{"output_tokens":1}}`),
		antEvent("message_stop", `{"type":"message_stop"}`))
	return sse(events...)
}

// ollamaAnswer streams text as Ollama's NDJSON, one line per piece.
func ollamaAnswer(pieces ...string) reply {
	var b strings.Builder
	for _, p := range pieces {
		fmt.Fprintf(&b, `{"model":"llama-test","created_at":"2025-01-01T00:00:00Z","message":{"role":"assistant","content":%s},"done":false}`+"\n", jsonString(p))
	}
	b.WriteString(`{"model":"llama-test","created_at":"2025-01-01T00:00:00Z","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","eval_count":1,"prompt_eval_count":1}` + "\n")
	return reply{status: http.StatusOK, ctype: "application/x-ndjson", body: b.String()}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// tape records what a streaming caller sees: every chunk its
// llms.WithStreamingFunc receives, as is, and the resets the context's
// observer announces, as "<reask>" and "<retry>".
type tape struct {
	mu  sync.Mutex
	seq []string
}

func (tp *tape) add(s string) {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	tp.seq = append(tp.seq, s)
}

func (tp *tape) chunk(_ context.Context, c []byte) error {
	tp.add(string(c))
	return nil
}

func (tp *tape) observe(ctx context.Context) context.Context {
	return guard.WithObserver(ctx, guard.ObserverFunc(func(_ context.Context, e guard.Event) {
		if e.Kind == guard.EventReask || e.Kind == guard.EventRetry {
			tp.add("<" + string(e.Kind) + ">")
		}
	}))
}

func (tp *tape) all() []string {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	return slices.Clone(tp.seq)
}

// streamCase is one streamed model call through a real provider client.
type streamCase struct {
	name     string
	replies  []reply
	mws      []middleware.Middleware
	want     []string // the exact chunk sequence, resets included
	text     string   // the final response's text (all choices joined)
	call     string   // the final response's tool call, "name args", or ""
	requests int
}

// newStreamClient builds a langchaingo provider client against base.
type newStreamClient func(t *testing.T, base string) llms.Model

func openaiClient(t *testing.T, base string) llms.Model {
	llm, err := openai.New(openai.WithToken("test"), openai.WithBaseURL(base), openai.WithModel("gpt-test"))
	if err != nil {
		t.Fatal(err)
	}
	return llm
}

func anthropicClient(t *testing.T, base string) llms.Model {
	llm, err := anthropic.New(anthropic.WithToken("test"), anthropic.WithBaseURL(base), anthropic.WithModel("claude-test"))
	if err != nil {
		t.Fatal(err)
	}
	return llm
}

func ollamaClient(t *testing.T, base string) llms.Model {
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	llm, err := ollama.New(ollama.WithServerURL(u.String()), ollama.WithModel("llama-test"))
	if err != nil {
		t.Fatal(err)
	}
	return llm
}

func runStreamCases(t *testing.T, client newStreamClient, cases []streamCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := &streamServer{replies: tc.replies}
			llm := middleware.Wrap(client(t, srv.serve(t)), tc.mws...)
			var tp tape
			resp, err := llm.GenerateContent(tp.observe(context.Background()), question,
				llms.WithTools([]llms.Tool{weatherTool}), llms.WithStreamingFunc(tp.chunk))
			if err != nil {
				t.Fatalf("GenerateContent: %v", err)
			}
			if got := tp.all(); !slices.Equal(got, tc.want) {
				t.Errorf("streamed chunks =\n%s\nwant\n%s", quoteAll(got), quoteAll(tc.want))
			}
			var text []string
			call := ""
			for _, ch := range resp.Choices {
				if ch.Content != "" {
					text = append(text, ch.Content)
				}
				for _, tc := range ch.ToolCalls {
					call = tc.FunctionCall.Name + " " + tc.FunctionCall.Arguments
				}
			}
			if got := strings.Join(text, ""); got != tc.text {
				t.Errorf("final text = %q, want %q", got, tc.text)
			}
			if call != tc.call {
				t.Errorf("final tool call = %q, want %q", call, tc.call)
			}
			if n := srv.requests(); n != tc.requests {
				t.Errorf("provider got %d requests, want %d", n, tc.requests)
			}
		})
	}
}

func quoteAll(seq []string) string {
	q := make([]string, len(seq))
	for i, s := range seq {
		q[i] = fmt.Sprintf("  %q", s)
	}
	return strings.Join(q, "\n")
}

func noWait() guard.RetryOption {
	return guard.WithBackOff(func() backoff.BackOff { return &backoff.ZeroBackOff{} })
}

// TestStreamingThroughOpenAIProvider drives langchaingo's OpenAI client in
// streaming mode against a loopback SSE server. The client streams text
// deltas as they are and tool-call deltas as JSON arrays; the caller gets
// the text at once, the reset before a re-ask, and only the accepted,
// stripped tool call, whole.
func TestStreamingThroughOpenAIProvider(t *testing.T) {
	t.Parallel()
	runStreamCases(t, openaiClient, []streamCase{
		{
			name: "re-ask",
			replies: []reply{
				oaiAnswer("Let me check.", "call_1", "get_weather", `{"city": 75001}`),
				oaiAnswer("Let me check.", "call_2", "get_weather", `{"city": "Paris"}`),
			},
			mws: []middleware.Middleware{middleware.ToolArgValidation()},
			want: []string{"", "Let me check.", "", "<reask>", "", "Let me check.", "",
				`[{"id":"call_2","type":"function","function":{"name":"get_weather","arguments":"{\"city\": \"Paris\"}"}}]`},
			text: "Let me check.", call: `get_weather {"city": "Paris"}`, requests: 2,
		},
		{
			name:    "stripped null",
			replies: []reply{oaiAnswer("", "call_1", "get_weather", `{"city": "Paris", "days": null}`)},
			mws:     []middleware.Middleware{middleware.ToolArgValidation(guard.WithStripEmpty(strip.Recursive))},
			want: []string{"", "",
				`[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]`},
			call: `get_weather {"city":"Paris"}`, requests: 1,
		},
		{
			name:     "text only",
			replies:  []reply{oaiAnswer("It is sunny.", "", "", "")},
			mws:      []middleware.Middleware{middleware.ToolArgValidation()},
			want:     []string{"", "It is sunny.", ""},
			text:     "It is sunny.",
			requests: 1,
		},
		{
			name: "ToolCallLimit blocks, re-asks, lets the next through",
			replies: []reply{
				oaiCalls("Two at once.", oaiCall{"call_1", "get_weather", `{"city": "Paris"}`}, oaiCall{"call_2", "get_weather", `{"city": "Rome"}`}),
				oaiCalls("One then.", oaiCall{"call_3", "get_weather", `{"city": "Paris"}`}),
			},
			mws: []middleware.Middleware{middleware.ToolCallLimit(guard.WithRunLimit(1)), middleware.ToolArgValidation()},
			want: []string{"", "Two at once.", "", "<reask>", "", "One then.", "",
				`[{"id":"call_3","type":"function","function":{"name":"get_weather","arguments":"{\"city\": \"Paris\"}"}}]`},
			text: "One then.", call: `get_weather {"city": "Paris"}`, requests: 2,
		},
		{
			name: "ToolCallLimit ends: no tool call streamed",
			replies: []reply{
				oaiCalls("Two at once.", oaiCall{"call_1", "get_weather", `{"city": "Paris"}`}, oaiCall{"call_2", "get_weather", `{"city": "Rome"}`}),
			},
			mws:  []middleware.Middleware{middleware.ToolCallLimit(guard.WithRunLimit(1), guard.WithExitBehavior(guard.ExitEnd)), middleware.ToolArgValidation()},
			want: []string{"", "Two at once.", ""},
			text: "Tool call limit reached: run limit exceeded (0/1 calls).", requests: 1,
		},
		{
			name: "503 then a stream, under ModelRetry",
			replies: []reply{
				{status: http.StatusServiceUnavailable, ctype: "application/json", body: `{"error":{"message":"The engine is currently overloaded, please try again later","type":"server_error"}}`},
				oaiAnswer("Let me check.", "call_1", "get_weather", `{"city": "Paris"}`),
			},
			mws: []middleware.Middleware{middleware.ToolArgValidation(), middleware.ModelRetry(noWait())},
			want: []string{"<retry>", "", "Let me check.", "",
				`[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\": \"Paris\"}"}}]`},
			text: "Let me check.", call: `get_weather {"city": "Paris"}`, requests: 2,
		},
	})
}

// cutAfter is the start of answer r, up to and including its n-th event,
// on a connection that then drops.
func cutAfter(r reply, n int) reply {
	events := strings.SplitAfter(r.body, "\n\n")
	r.body, r.cut = strings.Join(events[:n], ""), true
	return r
}

// TestStreamingBrokenMidStreamUnderModelRetry: a connection that drops
// mid-stream is retried when only held tool-call chunks were streamed
// (they never reached the caller), and not once text has reached it.
func TestStreamingBrokenMidStreamUnderModelRetry(t *testing.T) {
	t.Parallel()
	t.Run("retried", func(t *testing.T) {
		t.Parallel()
		runStreamCases(t, openaiClient, []streamCase{{
			name: "after tool-call deltas only",
			replies: []reply{
				cutAfter(oaiAnswer("", "call_1", "get_weather", `{"city": "Paris"}`), 3),
				oaiAnswer("", "call_2", "get_weather", `{"city": "Paris"}`),
			},
			mws: []middleware.Middleware{middleware.ToolArgValidation(), middleware.ModelRetry(noWait())},
			want: []string{"", "<retry>", "", "",
				`[{"id":"call_2","type":"function","function":{"name":"get_weather","arguments":"{\"city\": \"Paris\"}"}}]`},
			call: `get_weather {"city": "Paris"}`, requests: 2,
		}})
	})
	t.Run("not retried after text", func(t *testing.T) {
		t.Parallel()
		srv := &streamServer{replies: []reply{cutAfter(oaiAnswer("Let me check.", "call_1", "get_weather", `{"city": "Paris"}`), 3)}}
		llm := middleware.Wrap(openaiClient(t, srv.serve(t)), middleware.ToolArgValidation(), middleware.ModelRetry(noWait()))
		var tp tape
		_, err := llm.GenerateContent(tp.observe(context.Background()), question,
			llms.WithTools([]llms.Tool{weatherTool}), llms.WithStreamingFunc(tp.chunk))
		var rerr *retry.Error
		if !errors.As(err, &rerr) || rerr.Attempts != 1 {
			t.Errorf("GenerateContent() error = %v, want a *retry.Error after 1 attempt", err)
		}
		if got, want := tp.all(), []string{"", "Let me check."}; !slices.Equal(got, want) {
			t.Errorf("streamed chunks = %q, want %q", got, want)
		}
	})
}

// TestStreamingThroughAnthropicProvider: langchaingo's Anthropic client
// streams text deltas only (tool input arrives as input_json_delta, which
// it never streams), so the caller gets the text at once, the reset before
// a re-ask, and the tool calls in the response only.
func TestStreamingThroughAnthropicProvider(t *testing.T) {
	t.Parallel()
	runStreamCases(t, anthropicClient, []streamCase{
		{
			name: "re-ask",
			replies: []reply{
				antAnswer("Let me check.", "toolu_1", "get_weather", `{"city": 75001}`),
				antAnswer("Checking again.", "toolu_2", "get_weather", `{"city": "Paris"}`),
			},
			mws:  []middleware.Middleware{middleware.ToolArgValidation()},
			want: []string{"Let me check.", "<reask>", "Checking again."},
			text: "Checking again.", call: `get_weather {"city":"Paris"}`, requests: 2,
		},
		{
			name:    "stripped null",
			replies: []reply{antAnswer("", "toolu_1", "get_weather", `{"city": "Paris", "days": null}`)},
			mws:     []middleware.Middleware{middleware.ToolArgValidation(guard.WithStripEmpty(strip.Recursive))},
			want:    nil,
			call:    `get_weather {"city":"Paris"}`, requests: 1,
		},
		{
			name:     "text only",
			replies:  []reply{antAnswer("It is sunny.", "", "", "")},
			mws:      []middleware.Middleware{middleware.ToolArgValidation()},
			want:     []string{"It is sunny."},
			text:     "It is sunny.",
			requests: 1,
		},
		{
			name: "overloaded error event mid-stream, under ModelRetry",
			replies: []reply{
				sse(antEvent("message_start", antStart),
					antEvent("error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)),
				antAnswer("It is sunny.", "", "", ""),
			},
			mws:  []middleware.Middleware{middleware.ToolArgValidation(), middleware.ModelRetry(noWait())},
			want: []string{"<retry>", "It is sunny."},
			text: "It is sunny.", requests: 2,
		},
		{
			name: "503 then a stream, under ModelRetry",
			replies: []reply{
				{status: http.StatusServiceUnavailable, ctype: "application/json", body: `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`},
				antAnswer("It is sunny.", "", "", ""),
			},
			mws:  []middleware.Middleware{middleware.ToolArgValidation(), middleware.ModelRetry(noWait())},
			want: []string{"<retry>", "It is sunny."},
			text: "It is sunny.", requests: 2,
		},
	})
}

// TestStreamingThroughOllamaProvider: langchaingo v0.1.14's Ollama client
// streams message content only and returns no tool calls at all, so
// ToolArgValidation has nothing to hold or re-ask: text passes at once.
func TestStreamingThroughOllamaProvider(t *testing.T) {
	t.Parallel()
	runStreamCases(t, ollamaClient, []streamCase{
		{
			name:     "text only",
			replies:  []reply{ollamaAnswer("It is ", "sunny.")},
			mws:      []middleware.Middleware{middleware.ToolArgValidation()},
			want:     []string{"It is ", "sunny.", ""},
			text:     "It is sunny.",
			requests: 1,
		},
		{
			name: "503 then a stream, under ModelRetry",
			replies: []reply{
				{status: http.StatusServiceUnavailable, ctype: "application/json", body: `{}`},
				ollamaAnswer("It is ", "sunny."),
			},
			mws:  []middleware.Middleware{middleware.ToolArgValidation(), middleware.ModelRetry(noWait())},
			want: []string{"<retry>", "It is ", "sunny.", ""},
			text: "It is sunny.", requests: 2,
		},
	})
}
