package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// build is the command built once per test process (process_test.go).
var build struct {
	once sync.Once
	dir  string
	bin  string
	err  error
}

func TestMain(m *testing.M) {
	if log := os.Getenv(stdioServerEnv); log != "" {
		os.Exit(serveStdio(log)) // this process is the stdio server -stdio wraps
	}
	// go-redis logs each failed dial of a stopped server; the tests check
	// the errors themselves.
	redis.SetLogger(redisLogger{slog.New(slog.DiscardHandler)})
	code := m.Run()
	if build.dir != "" {
		os.RemoveAll(build.dir)
	}
	os.Exit(code)
}

// proxy is a proxy server running in-process on a loopback port.
type proxy struct {
	URL    string  // http://127.0.0.1:port
	Admin  string  // -admin-listen's http://127.0.0.1:port; "" without
	srv    *server // its server
	logs   *syncBuffer
	cancel context.CancelFunc // stops it, as SIGTERM does
	done   chan error         // serve's result
}

// startProxy starts the proxy with flags args and -upstream, on a
// loopback port, stopped gracefully when the test ends.
func startProxy(tb testing.TB, upstream string, args ...string) *proxy {
	tb.Helper()
	return startProxyTo(tb, nil, upstream, args...)
}

// startProxyTo is startProxy logging to w; nil: to the proxy's logs.
func startProxyTo(tb testing.TB, w io.Writer, upstream string, args ...string) *proxy {
	tb.Helper()
	return startProxyEnv(tb, noEnv, w, upstream, args...)
}

// startProxyEnv is startProxyTo with the environment env.
func startProxyEnv(tb testing.TB, env func(string) (string, bool), w io.Writer, upstream string, args ...string) *proxy {
	tb.Helper()
	args = append([]string{"-upstream", upstream}, args...)
	var out syncBuffer
	cfg, err := parseConfig(args, env, &out, &out)
	if err != nil {
		tb.Fatalf("parseConfig(%q) = %v\n%s", args, err, out.String())
	}
	logs := &syncBuffer{}
	if w == nil {
		w = logs
	}
	s, err := newServer(context.Background(), cfg, w)
	if err != nil {
		tb.Fatalf("newServer: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	var admin net.Listener
	adminURL := ""
	if cfg.adminListen != "" {
		if admin, err = net.Listen("tcp", cfg.adminListen); err != nil {
			tb.Fatal(err)
		}
		adminURL = "http://" + admin.Addr().String()
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.serve(ctx, ln, admin) }()
	tb.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			tb.Errorf("serve: %v", err)
		}
	})
	return &proxy{URL: "http://" + ln.Addr().String(), Admin: adminURL, srv: s, logs: logs, cancel: cancel, done: done}
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// logLines returns the JSON log lines whose msg is msg.
func (p *proxy) logLines(tb testing.TB, msg string) []map[string]any {
	tb.Helper()
	var out []map[string]any
	for line := range strings.Lines(p.logs.String()) {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			tb.Fatalf("log line is not JSON: %q: %v", line, err)
		}
		if m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

// waitLog waits until a log line with msg appears (the access log line is
// written after the response's last byte reached the client).
func (p *proxy) waitLog(tb testing.TB, msg string, n int) []map[string]any {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if lines := p.logLines(tb, msg); len(lines) >= n || time.Now().After(deadline) {
			return lines
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// The request bodies of the tests: a chat with a get_weather tool whose
// city must be a string.
const (
	weatherTools = `[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}}}]`
	chatBody     = `{"model":"gpt-4o","messages":[{"role":"user","content":"Weather in Paris?"}],"tools":` + weatherTools + `}`
	streamBody   = `{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"Weather in Paris?"}],"tools":` + weatherTools + `}`
)

// post sends body to url with headers (key, value pairs) and returns the
// response with its body read.
func post(tb testing.TB, url, body string, header ...string) (*http.Response, []byte) {
	tb.Helper()
	return postWithin(tb, 0, url, body, header...)
}

// postWithin is post failing the test when no whole answer comes within
// timeout (0: no limit).
func postWithin(tb testing.TB, timeout time.Duration, url, body string, header ...string) (*http.Response, []byte) {
	tb.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Add(header[i], header[i+1])
	}
	resp, err := (&http.Client{Timeout: timeout}).Do(req)
	if err != nil {
		tb.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatalf("POST %s: reading the body: %v", url, err)
	}
	return resp, b
}

// chatCompletion is what the tests read of a chat.completion.
type chatCompletion struct {
	ID      string `json:"id"`
	Choices []struct {
		Message struct {
			Content   *string        `json:"content"`
			ToolCalls []chatToolCall `json:"tool_calls"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
}

type chatToolCall struct {
	Index    int    `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

func decodeChat(tb testing.TB, b []byte) chatCompletion {
	tb.Helper()
	var c chatCompletion
	if err := json.Unmarshal(b, &c); err != nil || len(c.Choices) != 1 {
		tb.Fatalf("not a chat completion with one choice (%v): %s", err, b)
	}
	return c
}

// streamed is a chat completion stream as a client's accumulator reads
// it: the text, the tool calls (arguments joined), the ids the chunks
// carried and whether it ended with [DONE].
type streamed struct {
	Text  string
	Calls map[int]*chatToolCall
	IDs   map[string]bool
	Done  bool
}

// readChatStream reads a chat completion stream from r.
func readChatStream(tb testing.TB, r io.Reader) streamed {
	tb.Helper()
	s := streamed{Calls: map[int]*chatToolCall{}, IDs: map[string]bool{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			s.Done = true
			continue
		}
		var c struct {
			ID      string `json:"id"`
			Choices []struct {
				Delta struct {
					Content   string         `json:"content"`
					ToolCalls []chatToolCall `json:"tool_calls"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			tb.Fatalf("stream chunk is not JSON: %q", data)
		}
		s.IDs[c.ID] = true
		for _, ch := range c.Choices {
			s.Text += ch.Delta.Content
			for _, tc := range ch.Delta.ToolCalls {
				acc := s.Calls[tc.Index]
				if acc == nil {
					acc = &chatToolCall{Index: tc.Index}
					s.Calls[tc.Index] = acc
				}
				if tc.ID != "" {
					acc.ID = tc.ID
				}
				acc.Function.Name += tc.Function.Name
				acc.Function.Arguments += tc.Function.Arguments
			}
		}
	}
	if err := sc.Err(); err != nil && !errors.Is(err, io.EOF) {
		tb.Fatalf("reading the stream: %v", err)
	}
	return s
}
