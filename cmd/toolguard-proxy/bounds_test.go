package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	fp "github.com/toolguard/toolguard/httpguard/fakeprovider"
)

// chatAnswer is a chat completion without tool calls.
const chatAnswer = `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Hi."},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`

// answering is an upstream that answers every request with chatAnswer.
func answering(t *testing.T) *httptest.Server {
	t.Helper()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, chatAnswer)
	}))
	t.Cleanup(up.Close)
	return up
}

// What a client sends cannot grow /metrics: three requests naming a 512 KiB
// model add label values of at most 128 bytes (before the bound, the model
// was written whole on every series line: three naming a 2 MiB model made
// a 320 MB scrape), and a method of the client's own is counted as _OTHER.
func TestMetricsLabelsBounded(t *testing.T) {
	t.Parallel()
	up := answering(t)
	p := startProxy(t, up.URL)
	model := strings.Repeat("m", 512<<10)
	for i := range 3 {
		body := fmt.Sprintf(`{"model":"%s%d","messages":[{"role":"user","content":"Hi"}],"tools":%s}`, model, i, weatherTools)
		if resp, b := post(t, p.URL+"/v1/chat/completions", body); resp.StatusCode != 200 {
			t.Fatalf("status %d: %.200s", resp.StatusCode, b)
		}
	}
	req, _ := http.NewRequest("BREW"+strings.Repeat("X", 1000), p.URL+"/v1/pot", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	p.waitLog(t, "toolguard-proxy: request", 4)

	resp, err = http.Get(p.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if len(b) > 256<<10 {
		t.Errorf("/metrics is %d bytes after 3 requests naming a 512 KiB model, want less than 256 KiB", len(b))
	}
	for line := range strings.Lines(string(b)) {
		if len(line) > 2000 {
			t.Errorf("/metrics has a line of %d bytes: %.200s…", len(line), line)
			break
		}
	}
	if !strings.Contains(string(b), `http_request_method="_OTHER"`) || strings.Contains(string(b), "BREW") {
		t.Errorf("/metrics does not count the client's own method as _OTHER")
	}
	if !strings.Contains(string(b), `gen_ai_request_model="`+model[:128]+`"`) {
		t.Errorf("/metrics has no gen_ai_request_model cut to 128 bytes")
	}
}

// The attack: a client points the proxy at an internal address that does
// not answer and reads the error to learn the address. The 502 says the
// kind of failure, never the address or the port; so does the error event
// of a stream whose re-ask cannot reach the upstream, and of a stream the
// upstream resets.
func TestUpstreamErrorsNameNoAddress(t *testing.T) {
	t.Parallel()
	assertQuiet := func(t *testing.T, addr string, body []byte, kind string) {
		t.Helper()
		_, port, _ := net.SplitHostPort(addr)
		if strings.Contains(string(body), addr) || strings.Contains(string(body), ":"+port) || strings.Contains(string(body), "127.0.0.1") {
			t.Errorf("the client's body names the upstream's address %s:\n%s", addr, body)
		}
		if !strings.Contains(string(body), kind) {
			t.Errorf("the client's body does not say %q:\n%s", kind, body)
		}
	}

	t.Run("closed port", func(t *testing.T) {
		t.Parallel()
		dead := httptest.NewServer(http.NotFoundHandler())
		dead.Close()
		addr := strings.TrimPrefix(dead.URL, "http://")
		p := startProxy(t, dead.URL, "-model-retries", "0")
		for _, tc := range []struct{ path, body string }{
			{"/v1/chat/completions", chatBody},
			{"/v1/chat/completions", streamBody},
			{"/v1/messages", `{"model":"claude","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"hi"}],"tools":[{"name":"x","input_schema":{"type":"object"}}]}`},
			{"/v1/embeddings", `{"model":"m","input":"hi"}`},
		} {
			resp, body := post(t, p.URL+tc.path, tc.body)
			if resp.StatusCode != http.StatusBadGateway || !strings.Contains(string(body), "upstream_unreachable") {
				t.Errorf("%s: status %d body %s; want 502 upstream_unreachable", tc.path, resp.StatusCode, body)
			}
			assertQuiet(t, addr, body, "connection refused")
		}
		p.waitLog(t, "toolguard-proxy: request", 4)
		if logs := p.logs.String(); !strings.Contains(logs, addr) {
			t.Errorf("the proxy's log does not name the upstream's address for its operator:\n%s", logs)
		}
	})

	t.Run("re-ask refused mid-stream", func(t *testing.T) {
		t.Parallel()
		// The upstream answers one connection, with text and an invalid
		// call, and then stops listening: the re-ask is refused after the
		// client's stream began.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "text/event-stream")
			w.Header().Set("Connection", "close")
			for _, c := range []string{
				`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Let me check."},"finish_reason":null}]}`,
				`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\": 42}"}}]},"finish_reason":null}]}`,
				`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
				`[DONE]`,
			} {
				io.WriteString(w, "data: "+c+"\n\n")
			}
		})}
		go srv.Serve(&oneConnListener{Listener: ln})
		t.Cleanup(func() { srv.Close() })
		p := startProxy(t, "http://"+addr, "-model-retries", "0")
		resp, body := post(t, p.URL+"/v1/chat/completions", streamBody)
		if resp.StatusCode != 200 || !strings.Contains(string(body), "Let me check.") {
			t.Fatalf("status %d body %s; want the stream begun with the first attempt's text", resp.StatusCode, body)
		}
		assertQuiet(t, addr, body, "connection refused")
	})

	t.Run("stream reset", func(t *testing.T) {
		t.Parallel()
		up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Let me check."},"finish_reason":null}]}`+"\n\n")
			w.(http.Flusher).Flush()
			conn, _, err := http.NewResponseController(w).Hijack()
			if err != nil {
				return
			}
			conn.(*net.TCPConn).SetLinger(0) // closed with a reset
			conn.Close()
		}))
		defer up.Close()
		addr := strings.TrimPrefix(up.URL, "http://")
		p := startProxy(t, up.URL, "-model-retries", "0")
		resp, body := post(t, p.URL+"/v1/chat/completions", streamBody)
		if resp.StatusCode != 200 || !strings.Contains(string(body), "Let me check.") {
			t.Fatalf("status %d body %s; want the stream begun with the text", resp.StatusCode, body)
		}
		assertQuiet(t, addr, body, "connection closed")
	})
}

