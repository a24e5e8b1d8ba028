package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	fp "github.com/toolguard/toolguard/httpguard/fakeprovider"
)

// A body past -max-body is refused with 413 in the error shape of the
// protocol its path names, whether its length is declared or it comes
// chunked, on a guarded path or one the proxy passes through; the
// upstream never answers it.
func TestMaxBody(t *testing.T) {
	t.Parallel()
	up := fp.New()
	defer up.Close()
	p := startProxy(t, up.URL, "-max-body", "1KiB")
	big := `{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("x", 2000) + `"}]}`

	for _, tc := range []struct {
		name, path string
		chunked    bool
		errType    func(body []byte) string
	}{
		{"openai declared", "/v1/chat/completions", false, openAIType},
		{"openai chunked", "/v1/chat/completions", true, openAIType},
		{"anthropic declared", "/v1/messages", false, anthropicType},
		{"gemini chunked", "/v1beta/models/gemini-2.5-flash:generateContent", true, geminiStatus},
		{"unknown path chunked", "/v1/embeddings", true, openAIType},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var body io.Reader = strings.NewReader(big)
			if tc.chunked {
				body = struct{ io.Reader }{body} // no length: sent chunked
			}
			req, _ := http.NewRequest(http.MethodPost, p.URL+tc.path, body)
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusRequestEntityTooLarge {
				t.Fatalf("status %d, want 413: %s", resp.StatusCode, b)
			}
			if got := tc.errType(b); got != "request_too_large" && got != "INVALID_ARGUMENT" {
				t.Errorf("error body %s: type %q, not the protocol's shape", b, got)
			}
		})
	}
	for _, r := range up.Requests() {
		if len(r.Body) >= len(big) {
			t.Errorf("upstream read the whole body past -max-body at %s", r.Path)
		}
	}
}

func openAIType(b []byte) string {
	var e struct{ Error struct{ Type string } }
	_ = json.Unmarshal(b, &e)
	return e.Error.Type
}

func anthropicType(b []byte) string {
	var e struct {
		Type  string
		Error struct{ Type string }
	}
	if json.Unmarshal(b, &e) != nil || e.Type != "error" {
		return ""
	}
	return e.Error.Type
}

func geminiStatus(b []byte) string {
	var e struct {
		Error struct {
			Code   int
			Status string
		}
	}
	if json.Unmarshal(b, &e) != nil || e.Error.Code != 413 {
		return ""
	}
	return e.Error.Status
}

// A client that sends its headers and then stalls its body is answered
// 408 once -body-timeout has passed, and its connection does not hold a
// handler forever.
func TestBodyTimeout(t *testing.T) {
	t.Parallel()
	up := fp.New()
	defer up.Close()
	const timeout = 200 * time.Millisecond
	p := startProxy(t, up.URL, "-body-timeout", timeout.String())

	conn, err := net.Dial("tcp", strings.TrimPrefix(p.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	fmt.Fprintf(conn, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"model\":")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("reading the answer to a stalled body: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	elapsed := time.Since(start)
	if resp.StatusCode != http.StatusRequestTimeout || openAIType(b) != "request_timeout" {
		t.Errorf("status %d body %s; want 408 request_timeout", resp.StatusCode, b)
	}
	// The promise is a deadline: answered after it, within a generous margin.
	if elapsed < timeout || elapsed > timeout+5*time.Second {
		t.Errorf("answered after %v, want just after the %v deadline", elapsed, timeout)
	}
	if n := len(up.Requests()); n != 0 {
		t.Errorf("upstream got %d requests, want none", n)
	}
}

// A stream that lasts longer than -body-timeout (and -read-header-timeout)
// reaches the client whole: those deadlines end with the request's body,
// not with the response.
func TestStreamOutlivesBodyTimeout(t *testing.T) {
	t.Parallel()
	const timeout = 100 * time.Millisecond
	up := fp.New(fp.Handle(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Hello"},"finish_reason":null}]}`+"\n\n")
		w.(http.Flusher).Flush()
		time.Sleep(5 * timeout) // past every request deadline of the proxy
		io.WriteString(w, `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":" world"},"finish_reason":null}]}`+"\n\n")
		io.WriteString(w, `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`+"\n\n")
		io.WriteString(w, "data: [DONE]\n\n")
	}))
	defer up.Close()
	p := startProxy(t, up.URL, "-body-timeout", timeout.String(), "-read-header-timeout", timeout.String())

	resp, body := post(t, p.URL+"/v1/chat/completions", streamBody)
	s := readChatStream(t, strings.NewReader(string(body)))
	if resp.StatusCode != 200 || s.Text != "Hello world" || !s.Done {
		t.Errorf("status %d, text %q, done %v; want the whole stream", resp.StatusCode, s.Text, s.Done)
	}
}
