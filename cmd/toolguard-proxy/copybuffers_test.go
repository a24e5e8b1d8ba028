package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
)

// An answer is copied to the client through a buffer the proxy reuses:
// a request through it allocates less, in this whole process (client,
// proxy and upstream together), than the 32 KiB buffer
// httputil.ReverseProxy allocates per answer without a pool, over what
// the same requests allocate straight to the upstream. (bench/load's
// "KiB allocated/request" shows the same under load.)
func TestCopyBufferReused(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector inflates allocations and drops pooled items at random")
	}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"Let me check.","tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},"finish_reason":"tool_calls"}]}`)
	}))
	defer up.Close()
	p := startProxyTo(t, io.Discard, up.URL, "-log-level", "warn")
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	send := func(url string) {
		resp, err := client.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(chatBody))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"get_weather"`) {
			t.Fatalf("POST %s = %d %s, want the answer", url, resp.StatusCode, b)
		}
	}
	perRequest := func(url string) float64 {
		const n = 50
		for range 10 { // connections, schemas, pools
			send(url)
		}
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		for range n {
			send(url)
		}
		runtime.ReadMemStats(&m1)
		return float64(m1.TotalAlloc-m0.TotalAlloc) / n
	}
	direct, proxied := perRequest(up.URL), perRequest(p.URL)
	t.Logf("allocated per request: %.0f B straight to the upstream, %.0f B through the proxy", direct, proxied)
	if extra := proxied - direct; extra >= copyBufferSize {
		t.Errorf("a request through the proxy allocated %.0f B more than straight to the upstream, want less than the %d B of an unpooled copy buffer", extra, copyBufferSize)
	}
}
