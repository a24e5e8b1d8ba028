package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
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

// What a client sends cannot grow /metrics: three requests naming a 2 MiB
// model add label values of at most 128 bytes, and a method of the
// client's own is counted as _OTHER.
func TestMetricsLabelsBounded(t *testing.T) {
	t.Parallel()
	up := answering(t)
	p := startProxy(t, up.URL)
	model := strings.Repeat("m", 2<<20)
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
		t.Errorf("/metrics is %d bytes after 3 requests naming a 2 MiB model, want less than 256 KiB", len(b))
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
