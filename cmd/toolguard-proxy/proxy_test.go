package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	fp "github.com/toolguard/toolguard/httpguard/fakeprovider"
)

// A bad call is re-asked behind the proxy, for a client that speaks plain
// HTTP (as curl does): the client reads the corrected call; the upstream
// got the client's key and no thread header.
func TestPlainHTTPBadCallReasked(t *testing.T) {
	t.Parallel()
	up := fp.New(
		fp.Reply(fp.Call("get_weather", `{"city": 42}`)),
		fp.Reply(fp.Call("get_weather", `{"city": "Paris"}`)),
	)
	defer up.Close()
	p := startProxy(t, up.URL)

	resp, body := post(t, p.URL+"/v1/chat/completions", chatBody,
		"Authorization", "Bearer sk-test-key", "X-Toolguard-Thread", "chat-1")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	c := decodeChat(t, body)
	calls := c.Choices[0].Message.ToolCalls
	if len(calls) != 1 || calls[0].Function.Arguments != `{"city": "Paris"}` {
		t.Fatalf("the client read calls %+v, want the corrected get_weather call", calls)
	}
	reqs := up.Requests()
	if len(reqs) != 2 {
		t.Fatalf("upstream got %d requests, want 2 (the call and one re-ask)", len(reqs))
	}
	if !bytes.Contains(reqs[1].Body, []byte(`"role":"tool"`)) || !bytes.Contains(reqs[1].Body, []byte("/city")) {
		t.Errorf("the re-ask carries no tool message about /city: %s", reqs[1].Body)
	}
	for i, r := range reqs {
		if got := r.Header.Get("Authorization"); got != "Bearer sk-test-key" {
			t.Errorf("upstream request %d: Authorization = %q, want the client's", i, got)
		}
		if got := r.Header.Values(threadHeader); len(got) != 0 {
			t.Errorf("upstream request %d carries %s: %q", i, threadHeader, got)
		}
	}
}

