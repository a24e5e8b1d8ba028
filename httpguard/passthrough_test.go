package httpguard

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"

	fp "github.com/toolguard/toolguard/httpguard/fakeprovider"
)

// A request the guard does not change reaches the provider byte for byte
// (method, path, query, headers, body), and its answer reaches the client
// byte for byte: requests of no protocol, and requests of a protocol that
// offer no tools. Compared with the same request sent without the
// transport to a provider with the same script.
func TestPassThroughBytesEqual(t *testing.T) {
	t.Parallel()
	// Unknown members, odd spacing and number spellings, as a client may
	// send them.
	tests := []struct{ name, method, path, body string }{
		{"chat without tools", http.MethodPost, "/v1/chat/completions?api-version=2024-10-21&x=1",
			`{"model":"gpt-4o", "messages":[{"role":"user","content":"hi"}],"temperature":0.50,"x_vendor":{"n":1e3}}`},
		{"messages without tools", http.MethodPost, "/v1/messages?beta=true",
			`{"model":"claude-sonnet-4-5","max_tokens":1024,"messages":[{"role":"user","content":"hi"}],  "metadata":{"user_id":"u-1"}}`},
		{"embeddings", http.MethodPost, "/v1/embeddings", `{"model":"text-embedding-3-small","input":"hi"}`},
		{"models", http.MethodGet, "/v1/models?limit=2", ``},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			step := fp.Reply(fp.Text("Hello there."))
			guarded, direct := fp.New(step), fp.New(step)
			defer guarded.Close()
			defer direct.Close()
			send := func(rt http.RoundTripper, base string) (*http.Response, []byte) {
				var body io.Reader
				if tc.body != "" {
					body = strings.NewReader(tc.body)
				}
				req, _ := http.NewRequest(tc.method, base+tc.path, body)
				req.Header.Set("Authorization", "Bearer sk-test-passthrough")
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("X-Vendor-Trace", "abc 123")
				req.Header.Add("X-Vendor-Trace", "def")
				resp, err := (&http.Client{Transport: rt}).Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				return resp, b
			}
			gResp, gBody := send(New(nil, ToolArgValidation(), ModelRetry()), guarded.URL)
			dResp, dBody := send(http.DefaultTransport, direct.URL)
			g, d := guarded.Requests(), direct.Requests()
			if len(g) != 1 || len(d) != 1 {
				t.Fatalf("requests: %d guarded, %d direct", len(g), len(d))
			}
			if g[0].Method != d[0].Method || g[0].Path != d[0].Path || g[0].RawQuery != d[0].RawQuery {
				t.Errorf("request line %s %s?%s, want %s %s?%s", g[0].Method, g[0].Path, g[0].RawQuery, d[0].Method, d[0].Path, d[0].RawQuery)
			}
			if !bytes.Equal(g[0].Body, d[0].Body) || !bytes.Equal(g[0].Body, []byte(tc.body)) {
				t.Errorf("request body\n%q\nwant\n%q", g[0].Body, d[0].Body)
			}
			if !sameHeader(g[0].Header, d[0].Header) {
				t.Errorf("request header\n%v\nwant\n%v", g[0].Header, d[0].Header)
			}
			if gResp.StatusCode != dResp.StatusCode || !bytes.Equal(gBody, dBody) || !sameHeader(without(gResp.Header, "Date"), without(dResp.Header, "Date")) {
				t.Errorf("response %d %v\n%s\nwant %d %v\n%s", gResp.StatusCode, gResp.Header, gBody, dResp.StatusCode, dResp.Header, dBody)
			}
			t.Logf("%s %s: request %d bytes, response %d bytes, bytes equal: %v", tc.method, tc.path, len(g[0].Body), len(gBody),
				bytes.Equal(g[0].Body, d[0].Body) && bytes.Equal(gBody, dBody))
		})
	}
}

