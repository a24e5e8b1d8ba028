package middleware_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/anthropic"
	"github.com/tmc/langchaingo/llms/ollama"
	"github.com/tmc/langchaingo/llms/openai"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/retry"
)

// httpReply is one scripted HTTP answer of a loopback provider.
type httpReply struct {
	status int // 0: close the connection without answering
	header map[string]string
	body   string
}

// scriptedServer answers each request with the next reply and counts them.
func scriptedServer(t *testing.T, replies ...httpReply) (*httptest.Server, func() int) {
	t.Helper()
	var mu sync.Mutex
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		defer mu.Unlock()
		if n >= len(replies) {
			http.Error(w, `{"error":{"message":"script exhausted"}}`, http.StatusBadRequest)
			return
		}
		rep := replies[n]
		n++
		if rep.status == 0 { // drop the connection: a transport error, no response
			if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
				conn.Close()
			}
			return
		}
		for k, v := range rep.header {
			w.Header().Set(k, v)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rep.status)
		_, _ = io.WriteString(w, rep.body)
	}))
	t.Cleanup(srv.Close)
	return srv, func() int { mu.Lock(); defer mu.Unlock(); return n }
}

// The bodies carry no hint: only the headers say how long to wait.
const (
	openAI429 = `{"error":{"message":"Rate limit reached for requests","type":"requests","code":"rate_limit_exceeded"}}`
	openAIOK  = `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-test",
		"choices":[{"index":0,"message":{"role":"assistant","content":"Sunny."},"finish_reason":"stop"}],
		"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`
	anthropic429 = `{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}`
	anthropicOK  = `{"id":"msg_1","type":"message","role":"assistant","model":"claude-test","stop_reason":"end_turn",
		"usage":{"input_tokens":1,"output_tokens":1},"content":[{"type":"text","text":"Sunny."}]}`
	// Ollama answers an overloaded server with 503 and one NDJSON line.
	ollama503 = `{"error":"server busy, please try again.  maximum pending requests exceeded"}` + "\n"
	ollamaOK  = `{"model":"qwen3","created_at":"2026-11-24T05:00:00Z","done":true,"message":{"role":"assistant","content":"Sunny."}}` + "\n"
)

// providerClient builds a real langchaingo client against srv, with hc.
type providerClient func(t *testing.T, srv *httptest.Server, hc *http.Client) llms.Model

func hintedOpenAI(t *testing.T, srv *httptest.Server, hc *http.Client) llms.Model {
	t.Helper()
	opts := []openai.Option{openai.WithToken("test"), openai.WithBaseURL(srv.URL), openai.WithModel("gpt-test")}
	if hc != nil {
		opts = append(opts, openai.WithHTTPClient(hc))
	}
	llm, err := openai.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	return llm
}

func hintedOllama(t *testing.T, srv *httptest.Server, hc *http.Client) llms.Model {
	t.Helper()
	opts := []ollama.Option{ollama.WithServerURL(srv.URL), ollama.WithModel("qwen3")}
	if hc != nil {
		opts = append(opts, ollama.WithHTTPClient(hc))
	}
	llm, err := ollama.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	return llm
}

func hintedAnthropic(t *testing.T, srv *httptest.Server, hc *http.Client) llms.Model {
	t.Helper()
	opts := []anthropic.Option{anthropic.WithToken("test"), anthropic.WithBaseURL(srv.URL), anthropic.WithModel("claude-test")}
	if hc != nil {
		opts = append(opts, anthropic.WithHTTPClient(hc))
	}
	llm, err := anthropic.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	return llm
}

// recordWaits returns a ModelRetry sleep that records each wait and returns
// at once.
func recordWaits() (guard.RetryOption, func() []time.Duration) {
	var mu sync.Mutex
	var waits []time.Duration
	return guard.WithSleep(func(ctx context.Context, d time.Duration) error {
			mu.Lock()
			defer mu.Unlock()
			waits = append(waits, d)
			return ctx.Err()
		}), func() []time.Duration {
			mu.Lock()
			defer mu.Unlock()
			return append([]time.Duration(nil), waits...)
		}
}

// How ModelRetry reads a recorded header (past the deadline, per attempt)
// is tested in package guard; here, that langchaingo's real clients lose
// the header without retry.HTTPClient and keep it with it.

// TestRetryAfterHeaderThroughProviders sends a call through langchaingo's
// real OpenAI, Anthropic and Ollama clients to a loopback server that
// answers 429 (Ollama: 503) with a Retry-After header and a body without any
// hint, then 200. With
// retry.HTTPClient the wait ModelRetry chooses is the header's; without it
// the header is lost and the wait is the backoff's own (at most 1.25 s).
func TestRetryAfterHeaderThroughProviders(t *testing.T) {
	t.Parallel()
	providers := []struct {
		name      string
		client    providerClient
		status    int
		limit, ok string
	}{
		{"openai", hintedOpenAI, http.StatusTooManyRequests, openAI429, openAIOK},
		{"anthropic", hintedAnthropic, http.StatusTooManyRequests, anthropic429, anthropicOK},
		{"ollama", hintedOllama, http.StatusServiceUnavailable, ollama503, ollamaOK},
	}
	tests := []struct {
		name   string
		header map[string]string
		hinted bool // install retry.HTTPClient
		want   time.Duration
	}{
		{"Retry-After seconds", map[string]string{"Retry-After": "3"}, true, 3 * time.Second},
		{"retry-after-ms wins over Retry-After", map[string]string{"Retry-After": "3", "Retry-After-Ms": "2500"}, true, 2500 * time.Millisecond},
		{"Retry-After capped at the policy maximum", map[string]string{"Retry-After": "600"}, true, 60 * time.Second},
		{"without retry.HTTPClient the header is lost", map[string]string{"Retry-After": "3"}, false, 0},
	}
	for _, p := range providers {
		for _, tc := range tests {
			t.Run(p.name+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				srv, requests := scriptedServer(t,
					httpReply{status: p.status, header: tc.header, body: p.limit},
					httpReply{status: http.StatusOK, body: p.ok})
				var hc *http.Client
				if tc.hinted {
					hc = retry.HTTPClient(srv.Client())
				}
				sleep, waits := recordWaits()
				guarded := middleware.Wrap(p.client(t, srv, hc), middleware.ModelRetry(sleep))
				resp, err := guarded.GenerateContent(context.Background(),
					[]llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "Weather?")})
				if err != nil {
					t.Fatalf("GenerateContent = %v, want the answer after one retry", err)
				}
				if got := resp.Choices[0].Content; got != "Sunny." {
					t.Errorf("answer = %q, want %q", got, "Sunny.")
				}
				if n := requests(); n != 2 {
					t.Errorf("server got %d requests, want 2", n)
				}
				w := waits()
				if len(w) != 1 {
					t.Fatalf("ModelRetry waited %v, want one wait", w)
				}
				t.Logf("%s, %s: ModelRetry waited %v", p.name, tc.name, w[0])
				switch {
				case tc.want != 0 && w[0] != tc.want:
					t.Errorf("ModelRetry waited %v, want %v (the header's)", w[0], tc.want)
				case tc.want == 0 && (w[0] < 750*time.Millisecond || w[0] > 1250*time.Millisecond):
					t.Errorf("ModelRetry waited %v without the header, want the backoff's 1s ±25%%", w[0])
				}
			})
		}
	}
}