// oneConnListener accepts one connection, then closes its listener: later
// dials are refused.
type oneConnListener struct {
	net.Listener
	once sync.Once
}

func (l *oneConnListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	l.once.Do(func() { l.Listener.Close() })
	return c, err
}

// With -max-inflight 2 and two requests held by the upstream, a third is
// refused at once, in the error shape of the protocol its path names, with
// 503 and retry-after, and never reaches the upstream; once the two are
// answered, requests pass again.
func TestMaxInflight(t *testing.T) {
	t.Parallel()
	arrived := make(chan struct{}, 10)
	release := make(chan struct{})
	var mu sync.Mutex
	var paths []string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		paths = append(paths, r.URL.Path)
		mu.Unlock()
		arrived <- struct{}{}
		<-release
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, chatAnswer)
	}))
	defer up.Close()
	released := sync.OnceFunc(func() { close(release) })
	defer released() // before up.Close: it waits for the held requests
	p := startProxy(t, up.URL, "-max-inflight", "2")

	held := make(chan int, 2)
	for range 2 {
		go func() {
			resp, err := http.Post(p.URL+"/v1/chat/completions", "application/json", strings.NewReader(chatBody))
			if err != nil {
				held <- 0
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			held <- resp.StatusCode
		}()
	}
	<-arrived
	<-arrived
	for _, tc := range []struct {
		path    string
		errType func([]byte) string
		want    string
	}{
		{"/v1/chat/completions", openAIType, "proxy_overloaded"},
		{"/v1/messages", anthropicType, "proxy_overloaded"},
		{"/v1beta/models/gemini-2.5-flash:generateContent", geminiStatus503, "UNAVAILABLE"},
	} {
		resp, b := post(t, p.URL+tc.path, chatBody)
		if resp.StatusCode != http.StatusServiceUnavailable || tc.errType(b) != tc.want {
			t.Errorf("%s past -max-inflight: status %d body %s; want 503 with %s", tc.path, resp.StatusCode, b, tc.want)
		}
		if got := resp.Header.Get("Retry-After"); got != "1" {
			t.Errorf("%s past -max-inflight: retry-after %q, want 1", tc.path, got)
		}
	}
	released()
	for range 2 {
		if status := <-held; status != 200 {
			t.Errorf("a held request ended with status %d, want 200", status)
		}
	}
	if resp, b := post(t, p.URL+"/v1/chat/completions", chatBody); resp.StatusCode != 200 {
		t.Errorf("a request after the held ones ended: status %d, want 200: %s", resp.StatusCode, b)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(paths) != 3 {
		t.Errorf("the upstream got %d requests (%q), want 3: the refused ones never reach it", len(paths), paths)
	}
}

func geminiStatus503(b []byte) string {
	var e struct {
		Error struct {
			Code   int
			Status string
		}
	}
	if json.Unmarshal(b, &e) != nil || e.Error.Code != 503 {
		return ""
	}
	return e.Error.Status
}

// -unknown-tools reject re-asks a call of a tool the request does not
// offer; the default passes it on.
func TestUnknownTools(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args     []string
		wantName string
		requests int
	}{
		{nil, "get_wether", 1},
		{[]string{"-unknown-tools", "pass"}, "get_wether", 1},
		{[]string{"-unknown-tools", "reject"}, "get_weather", 2},
	} {
		t.Run(strings.Join(append([]string{"default"}, tc.args...), " "), func(t *testing.T) {
			t.Parallel()
			up := fp.New(
				fp.Reply(fp.Call("get_wether", `{"city": "Paris"}`)),
				fp.Reply(fp.Call("get_weather", `{"city": "Paris"}`)),
			)
			defer up.Close()
			p := startProxy(t, up.URL, tc.args...)
			resp, body := post(t, p.URL+"/v1/chat/completions", chatBody)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			calls := decodeChat(t, body).Choices[0].Message.ToolCalls
			if len(calls) != 1 || calls[0].Function.Name != tc.wantName {
				t.Errorf("the client read calls %+v, want one call of %s", calls, tc.wantName)
			}
			if n := len(up.Requests()); n != tc.requests {
				t.Errorf("the upstream got %d requests, want %d", n, tc.requests)
			}
		})
	}
}

