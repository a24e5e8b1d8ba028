package httpguard_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/httpguard"
)

// fixed is a RoundTripper that serves the same bytes to every request,
// after reading the request's body as a server would: the upstream of the
// benchmarks. In-process rather than a loopback server, so that a
// benchmark measures httpguard's own work, not the kernel's and a server's,
// whose cost (tens of µs per loopback round trip, and noisy on a shared
// machine) would swamp it; a real provider adds hundreds of milliseconds.
type fixed struct {
	contentType string
	body        []byte
}

func (f fixed) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	h := http.Header{}
	h.Set("Content-Type", f.contentType)
	return &http.Response{StatusCode: http.StatusOK, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h, Body: io.NopCloser(bytes.NewReader(f.body)), ContentLength: int64(len(f.body)), Request: r}, nil
}

func readFixture(b *testing.B, dir, name string) []byte {
	b.Helper()
	data, err := os.ReadFile(filepath.Join("../testdata/wire", dir, name))
	if err != nil {
		b.Fatal(err)
	}
	return data
}

// BenchmarkTransport measures a guarded request against the same request
// without the transport, per protocol, sync and streamed, over fixed
// upstream bytes: the recorded request of each SDK and a response whose
// two calls are valid (the guard validates both and re-asks nothing).
// guarded is ToolArgValidation alone; stack the stack the package
// documentation recommends (a limit, validation, retry: two gates and the
// root's). decode is json.Unmarshal of the response into map[string]any,
// the floor any client pays to read it; the overhead (guarded - direct) is
// read against it.
func BenchmarkTransport(b *testing.B) {
	for _, p := range []struct{ dir, path, streamPath, streamFile, streamType string }{
		{"openai-chat", "/v1/chat/completions", "/v1/chat/completions", "", ""},
		{"openai-responses", "/v1/responses", "/v1/responses", "", ""},
		{"anthropic", "/v1/messages", "/v1/messages", "", ""},
		{"gemini", "/v1beta/models/gemini-2.5-flash:generateContent", "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", "", ""},
		{"ollama", "/api/chat", "/api/chat", "gate-accept.ndjson", "application/x-ndjson"},
		{"bedrock", "/model/us.anthropic.claude-sonnet-4-v1%3A0/converse", "/model/us.anthropic.claude-sonnet-4-v1%3A0/converse-stream",
			"gate-accept.eventstream", "application/vnd.amazon.eventstream"},
	} {
		if p.streamFile == "" {
			p.streamFile, p.streamType = "gate-accept.sse", "text/event-stream"
		}
		syncReq, syncResp := readFixture(b, p.dir, "request.json"), readFixture(b, p.dir, "accepted.json")
		streamReq, streamResp := readFixture(b, p.dir, "stream-request.json"), readFixture(b, p.dir, p.streamFile)
		up := map[string]fixed{"sync": {"application/json", syncResp}, "stream": {p.streamType, streamResp}}
		reqs := map[string][]byte{"sync": syncReq, "stream": streamReq}
		paths := map[string]string{"sync": p.path, "stream": p.streamPath}
		for _, mode := range []string{"sync", "stream"} {
			for _, tc := range []struct {
				name string
				rt   http.RoundTripper
			}{
				{"direct", up[mode]},
				{"guarded", httpguard.New(up[mode], httpguard.ToolArgValidation())},
				{"stack", httpguard.New(up[mode], httpguard.ToolCallLimit(guard.WithRunLimit(1000)), httpguard.ToolArgValidation(), httpguard.ModelRetry())},
			} {
				b.Run(p.dir+"/"+mode+"/"+tc.name, func(b *testing.B) {
					c := &http.Client{Transport: tc.rt}
					body := reqs[mode]
					b.ReportAllocs()
					b.SetBytes(int64(len(up[mode].body)))
					for b.Loop() {
						req, _ := http.NewRequest(http.MethodPost, "http://provider.test"+paths[mode], bytes.NewReader(body))
						req.Header.Set("Content-Type", "application/json")
						req.Header.Set("Authorization", "Bearer sk-bench")
						resp, err := c.Do(req)
						if err != nil {
							b.Fatal(err)
						}
						n, _ := io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						if resp.StatusCode != http.StatusOK || n == 0 {
							b.Fatalf("status %d, %d bytes", resp.StatusCode, n)
						}
					}
				})
			}
		}
		b.Run(p.dir+"/sync/decode", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(syncResp)))
			for b.Loop() {
				var m map[string]any
				if err := json.Unmarshal(syncResp, &m); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// The benchmark's upstream answers are valid, so a guarded request makes
// exactly one upstream request and hands the answer on: checked here, so
// that the benchmark measures what it says.
func TestBenchmarkUpstreamIsValid(t *testing.T) {
	for _, dir := range []string{"openai-chat", "openai-responses", "anthropic", "gemini", "ollama", "bedrock"} {
		resp, _ := os.ReadFile(filepath.Join("../testdata/wire", dir, "accepted.json"))
		n := 0
		up := roundTripFunc(func(r *http.Request) (*http.Response, error) {
			n++
			return fixed{"application/json", resp}.RoundTrip(r)
		})
		req, _ := os.ReadFile(filepath.Join("../testdata/wire", dir, "request.json"))
		path := map[string]string{"openai-chat": "/v1/chat/completions", "openai-responses": "/v1/responses", "anthropic": "/v1/messages",
			"gemini": "/v1beta/models/gemini-2.5-flash:generateContent", "ollama": "/api/chat", "bedrock": "/model/us.anthropic.claude-sonnet-4-v1%3A0/converse"}[dir]
		r, _ := http.NewRequest(http.MethodPost, "http://provider.test"+path, bytes.NewReader(req))
		got, err := (&http.Client{Transport: httpguard.New(up, httpguard.ToolArgValidation())}).Do(r)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(got.Body)
		if n != 1 || !bytes.Equal(b, resp) || !strings.Contains(string(b), "Lyon") {
			t.Errorf("%s: %d upstream requests; answer changed: %v", dir, n, !bytes.Equal(b, resp))
		}
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