// A streamed bad call is re-asked: the client reads one stream with the
// first attempt's text once, the corrected call, one completion id.
func TestPlainHTTPStreamReasked(t *testing.T) {
	t.Parallel()
	up := fp.New(
		fp.Reply(fp.Text("Let me check."), fp.Call("get_weather", `{"city": 42}`)),
		fp.Reply(fp.Text("Checking again."), fp.Call("get_weather", `{"city": "Paris"}`)),
	)
	defer up.Close()
	p := startProxy(t, up.URL)

	resp, body := post(t, p.URL+"/v1/chat/completions", streamBody)
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("status %d, Content-Type %q: %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	s := readChatStream(t, bytes.NewReader(body))
	if s.Text != "Let me check." {
		t.Errorf("text %q, want the first attempt's once", s.Text)
	}
	if len(s.Calls) != 1 || s.Calls[0].Function.Arguments != `{"city": "Paris"}` || s.Calls[0].Function.Name != "get_weather" {
		t.Errorf("calls %+v, want the corrected call only", s.Calls)
	}
	if len(s.IDs) != 1 || !s.Done {
		t.Errorf("completion ids %v, [DONE] %v: want one id and [DONE]", s.IDs, s.Done)
	}
	if n := len(up.Requests()); n != 2 {
		t.Errorf("upstream got %d requests, want 2", n)
	}
}

// A request without tools passes through: the upstream reads the client's
// bytes and the client the upstream's, unchanged.
func TestPassThroughBytesUnchanged(t *testing.T) {
	t.Parallel()
	answer := `{"id":"chatcmpl-x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Hi."},"finish_reason":"stop"}],  "unknown_field" : [1, 2.50, 1e6]}`
	up := fp.New(fp.Raw(200, answer, "X-Custom", "kept"))
	defer up.Close()
	p := startProxy(t, up.URL)

	sent := `{"model":"gpt-4o",  "messages":[{"role":"user","content":"Hi"}], "x_extension": {"b":2,"a":1}}`
	resp, body := post(t, p.URL+"/v1/chat/completions?api-version=2024-10-21", sent, "X-Custom-Request", "kept")
	if string(body) != answer {
		t.Errorf("client read\n%s\nwant the upstream's bytes\n%s", body, answer)
	}
	if resp.Header.Get("X-Custom") != "kept" {
		t.Errorf("response header X-Custom = %q, want kept", resp.Header.Get("X-Custom"))
	}
	r := up.Requests()[0]
	if string(r.Body) != sent || r.RawQuery != "api-version=2024-10-21" || r.Header.Get("X-Custom-Request") != "kept" {
		t.Errorf("upstream read body %s query %q header %q; want the client's unchanged", r.Body, r.RawQuery, r.Header.Get("X-Custom-Request"))
	}
}

// The upstream's base path prefixes the client's path.
func TestUpstreamPathPrefix(t *testing.T) {
	t.Parallel()
	up := fp.New(fp.Reply(fp.Text("Hi.")))
	defer up.Close()
	p := startProxy(t, up.URL+"/openai")
	post(t, p.URL+"/v1/chat/completions", `{"model":"gpt-4o","messages":[]}`)
	if got := up.Requests()[0].Path; got != "/openai/v1/chat/completions" {
		t.Errorf("upstream path %q, want /openai/v1/chat/completions", got)
	}
}

// A client that accepts gzip (every SDK does) still has its calls guarded:
// the proxy lets its upstream connection negotiate compression and
// decompress, and answers the client uncompressed. Passing the client's
// Accept-Encoding on would get a gzip body httpguard cannot read, and the
// bad call would pass unguarded.
func TestCompressedUpstreamStillGuarded(t *testing.T) {
	t.Parallel()
	script := fp.New(
		fp.Reply(fp.Call("get_weather", `{"city": 42}`)),
		fp.Reply(fp.Call("get_weather", `{"city": "Paris"}`)),
	)
	defer script.Close()
	// The upstream compresses its answer when the request accepts gzip,
	// as the providers' front ends do.
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, _ := http.NewRequest(r.Method, script.URL+r.URL.Path, r.Body)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		w.Header().Set("Content-Type", "application/json")
		if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			w.Header().Set("Content-Encoding", "gzip")
			zw := gzip.NewWriter(w)
			zw.Write(b)
			zw.Close()
			return
		}
		w.Write(b)
	}))
	defer up.Close()
	p := startProxy(t, up.URL)

	req, _ := http.NewRequest(http.MethodPost, p.URL+"/v1/chat/completions", strings.NewReader(chatBody))
	req.Header.Set("Accept-Encoding", "gzip, deflate, br")
	resp, err := http.DefaultTransport.RoundTrip(req) // no transparent decompression
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if enc := resp.Header.Get("Content-Encoding"); enc != "" {
		t.Fatalf("the client got Content-Encoding %q, want an identity body", enc)
	}
	c := decodeChat(t, body)
	if calls := c.Choices[0].Message.ToolCalls; len(calls) != 1 || calls[0].Function.Arguments != `{"city": "Paris"}` {
		t.Errorf("the client read calls %+v, want the corrected call (the bad one passed unguarded)", calls)
	}
}

// -fail-closed answers a call still invalid after the last re-ask with
// HTTP 422 in OpenAI's error shape, which the SDKs do not retry.
func TestFailClosed(t *testing.T) {
	t.Parallel()
	up := fp.New(fp.Reply(fp.Call("get_weather", `{"city": 42}`)))
	defer up.Close()
	p := startProxy(t, up.URL, "-fail-closed", "-max-retries", "0")

	resp, body := post(t, p.URL+"/v1/chat/completions", chatBody)
	var e struct {
		Error struct{ Type, Message string } `json:"error"`
	}
	if resp.StatusCode != http.StatusUnprocessableEntity || json.Unmarshal(body, &e) != nil || e.Error.Type != "invalid_tool_calls" {
		t.Fatalf("status %d body %s; want 422 with error.type invalid_tool_calls", resp.StatusCode, body)
	}
	if resp.Header.Get("X-Should-Retry") != "false" {
		t.Errorf("x-should-retry = %q, want false", resp.Header.Get("X-Should-Retry"))
	}
}

// The thread limit counts per X-Toolguard-Thread: a second call in one
// thread is refused, another thread's passes; a thread header that is not
// one bounded id is refused with 400.
func TestThreadHeaderScopesTheLimit(t *testing.T) {
	t.Parallel()
	up := fp.New(
		fp.Reply(fp.Call("get_weather", `{"city": "Paris"}`)),
		fp.Reply(fp.Call("get_weather", `{"city": "Rome"}`)),
		fp.Reply(fp.Call("get_weather", `{"city": "Oslo"}`)),
	)
	defer up.Close()
	p := startProxy(t, up.URL, "-thread-limit", "1", "-limit-exit", "error")

	for _, tc := range []struct {
		thread string
		status int
	}{{"a", 200}, {"a", 422}, {"b", 200}} {
		resp, body := post(t, p.URL+"/v1/chat/completions", chatBody, threadHeader, tc.thread)
		if resp.StatusCode != tc.status {
			t.Errorf("thread %q: status %d, want %d: %s", tc.thread, resp.StatusCode, tc.status, body)
		}
	}
	for name, header := range map[string][]string{
		"two values": {threadHeader, "a", threadHeader, "b"},
		"too long":   {threadHeader, strings.Repeat("x", maxThreadID+1)},
	} {
		resp, body := post(t, p.URL+"/v1/chat/completions", chatBody, header...)
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: status %d, want 400: %s", name, resp.StatusCode, body)
		}
	}
	if n := len(up.Requests()); n != 3 {
		t.Errorf("upstream got %d requests, want 3 (the refused header never reached it)", n)
	}
}