// A Chat request offering legacy functions and no tools, and a WebSocket
// upgrade (the Realtime API), pass on unguarded: each is an unguarded event
// every time, counted in toolguard_events_total and logged at Warn with
// its reason. The request reaches the upstream unchanged.
func TestUnguardedRequestsReported(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var bodies []string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, chatAnswer)
	}))
	defer up.Close()
	p := startProxy(t, up.URL)

	functions := `{"model":"gpt-4o", "messages":[{"role":"user","content":"Weather?"}],"functions":[{"name":"get_weather","parameters":{"type":"object"}}]}`
	for _, body := range []string{
		functions,
		functions,
		`{"model":"gpt-4o","messages":[],"functions":[],"tools":` + weatherTools + `}`, // tools: guarded
		`{"model":"gpt-4o","messages":[{"role":"user","content":"\"functions\""}]}`,    // no functions
	} {
		if resp, b := post(t, p.URL+"/v1/chat/completions", body); resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, b)
		}
	}
	for range 2 {
		req, _ := http.NewRequest(http.MethodGet, p.URL+"/v1/realtime?model=gpt-realtime", nil)
		req.Header.Set("Connection", "Upgrade")
		req.Header.Set("Upgrade", "websocket")
		req.Header.Set("Sec-WebSocket-Version", "13")
		req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	p.waitLog(t, "toolguard-proxy: request", 6)

	want := `toolguard_events_total{` + otelguardScope + `,toolguard_event_kind="unguarded",toolguard_middleware="toolguard-proxy"} 4`
	if metrics := scrape(t, p.URL+"/metrics"); !slices.Contains(metrics, want) {
		t.Errorf("/metrics has no line\n%s\nin\n%s", want, strings.Join(metrics, "\n"))
	}
	reasons := map[string]int{}
	for _, l := range p.logLines(t, "toolguard: unguarded") {
		if l["level"] != "WARN" {
			t.Errorf("unguarded logged at %v, want WARN", l["level"])
		}
		reasons[fmt.Sprint(l["reason"])]++
	}
	if reasons[legacyFunctions] != 2 || reasons[webSocket] != 2 || len(reasons) != 2 {
		t.Errorf("unguarded log lines by reason %v, want 2 for legacy functions and 2 for WebSocket", reasons)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(bodies) < 1 || bodies[0] != functions {
		t.Errorf("the upstream read %q, want the client's bytes %q", bodies, functions)
	}
}
