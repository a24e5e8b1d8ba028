package mcpguard_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/mcpguard"
)

// The test server: a go-sdk server whose tools are added raw
// (Server.AddTool), which does not validate arguments or results itself,
// behind a recorder of every request body it receives.
//
//	forecast(city, days int ≥ 1, units? "C"|"F")  {"temp": 21.5}
//	bad_output(city)                               {"temp": "warm"}, against an outputSchema wanting a number
//	bad_schema(u)                                  an inputSchema toolguard cannot compile ($ref to http://)
//	echo(text)                                     no outputSchema; echoes its arguments

const forecastSchema = `{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer","minimum":1},` +
	`"units":{"type":"string","enum":["C","F"]}},"required":["city","days"],"additionalProperties":false}`

const tempSchema = `{"type":"object","properties":{"temp":{"type":"number"}},"required":["temp"]}`

const badSchema = `{"type":"object","properties":{"u":{"$ref":"http://example.com/u.json"}}}`

// recorder keeps the body of every POST the server received.
type recorder struct {
	mu     sync.Mutex
	bodies [][]byte
}

func (rec *recorder) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			b, _ := io.ReadAll(r.Body)
			rec.mu.Lock()
			rec.bodies = append(rec.bodies, b)
			rec.mu.Unlock()
			r.Body = io.NopCloser(bytes.NewReader(b))
		}
		h.ServeHTTP(w, r)
	})
}

// received returns the bodies received whose method is method.
func (rec *recorder) received(method string) []string {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var out []string
	for _, b := range rec.bodies {
		var m struct {
			Method string `json:"method"`
		}
		if json.Unmarshal(b, &m) == nil && m.Method == method {
			out = append(out, string(b))
		}
	}
	return out
}

// all returns every body received.
func (rec *recorder) all() []string {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	out := make([]string, len(rec.bodies))
	for i, b := range rec.bodies {
		out[i] = string(b)
	}
	return out
}

// serverMode is how the go-sdk server answers: sessions (initialize,
// Mcp-Session-Id) or stateless (2026-07-28, server/discover), in JSON or
// server-sent events.
type serverMode struct {
	name      string
	stateless bool
	json      bool
}

var modes = []serverMode{
	{"sessions/sse", false, false},
	{"sessions/json", false, true},
	{"stateless/sse", true, false},
	{"stateless/json", true, true},
}

func newServer(t *testing.T, mode serverMode) (*httptest.Server, *recorder) {
	t.Helper()
	srv, rec, _ := newMCPServer(t, mode)
	return srv, rec
}

// newMCPServer is newServer that also returns the go-sdk server, for a
// test that changes its tools.
func newMCPServer(t *testing.T, mode serverMode) (*httptest.Server, *recorder, *mcp.Server) {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "weather", Version: "v1"}, nil)
	s.AddTool(&mcp.Tool{Name: "forecast", InputSchema: json.RawMessage(forecastSchema), OutputSchema: json.RawMessage(tempSchema)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: `{"temp":21.5}`}},
				StructuredContent: map[string]any{"temp": 21.5}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "bad_output", InputSchema: json.RawMessage(`{"type":"object"}`), OutputSchema: json.RawMessage(tempSchema)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: `{"temp":"warm"}`}},
				StructuredContent: map[string]any{"temp": "warm"}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "bad_schema", InputSchema: json.RawMessage(badSchema)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ran"}}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "echo", InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(req.Params.Arguments)}}}, nil
		})
	rec := &recorder{}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
		&mcp.StreamableHTTPOptions{Stateless: mode.stateless, JSONResponse: mode.json})
	srv := httptest.NewServer(rec.wrap(h))
	t.Cleanup(srv.Close)
	return srv, rec, s
}

// events collects the events of a transport.
type events struct {
	mu  sync.Mutex
	all []guard.Event
}

func (e *events) handler(_ context.Context, ev guard.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.all = append(e.all, ev)
}

func (e *events) kinds() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]string, len(e.all))
	for i, ev := range e.all {
		out[i] = string(ev.Kind)
	}
	return out
}

// connect returns a go-sdk client session to srv through mcpguard.New.
// Sessions use protocol 2025-11-25 (initialize); stateless servers the
// SDK's latest (server/discover).
func connect(t *testing.T, srv *httptest.Server, mode serverMode, opts ...mcpguard.Option) *mcp.ClientSession {
	t.Helper()
	return connectVia(t, srv, mode, mcpguard.New(srv.Client().Transport, opts...), nil)
}

// connectVia returns a go-sdk client session to srv through rt, with the
// client's options co.
func connectVia(t *testing.T, srv *httptest.Server, mode serverMode, rt http.RoundTripper, co *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	var so *mcp.ClientSessionOptions
	if !mode.stateless {
		so = &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "v1"}, co)
	cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{
		Endpoint:   srv.URL,
		HTTPClient: &http.Client{Transport: rt},
		MaxRetries: -1,
	}, so)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// text returns the text of a result's content.
func text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// arguments returns the "arguments" of each tools/call body, as received.
func arguments(t *testing.T, bodies []string) []string {
	t.Helper()
	out := make([]string, len(bodies))
	for i, b := range bodies {
		var m struct {
			Params struct {
				Arguments json.RawMessage `json:"arguments"`
			} `json:"params"`
		}
		if err := json.Unmarshal([]byte(b), &m); err != nil {
			t.Fatalf("tools/call body %q: %v", b, err)
		}
		out[i] = string(m.Params.Arguments)
	}
	return out
}

// fetched returns the tools/list requests the transport sent itself (its
// ids begin with "mcpguard-").
func fetched(rec *recorder) []string {
	var out []string
	for _, b := range rec.received("tools/list") {
		if strings.Contains(b, `"id":"mcpguard-`) {
			out = append(out, b)
		}
	}
	return out
}