// -model-call-limit caps the requests of one thread that reach the
// upstream: with a limit of 2 the third request of a thread is refused
// (422 model_call_limit_exceeded with -limit-exit error; with the default
// continue, an answer saying the limit was reached), never reaches the
// upstream, and another thread's request passes.
func TestModelCallLimit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		exit   string
		status int
	}{{"error", http.StatusUnprocessableEntity}, {"continue", http.StatusOK}} {
		t.Run(tc.exit, func(t *testing.T) {
			t.Parallel()
			up := fp.New(fp.Reply(fp.Text("one")), fp.Reply(fp.Text("two")), fp.Reply(fp.Text("three")), fp.Reply(fp.Text("four")))
			defer up.Close()
			p := startProxy(t, up.URL, "-model-call-limit", "2", "-limit-exit", tc.exit)
			for i, r := range []struct{ thread, answer string }{{"a", "one"}, {"a", "two"}, {"a", ""}, {"b", "three"}} {
				resp, body := post(t, p.URL+"/v1/chat/completions", chatBody, threadHeader, r.thread)
				t.Logf("request %d, thread %q: %d %s", i+1, r.thread, resp.StatusCode, body)
				if r.answer != "" {
					if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"content":"`+r.answer+`"`) {
						t.Errorf("request %d (thread %q): status %d: %s; want the upstream's answer %q", i+1, r.thread, resp.StatusCode, body, r.answer)
					}
					continue
				}
				if resp.StatusCode != tc.status {
					t.Errorf("third request of thread %q: status %d, want %d: %s", r.thread, resp.StatusCode, tc.status, body)
				}
				switch tc.exit {
				case "error":
					if got := openAIType(body); got != "model_call_limit_exceeded" {
						t.Errorf("third request: error type %q, want model_call_limit_exceeded: %s", got, body)
					}
				case "continue":
					var c struct {
						Choices []struct{ Message struct{ Content string } }
					}
					if json.Unmarshal(body, &c) != nil || len(c.Choices) != 1 || !strings.Contains(c.Choices[0].Message.Content, "limit") {
						t.Errorf("third request: %s; want an answer saying the limit was reached", body)
					}
				}
			}
			if n := len(up.Requests()); n != 3 {
				t.Errorf("upstream got %d requests, want 3 (the refused one never reached it)", n)
			}
		})
	}
}

func TestHealthz(t *testing.T) {
	t.Parallel()
	p := startProxy(t, "http://127.0.0.1:1")
	resp, err := http.Get(p.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != "ok\n" {
		t.Errorf("GET /healthz = %d %q, want 200 ok", resp.StatusCode, b)
	}
}

// An upstream that cannot be reached is a 502 in the protocol's error
// shape; the log names the path, never the query's key.
func TestUpstreamUnreachable(t *testing.T) {
	t.Parallel()
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	p := startProxy(t, dead.URL, "-model-retries", "0")
	resp, body := post(t, p.URL+"/v1beta/models/gemini-2.5-flash:generateContent?key=AIza-secret-key", `{"contents":[]}`)
	var e struct {
		Error struct {
			Code   int    `json:"code"`
			Status string `json:"status"`
		} `json:"error"`
	}
	if resp.StatusCode != http.StatusBadGateway || json.Unmarshal(body, &e) != nil || e.Error.Code != 502 || e.Error.Status != "UNAVAILABLE" {
		t.Errorf("status %d body %s; want 502 in Gemini's error shape", resp.StatusCode, body)
	}
	p.waitLog(t, "toolguard-proxy: request", 1)
	if logs := p.logs.String(); strings.Contains(logs, "AIza-secret-key") || !strings.Contains(logs, "upstream request failed") {
		t.Errorf("logs quote the key, or do not report the failure:\n%s", logs)
	}
}
