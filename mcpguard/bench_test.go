package mcpguard_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/mcpguard"
)

// benchCall is the tools/call of the benchmarks, as go-sdk's client writes
// it, and benchResult its tool's result.
const (
	benchCall   = `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"forecast","arguments":{"city":"Paris","days":3,"units":"C"}}}`
	benchResult = `{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"{\"temp\":21.5}"}],"structuredContent":{"temp":21.5}}}`
	benchList   = `{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"forecast","inputSchema":` + forecastSchema + `,"outputSchema":` + tempSchema + `}]}}`
)

// BenchmarkToolsCall measures one valid tools/call (input and output
// schemas both checked) through the go-sdk client and server over
// loopback, directly and through the transport; the difference is the
// transport's overhead per call.
func BenchmarkToolsCall(b *testing.B) {
	for _, mode := range []serverMode{{"sessions/json", false, true}, {"sessions/sse", false, false}} {
		for _, guarded := range []bool{false, true} {
			name := mode.name + "/direct"
			if guarded {
				name = mode.name + "/guarded"
			}
			b.Run(name, func(b *testing.B) {
				srv, _ := newBenchServer(b, mode)
				var rt http.RoundTripper = srv.Client().Transport
				if guarded {
					rt = mcpguard.New(rt)
				}
				c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "v1"}, nil)
				cs, err := c.Connect(b.Context(), &mcp.StreamableClientTransport{Endpoint: srv.URL,
					HTTPClient: &http.Client{Transport: rt}, DisableStandaloneSSE: true}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
				if err != nil {
					b.Fatal(err)
				}
				defer cs.Close()
				params := &mcp.CallToolParams{Name: "forecast", Arguments: map[string]any{"city": "Paris", "days": 3, "units": "C"}}
				if _, err := cs.CallTool(b.Context(), params); err != nil { // the transport learns the tool
					b.Fatal(err)
				}
				b.ReportAllocs()
				stop := reportCPU(b)
				for b.Loop() {
					res, err := cs.CallTool(b.Context(), params)
					if err != nil || res.IsError {
						b.Fatalf("CallTool = %v, %v", res, err)
					}
				}
				stop()
			})
		}
	}
}

// newBenchServer is newServer for a benchmark.
func newBenchServer(b *testing.B, mode serverMode) (*httptest.Server, *mcp.Server) {
	s := mcp.NewServer(&mcp.Implementation{Name: "weather", Version: "v1"}, nil)
	s.AddTool(&mcp.Tool{Name: "forecast", InputSchema: json.RawMessage(forecastSchema), OutputSchema: json.RawMessage(tempSchema)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: `{"temp":21.5}`}},
				StructuredContent: map[string]any{"temp": 21.5}}, nil
		})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
		&mcp.StreamableHTTPOptions{Stateless: mode.stateless, JSONResponse: mode.json}))
	b.Cleanup(srv.Close)
	return srv, s
}

// BenchmarkTransport measures the transport alone on one tools/call and
// its JSON result, against a base that answers at once (no network, no
// SDK): passthrough is the base by itself, guarded the same through
// mcpguard.New; the difference is what the transport adds. guarded+limit
// adds a session limit (WithCallLimit) in a MemoryThreadStore.
func BenchmarkTransport(b *testing.B) {
	base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		body, _ := io.ReadAll(r.Body)
		r.Body.Close()
		out := benchResult
		if bytes.Contains(body, []byte(`"tools/list"`)) {
			out = benchList
		}
		return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(bytes.NewReader([]byte(out))), Request: r}, nil
	})
	for _, tc := range []struct {
		name string
		rt   http.RoundTripper
	}{
		{"passthrough", base},
		{"guarded", mcpguard.New(base)},
		// A session limit never reached, counted in a MemoryThreadStore.
		{"guarded+limit", mcpguard.New(base, mcpguard.WithCallLimit(mcpguard.PerSession, guard.WithThreadLimit(1<<30)))},
	} {
		rt := tc.rt
		b.Run(tc.name, func(b *testing.B) {
			list, _ := http.NewRequest(http.MethodPost, "http://mcp.test/mcp", bytes.NewReader([]byte(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)))
			if resp, err := rt.RoundTrip(list); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			b.ReportAllocs()
			stop := reportCPU(b)
			for b.Loop() {
				req, _ := http.NewRequest(http.MethodPost, "http://mcp.test/mcp", bytes.NewReader([]byte(benchCall)))
				req.Header.Set("Content-Type", "application/json")
				resp, err := rt.RoundTrip(req)
				if err != nil {
					b.Fatal(err)
				}
				out, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if !bytes.Equal(out, []byte(benchResult)) {
					b.Fatalf("result %s", out)
				}
			}
			stop()
		})
	}
}

// BenchmarkDecodeMessage is the yardstick: decoding the tools/call and its
// result with encoding/json, as any JSON-RPC peer must.
func BenchmarkDecodeMessage(b *testing.B) {
	b.ReportAllocs()
	stop := reportCPU(b)
	for b.Loop() {
		var call, result any
		if err := json.Unmarshal([]byte(benchCall), &call); err != nil {
			b.Fatal(err)
		}
		if err := json.Unmarshal([]byte(benchResult), &result); err != nil {
			b.Fatal(err)
		}
	}
	stop()
}

// reportCPU reports, as cpu-ns/op, the CPU time the process spent (user and
// system, every goroutine: client, transport, server and the garbage
// collector) per iteration of the loop run between it and the call of the
// stop it returns. On a shared machine it moves far less than ns/op, which
// also counts the time other processes hold the cores: the difference of
// guarded and direct in cpu-ns/op is the transport's cost per call. Where
// the CPU time cannot be read (processCPU) nothing is reported.
func reportCPU(b *testing.B) (stop func()) {
	start, ok := processCPU()
	return func() {
		end, ok2 := processCPU()
		if ok && ok2 && b.N > 0 {
			b.ReportMetric(float64(end-start)/float64(b.N), "cpu-ns/op")
		}
	}
}
