package sdktest

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

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/mcpguard"
)

const forecastSchema = `{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer","minimum":1}},` +
	`"required":["city","days"],"additionalProperties":false}`

const tempSchema = `{"type":"object","properties":{"temp":{"type":"number"}},"required":["temp"]}`

// recorder keeps the body of every POST the server received.
type recorder struct {
	mu     sync.Mutex
	bodies []string
}

func (rec *recorder) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			b, _ := io.ReadAll(r.Body)
			rec.mu.Lock()
			rec.bodies = append(rec.bodies, string(b))
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
		if json.Unmarshal([]byte(b), &m) == nil && m.Method == method {
			out = append(out, b)
		}
	}
	return out
}

// newServer starts an mcp-go server over Streamable HTTP with two raw
// tools, neither checked by mcp-go: forecast(city, days ≥ 1) returns
// {"temp": 21.5}; bad_output returns {"temp": "warm"} against an
// outputSchema wanting a number.
func newServer(t *testing.T) (*httptest.Server, *recorder) {
	t.Helper()
	s := server.NewMCPServer("weather", "v1", server.WithToolCapabilities(false))
	forecast := mcp.NewToolWithRawSchema("forecast", "the forecast", json.RawMessage(forecastSchema))
	forecast.RawOutputSchema = json.RawMessage(tempSchema)
	badOutput := mcp.NewToolWithRawSchema("bad_output", "breaks its outputSchema", json.RawMessage(`{"type":"object"}`))
	badOutput.RawOutputSchema = json.RawMessage(tempSchema)
	s.AddTool(forecast,
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultStructured(map[string]any{"temp": 21.5}, `{"temp":21.5}`), nil
		})
	s.AddTool(badOutput,
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultStructured(map[string]any{"temp": "warm"}, `{"temp":"warm"}`), nil
		})
	rec := &recorder{}
	srv := httptest.NewServer(rec.wrap(server.NewStreamableHTTPServer(s)))
	t.Cleanup(srv.Close)
	return srv, rec
}

// era is a protocol era of the mcp-go client.
type era struct {
	name string
	opts []client.ClientOption
}

var eras = []era{
	{"sessions 2025-11-25", []client.ClientOption{client.WithProtocolVersion("2025-11-25")}},
	{"stateless 2026-07-28", nil},
}

// connect returns an initialized mcp-go client of srv through rt.
func connect(t *testing.T, srv *httptest.Server, e era, rt http.RoundTripper) *client.Client {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(srv.URL, transport.WithHTTPBasicClient(&http.Client{Transport: rt}))
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr, e.opts...)
	t.Cleanup(func() { c.Close() })
	if err := c.Start(t.Context()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: "client", Version: "v1"}
	if _, err := c.Initialize(t.Context(), init); err != nil {
		t.Fatalf("Initialize: %v", err)
	}
	return c
}

func call(t *testing.T, c *client.Client, tool string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = tool, args
	res, err := c.CallTool(t.Context(), req)
	if err != nil {
		t.Fatalf("CallTool(%s): %v", tool, err)
	}
	return res
}

// text returns the text of a result's content.
func text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// events collects a transport's events.
type events struct {
	mu    sync.Mutex
	kinds []string
}

func (e *events) handler(_ context.Context, ev guard.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.kinds = append(e.kinds, string(ev.Kind))
}

func (e *events) all() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return strings.Join(e.kinds, ",")
}

// A bad call is answered by the transport with toolguard's feedback as an
// isError result, and never reaches the server; the corrected call
// reaches it once.
func TestMCPGoBadThenGoodCall(t *testing.T) {
	for _, e := range eras {
		t.Run(e.name, func(t *testing.T) {
			srv, rec := newServer(t)
			var ev events
			c := connect(t, srv, e, mcpguard.New(srv.Client().Transport, mcpguard.WithEventHandler(ev.handler)))

			bad := call(t, c, "forecast", map[string]any{"city": "Paris", "days": 0})
			want := "Invalid arguments for tool \"forecast\": 1 error.\n- /days: expected a number >= 1, got 0\nCall forecast again with corrected arguments."
			if !bad.IsError || text(bad) != want {
				t.Errorf("the bad call = isError %v %q, want isError true %q", bad.IsError, text(bad), want)
			}
			if got := rec.received("tools/call"); len(got) != 0 {
				t.Fatalf("the server received %q after the bad call, want nothing", got)
			}
			good := call(t, c, "forecast", map[string]any{"city": "Paris", "days": 3})
			if good.IsError || text(good) != `{"temp":21.5}` {
				t.Errorf("the good call = isError %v %q, want the tool's result", good.IsError, text(good))
			}
			calls := rec.received("tools/call")
			if len(calls) != 1 || !strings.Contains(calls[0], `"arguments":{"city":"Paris","days":3}`) {
				t.Errorf("the server received %q, want the good call once", calls)
			}
			if ev.all() != "invalid" {
				t.Errorf("events %s, want invalid", ev.all())
			}
			inits, discovers := len(rec.received("initialize")), len(rec.received("server/discover"))
			if stateless := strings.HasPrefix(e.name, "stateless"); stateless && (inits != 0 || discovers == 0) || !stateless && inits != 1 {
				t.Errorf("the server received %d initialize and %d server/discover: not the %s era", inits, discovers, e.name)
			}
			t.Logf("server received: %s", calls)
			t.Logf("client read for the bad call: isError=%v %q", bad.IsError, text(bad))
		})
	}
}

// A result whose structuredContent breaks the tool's outputSchema is
// withheld: the client reads an isError result naming the violation.
func TestMCPGoOutputSchemaViolation(t *testing.T) {
	for _, e := range eras {
		t.Run(e.name, func(t *testing.T) {
			srv, _ := newServer(t)
			var ev events
			c := connect(t, srv, e, mcpguard.New(srv.Client().Transport, mcpguard.WithEventHandler(ev.handler)))
			res := call(t, c, "bad_output", map[string]any{})
			if !res.IsError || !strings.Contains(text(res), "/temp: ") || res.StructuredContent != nil {
				t.Errorf("= isError %v %q structuredContent %v; want an isError result naming /temp and no structuredContent",
					res.IsError, text(res), res.StructuredContent)
			}
			if ev.all() != string(mcpguard.EventInvalidResult) {
				t.Errorf("events %s, want invalid_result", ev.all())
			}
			t.Logf("client read: isError=%v %q", res.IsError, text(res))
		})
	}
}

// tools/list is fetched by the transport once per session however many
// calls the session makes (a new session fetches again; the stateless
// era has no session: one fetch for the endpoint and credentials).
func TestMCPGoToolsListOncePerSession(t *testing.T) {
	for _, e := range eras {
		t.Run(e.name, func(t *testing.T) {
			srv, rec := newServer(t)
			rt := mcpguard.New(srv.Client().Transport)
			for range 2 {
				c := connect(t, srv, e, rt)
				for range 3 {
					call(t, c, "forecast", map[string]any{"city": "Oslo", "days": 2})
				}
			}
			lists, calls := len(rec.received("tools/list")), len(rec.received("tools/call"))
			want := 2
			if strings.HasPrefix(e.name, "stateless") {
				want = 1
			}
			if lists != want || calls != 6 {
				t.Errorf("the server received %d tools/list and %d tools/call, want %d and 6", lists, calls, want)
			}
			t.Logf("2 sessions, 6 calls: tools/list fetched %d times", lists)
		})
	}
}