func sameHeader(a, b http.Header) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		w := b[k]
		if len(v) != len(w) {
			return false
		}
		for i := range v {
			if v[i] != w[i] {
				return false
			}
		}
	}
	return true
}

func without(h http.Header, keys ...string) http.Header {
	h = h.Clone()
	for _, k := range keys {
		h.Del(k)
	}
	return h
}

// captureLog swaps slog.Default for a text handler writing to the returned
// buffer until the test ends. Tests that use it do not run in parallel.
func captureLog(t *testing.T) *syncBuffer {
	var buf syncBuffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	t.Cleanup(func() { slog.SetDefault(old) })
	return &buf
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A request offering tools on a path the transport does not know passes
// untouched and is reported once per host and path, at Warn.
func TestMisconfiguredReportedOnce(t *testing.T) {
	log := captureLog(t)
	srv := fp.New()
	defer srv.Close()
	tr := New(nil, ToolArgValidation())
	body := []byte(`{"model":"m","prompt":"hi","tools":[{"type":"function","function":{"name":"f","parameters":{}}}]}`)
	for _, path := range []string{"/v2/generate", "/v2/generate", "/v3/generate"} {
		do(t, tr, context.Background(), srv.URL+path, body, "Authorization", "Bearer sk-secret-misconfigured")
	}
	do(t, tr, context.Background(), srv.URL+"/v2/other", []byte(`{"model":"m","prompt":"no tools"}`))
	out := log.String()
	if n := strings.Count(out, "misconfigured"); n != 2 {
		t.Errorf("%d reports, want 2 (one per path offering tools):\n%s", n, out)
	}
	if !strings.Contains(out, "level=WARN") || !strings.Contains(out, "path=/v2/generate") || !strings.Contains(out, "path=/v3/generate") {
		t.Errorf("report:\n%s", out)
	}
	if strings.Contains(out, "sk-secret") {
		t.Errorf("the log holds the key:\n%s", out)
	}
	for i, r := range srv.Requests() {
		if i < 3 && !bytes.Equal(r.Body, body) {
			t.Errorf("request %d body %s, want it untouched", i, r.Body)
		}
	}
}

// The reports remembered so that each is logged once are bounded: a client
// sending tools on ever new paths (each path up to the server's header
// bound) makes the transport remember at most maxReported of them, 8 bytes
// of key each; past that, each report is logged every time, none silenced.
func TestReportMemoryBounded(t *testing.T) {
	log := captureLog(t)
	ok := baseFunc(func(r *http.Request) (*http.Response, error) {
		if r.Body != nil {
			r.Body.Close()
		}
		return &http.Response{StatusCode: 200, Header: http.Header{}, Body: http.NoBody, Request: r}, nil
	})
	tr := New(ok, ToolArgValidation())
	body := `{"model":"m","tools":[{"type":"function","function":{"name":"f","parameters":{}}}]}`
	long := strings.Repeat("p", 1000)
	send := func(path string) {
		req, _ := http.NewRequest(http.MethodPost, "http://upstream.test"+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatalf("RoundTrip(%s…) = %v", path[:20], err)
		}
		resp.Body.Close()
	}
	const extra = 100
	for i := range maxReported + extra {
		send(fmt.Sprintf("/v9/%06d/%s", i, long))
	}
	send(fmt.Sprintf("/v9/%06d/%s", 0, long))                   // remembered: not logged again
	send(fmt.Sprintf("/v9/%06d/%s", maxReported+extra-1, long)) // past the bound: logged again

	entries := 0
	tr.reported.Range(func(any, any) bool { entries++; return true })
	if entries != maxReported {
		t.Errorf("the transport remembers %d reports, want the bound %d", entries, maxReported)
	}
	if n, want := strings.Count(log.String(), "misconfigured"), maxReported+extra+1; n != want {
		t.Errorf("%d reports logged, want %d (each path once while remembered, every time past the bound)", n, want)
	}
}

// baseFunc is a base transport written as a function.
type baseFunc func(*http.Request) (*http.Response, error)

func (f baseFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
