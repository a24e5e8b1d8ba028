package httpguard

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/toolguard/toolguard/guard"
)

// A request that offers tools in a shape the guard cannot read (a tool
// whose name is not a string) gets an answer whose calls cannot be
// checked: refused under fail closed (502 response_unguardable, the
// upstream's body closed unread), passed under fail open with an
// unguarded event, each time.
func TestUnreadRequestAnswerFailsClosed(t *testing.T) {
	answer := chatAnswer(`{"role":"assistant","content":null,"tool_calls":[` + chatBadCall + `]}`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(answer))
	}))
	defer srv.Close()
	body := []byte(`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":5,"parameters":{"type":"object"}}}]}`)

	var open eventLog
	tr := New(nil, ToolArgValidation(guard.WithEventHandler(open.add)))
	for i := range 2 {
		ex := do(t, tr, context.Background(), srv.URL+"/v1/chat/completions", body)
		if ex.resp.StatusCode != http.StatusOK || string(ex.body) != answer {
			t.Fatalf("fail open, request %d: %d %s, want the answer as it came", i+1, ex.resp.StatusCode, ex.body)
		}
	}
	if n := open.count(guard.EventUnguarded); n != 2 {
		t.Errorf("fail open: %d unguarded events (%v), want 2, one per answer", n, open.kinds())
	}

	var closed eventLog
	tr = New(nil, ToolArgValidation(guard.WithFailClosed(), guard.WithEventHandler(closed.add)))
	ex := do(t, tr, context.Background(), srv.URL+"/v1/chat/completions", body)
	if ex.resp.StatusCode != http.StatusBadGateway || !strings.Contains(string(ex.body), responseUnguardable) ||
		!strings.Contains(string(ex.body), "the request cannot be read") || ex.resp.Header.Get("X-Should-Retry") != "false" {
		t.Errorf("fail closed: %d %q %s, want 502 response_unguardable naming the unread request, x-should-retry: false",
			ex.resp.StatusCode, ex.resp.Header.Get("X-Should-Retry"), ex.body)
	}
	if n := closed.count(guard.EventUnguarded); n != 1 {
		t.Errorf("fail closed: %d unguarded events, want 1", n)
	}
}

// eventLog records events, safe for concurrent use.
type eventLog struct {
	mu     sync.Mutex
	events []guard.Event
}

func (l *eventLog) add(_ context.Context, e guard.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
}

func (l *eventLog) count(k guard.EventKind) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, e := range l.events {
		if e.Kind == k {
			n++
		}
	}
	return n
}

func (l *eventLog) kinds() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, e := range l.events {
		out = append(out, fmt.Sprintf("%s/%s", e.Middleware, e.Kind))
	}
	return out
}

// badCity is the invalid argument the answers of these tests carry:
// get_weather wants a string city.
const badCity = "987654"

func chatAnswer(message string) string {
	return `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o","choices":[{"index":0,"message":` + message +
		`,"finish_reason":"tool_calls"}]}`
}

const (
	chatBadCall  = `{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\": ` + badCity + `}"}}`
	chatGoodCall = `{"id":"call_2","type":"function","function":{"name":"get_weather","arguments":"{\"city\": \"Lyon\"}"}}`
	respBadCall  = `{"id":"fc_1","type":"function_call","status":"completed","arguments":"{\"city\": ` + badCity + `}","call_id":"call_1","name":"get_weather"}`
)

// firstLine is the start of b, for a failure message.
func firstLine(b []byte) string {
	s, _, _ := strings.Cut(string(b), "\n")
	if len(s) > 160 {
		s = s[:160] + "…"
	}
	return s
}

// A stream cut by the upstream after it began ends with an error event
// that names what failed, never the upstream's address: behind a proxy,
// that is an internal ip:port.
func TestStreamErrorHidesUpstreamAddress(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write([]byte(`data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"role":"assistant","content":"Hello"},"finish_reason":null}]}` + "\n\n"))
		w.(http.Flusher).Flush()
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		conn.(*net.TCPConn).SetLinger(0) // a reset, not a clean close
		conn.Close()
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	body := fixture(t, "openai-chat", "stream-request.json")
	tr := New(nil, ToolArgValidation())
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/chat/completions", bytes.NewReader(body))
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Contains(b, []byte("Hello")) || !bytes.Contains(b, []byte("error")) {
		t.Fatalf("the client read %q, want the text, then an error event", b)
	}
	if bytes.Contains(b, []byte(port)) || bytes.Contains(b, []byte("127.0.0.1")) {
		t.Errorf("the error event names the upstream's address (port %s):\n%s", port, b)
	}
}

// A request nested past encoding/json's depth outside its tools (deep
// message content) cannot be read, yet offers tools: its answer is
// refused under fail closed, not passed without a word.
func TestDeepRequestAnswerFailsClosed(t *testing.T) {
	answer := chatAnswer(`{"role":"assistant","content":null,"tool_calls":[` + chatBadCall + `]}`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(answer))
	}))
	defer srv.Close()
	deep := strings.Repeat("[", 10001) + strings.Repeat("]", 10001)
	body := []byte(`{"model":"gpt-4o","messages":[{"role":"user","content":"hi","extra":` + deep + `}],"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}]}`)
	tr := New(nil, ToolArgValidation(guard.WithFailClosed(), guard.WithEventHandler(func(context.Context, guard.Event) {})))
	ex := do(t, tr, context.Background(), srv.URL+"/v1/chat/completions", body)
	if ex.resp.StatusCode != http.StatusBadGateway || !strings.Contains(string(ex.body), responseUnguardable) {
		t.Errorf("fail closed: %d %s, want 502 response_unguardable", ex.resp.StatusCode, firstLine(ex.body))
	}
}
