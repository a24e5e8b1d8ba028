package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	fp "github.com/toolguard/toolguard/httpguard/fakeprovider"
)

// The MCP server of the tests: a go-sdk server whose tools are added raw
// (Server.AddTool: it validates neither arguments nor results), served
// over Streamable HTTP on mcpPath, a path that does not look like MCP,
// behind a recorder of every POST body it receives.
//
//	forecast(city, days int ≥ 1)  {"temp": 21.5}
//	bad_output()                  {"temp": "warm"}, against an outputSchema wanting a number
const mcpPath = "/api/v2/agents/rpc"

const (
	forecastSchema = `{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer","minimum":1}},` +
		`"required":["city","days"],"additionalProperties":false}`
	tempSchema = `{"type":"object","properties":{"temp":{"type":"number"}},"required":["temp"]}`
)

// mcpRecorder keeps the body and headers of every POST the server received.
type mcpRecorder struct {
	mu      sync.Mutex
	bodies  []string
	headers []http.Header
}

// received returns the bodies received whose method is method.
func (rec *mcpRecorder) received(method string) []string {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var out []string
	for _, b := range rec.bodies {
		var m struct{ Method string }
		if json.Unmarshal([]byte(b), &m) == nil && m.Method == method {
			out = append(out, b)
		}
	}
	return out
}

func (rec *mcpRecorder) all() []string {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return slices.Clone(rec.bodies)
}

// newMCPServer starts the test server; JSON answers when json, else
// server-sent events.
func newMCPServer(t *testing.T, jsonResponse bool) (*httptest.Server, *mcpRecorder) {
	t.Helper()
	return newMCPServerWith(t, &mcp.StreamableHTTPOptions{JSONResponse: jsonResponse})
}

// newMCPServerWith is newMCPServer with the handler's options o.
func newMCPServerWith(t *testing.T, o *mcp.StreamableHTTPOptions) (*httptest.Server, *mcpRecorder) {
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
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, o)
	rec := &mcpRecorder{}
	mux := http.NewServeMux()
	mux.Handle(mcpPath, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			b, _ := io.ReadAll(r.Body)
			rec.mu.Lock()
			rec.bodies = append(rec.bodies, string(b))
			rec.headers = append(rec.headers, r.Header.Clone())
			rec.mu.Unlock()
			r.Body = io.NopCloser(bytes.NewReader(b))
		}
		h.ServeHTTP(w, r)
	}))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv, rec
}

// connectMCP connects a go-sdk client to endpoint over Streamable HTTP,
// with the headers header (name, value pairs) on every request.
func connectMCP(t *testing.T, endpoint string, header ...string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "v1"}, nil)
	cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{
		Endpoint:   endpoint,
		HTTPClient: &http.Client{Transport: headerTransport{header}},
		MaxRetries: -1,
	}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("Connect(%s): %v", endpoint, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// headerTransport adds headers (name, value pairs) to every request.
type headerTransport struct{ header []string }

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for i := 0; i+1 < len(h.header); i += 2 {
		r.Header.Set(h.header[i], h.header[i+1])
	}
	return http.DefaultTransport.RoundTrip(r)
}

// toolText returns the text of a result's content.
func toolText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// callArguments returns the "arguments" of each tools/call body.
func callArguments(t *testing.T, bodies []string) []string {
	t.Helper()
	out := make([]string, len(bodies))
	for i, b := range bodies {
		var m struct {
			Params struct{ Arguments json.RawMessage }
		}
		if err := json.Unmarshal([]byte(b), &m); err != nil {
			t.Fatalf("tools/call body %q: %v", b, err)
		}
		out[i] = string(m.Params.Arguments)
	}
	return out
}

const forecastFeedback = "Invalid arguments for tool \"forecast\": 1 error.\n- /days: expected a number >= 1, got 0\nCall forecast again with corrected arguments."

// The proxy guards the MCP requests it forwards, on any path: a bad call
// is answered with the feedback and never reaches the server, the good
// one reaches it once, a result breaking its outputSchema is withheld, and
// tools/list is fetched once for the session; JSON and server-sent events
// alike. With -mcp off the bad call reaches the server.
func TestMCPThroughProxy(t *testing.T) {
	t.Parallel()
	for _, jsonResponse := range []bool{true, false} {
		name := map[bool]string{true: "json", false: "sse"}[jsonResponse]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv, rec := newMCPServer(t, jsonResponse)
			p := startProxy(t, srv.URL)
			cs := connectMCP(t, p.URL+mcpPath)

			bad, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "forecast", Arguments: map[string]any{"city": "Paris", "days": 0}})
			if err != nil {
				t.Fatalf("CallTool(bad): %v", err)
			}
			if !bad.IsError || toolText(bad) != forecastFeedback {
				t.Errorf("CallTool(bad) = isError %v, %q; want isError true, %q", bad.IsError, toolText(bad), forecastFeedback)
			}
			if got := rec.received("tools/call"); len(got) != 0 {
				t.Errorf("the server received %q after the bad call, want nothing", got)
			}
			good, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "forecast", Arguments: map[string]any{"city": "Paris", "days": 3}})
			if err != nil {
				t.Fatalf("CallTool(good): %v", err)
			}
			if good.IsError || toolText(good) != `{"temp":21.5}` {
				t.Errorf("CallTool(good) = isError %v, %q; want the tool's result", good.IsError, toolText(good))
			}
			if got := callArguments(t, rec.received("tools/call")); !slices.Equal(got, []string{`{"city":"Paris","days":3}`}) {
				t.Errorf("the server received the arguments %q, want the good call's once", got)
			}
			out, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "bad_output", Arguments: map[string]any{}})
			if err != nil {
				t.Fatalf("CallTool(bad_output): %v", err)
			}
			if !out.IsError || !strings.Contains(toolText(out), "does not match its outputSchema") {
				t.Errorf("CallTool(bad_output) = isError %v, %q; want the result withheld", out.IsError, toolText(out))
			}
			if lists := rec.received("tools/list"); len(lists) != 1 {
				t.Errorf("the server received %d tools/list, want 1 for the session: %q", len(lists), lists)
			}
			if ev := p.waitLog(t, "toolguard: invalid", 1); len(ev) != 1 || ev[0]["middleware"] != "mcpguard" || ev[0]["tool"] != "forecast" {
				t.Errorf("invalid events logged: %v, want one of mcpguard for forecast", ev)
			}
		})
	}

	t.Run("off", func(t *testing.T) {
		t.Parallel()
		srv, rec := newMCPServer(t, true)
		p := startProxy(t, srv.URL, "-mcp", "off")
		cs := connectMCP(t, p.URL+mcpPath)
		if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "forecast", Arguments: map[string]any{"city": "Paris", "days": 0}}); err != nil {
			t.Fatalf("CallTool: %v", err)
		}
		if got := callArguments(t, rec.received("tools/call")); !slices.Equal(got, []string{`{"city":"Paris","days":0}`}) {
			t.Errorf("with -mcp off the server received %q, want the call as sent", got)
		}
	})
}

// What mcpguard does not guard passes through the proxy byte for byte,
// both ways: a malformed JSON-RPC body, a batch, a request of another
// method; a model request that mentions "jsonrpc" is not taken for MCP.
func TestMCPPassesThroughProxy(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got []string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, string(b))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"echo" : ` + strconvQuote(string(b)) + `}`))
	}))
	defer up.Close()
	p := startProxy(t, up.URL)
	bodies := []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"}, {"jsonrpc":"2.0","method":"notifications/initialized"}]`,
		`{"jsonrpc":"2.0", "id":"x", "method":"resources/read","params":{"uri":"file:///a"} , "extra":[1.50]}`,
		`{"model":"gpt-4o","messages":[{"role":"user","content":"what is \"jsonrpc\"?"}]}`,
	}
	for _, b := range bodies {
		resp, body := post(t, p.URL+"/rpc", b)
		want := `{"echo" : ` + strconvQuote(b) + `}`
		if resp.StatusCode != 200 || string(body) != want {
			t.Errorf("POST %s: %d %s, want 200 %s", b, resp.StatusCode, body, want)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(got, bodies) {
		t.Errorf("upstream received\n%q\nwant\n%q", got, bodies)
	}
}

func strconvQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// An MCP request through a proxy with -auth-keys is authenticated like
// any other: without a key it is refused 401 and reaches nobody; with one
// the server gets the provider's key in its place.
func TestMCPAuthenticated(t *testing.T) {
	t.Parallel()
	srv, rec := newMCPServer(t, true)
	p := startAuthProxy(t, srv.URL)
	c := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "v1"}, nil)
	if _, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: p.URL + mcpPath, MaxRetries: -1}, nil); err == nil || !strings.Contains(err.Error(), "Unauthorized") {
		t.Errorf("Connect without a key: %v, want 401 Unauthorized", err)
	}
	if n := len(rec.all()); n != 0 {
		t.Errorf("the server received %d requests without a key, want 0", n)
	}
	cs := connectMCP(t, p.URL+mcpPath, "Authorization", "Bearer "+keyA)
	bad, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "forecast", Arguments: map[string]any{"city": "Paris", "days": 0}})
	if err != nil || !bad.IsError {
		t.Fatalf("CallTool(bad) = %v, %v; want an isError result", bad, err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, h := range rec.headers {
		if h.Get("Authorization") != "Bearer "+providerKey {
			t.Errorf("the server got Authorization %q, want the provider's key", h.Get("Authorization"))
		}
	}
}

// -mcp-session-limit caps the tools/calls of an MCP session: the call past
// it is answered isError and never reaches the server.
func TestMCPSessionLimit(t *testing.T) {
	t.Parallel()
	srv, rec := newMCPServer(t, true)
	p := startProxy(t, srv.URL, "-mcp-session-limit", "1")
	cs := connectMCP(t, p.URL+mcpPath)
	for i, want := range []bool{false, true} {
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "forecast", Arguments: map[string]any{"city": "Paris", "days": 2}})
		if err != nil {
			t.Fatalf("CallTool %d: %v", i, err)
		}
		if res.IsError != want {
			t.Errorf("CallTool %d: isError %v (%q), want %v", i, res.IsError, toolText(res), want)
		}
		if want && !strings.Contains(toolText(res), "at most 1 tool call is allowed per MCP session") {
			t.Errorf("CallTool %d: %q, want the session limit named", i, toolText(res))
		}
	}
	if n := len(rec.received("tools/call")); n != 1 {
		t.Errorf("the server received %d tools/call, want 1", n)
	}
}

// -upstream-mcp takes the MCP requests, on any path and whatever headers
// they carry, and nothing else; with -auth-keys it gets the key of
// -upstream-mcp-key-env, never -upstream's.
func TestMCPUpstream(t *testing.T) {
	t.Parallel()
	srv, rec := newMCPServer(t, true)
	var modelGot []string
	var mu sync.Mutex
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		modelGot = append(modelGot, r.URL.Path+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"Hi."},"finish_reason":"stop"}]}`))
	}))
	defer model.Close()
	const mcpKey, mcpEnv = "mcp-SERVER-key", "TEST_MCP_KEY"
	env := envOf(map[string]string{providerEnv: providerKey, mcpEnv: mcpKey}, nil)
	p := startProxyEnv(t, env, nil, model.URL, "-auth-keys", writeKeys(t, keyFile), "-upstream-key-env", providerEnv,
		"-upstream-mcp", srv.URL, "-upstream-mcp-key-env", mcpEnv)

	cs := connectMCP(t, p.URL+mcpPath, "Authorization", "Bearer "+keyA, "Anthropic-Version", "2023-06-01")
	bad, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "forecast", Arguments: map[string]any{"city": "Paris", "days": 0}})
	if err != nil || !bad.IsError || toolText(bad) != forecastFeedback {
		t.Fatalf("CallTool(bad) = %v, %v; want the feedback", bad, err)
	}
	resp, body := post(t, p.URL+"/v1/chat/completions", chatBody, "Authorization", "Bearer "+keyA)
	if resp.StatusCode != 200 {
		t.Fatalf("chat: %d %s", resp.StatusCode, body)
	}
	rec.mu.Lock()
	for _, h := range rec.headers {
		if h.Get("Authorization") != "Bearer "+mcpKey {
			t.Errorf("the MCP server got Authorization %q, want -upstream-mcp-key-env's key", h.Get("Authorization"))
		}
	}
	n := len(rec.bodies)
	rec.mu.Unlock()
	if n == 0 {
		t.Error("the MCP server received nothing")
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"/v1/chat/completions Bearer " + providerKey}; !slices.Equal(modelGot, want) {
		t.Errorf("-upstream received %q, want only the chat request, with its key", modelGot)
	}
}

// With -auth-keys, a stateless MCP server's sessions (no Mcp-Session-Id:
// one per endpoint and credentials) are each client key's, though the
// server gets one provider key for all: -mcp-session-limit counts each
// tenant's calls apart.
func TestMCPTenantsOfStatelessServer(t *testing.T) {
	t.Parallel()
	srv, rec := newMCPServerWith(t, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	p := startAuthProxy(t, srv.URL, "-mcp-session-limit", "1")
	for _, key := range []string{keyA, keyB} {
		cs := connectMCP(t, p.URL+mcpPath, "Authorization", "Bearer "+key)
		for i, want := range []bool{false, true} {
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "forecast", Arguments: map[string]any{"city": "Paris", "days": 2}})
			if err != nil {
				t.Fatalf("key %s, CallTool %d: %v", key, i, err)
			}
			if res.IsError != want {
				t.Errorf("key %s, CallTool %d: isError %v (%q), want %v", key, i, res.IsError, toolText(res), want)
			}
		}
	}
	if n := len(rec.received("tools/call")); n != 2 {
		t.Errorf("the server received %d tools/call, want 2 (one per tenant)", n)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, h := range rec.headers {
		if h.Get("Authorization") != "Bearer "+providerKey {
			t.Errorf("the server got Authorization %q, want the provider's key", h.Get("Authorization"))
		}
	}
}

// A model request stays the model guard's however it is dressed: with a
// "jsonrpc" member, or an MCP session's header, a bad call is still
// re-asked (the upstream gets the request twice) and never passed as an
// MCP request would be.
func TestMCPForgedModelRequest(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, body string
		header     []string
	}{
		{"jsonrpc member", strings.Replace(chatBody, `{"model"`, `{"jsonrpc":"2.0","method":"tools/list","model"`, 1), nil},
		{"mcp header", chatBody, []string{"Mcp-Session-Id", "forged", "Mcp-Protocol-Version", "2025-11-25"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			up := fp.New(
				fp.Reply(fp.Call("get_weather", `{"city": 42}`)),
				fp.Reply(fp.Call("get_weather", `{"city": "Paris"}`)),
			)
			defer up.Close()
			p := startProxy(t, up.URL)
			resp, body := post(t, p.URL+"/v1/chat/completions", tc.body, tc.header...)
			if resp.StatusCode != 200 || !strings.Contains(string(body), `Paris`) {
				t.Errorf("POST: %d %s, want the corrected call", resp.StatusCode, body)
			}
			if n := len(up.Requests()); n != 2 {
				t.Errorf("the upstream got %d requests, want 2 (the bad call re-asked)", n)
			}
		})
	}
}

// BenchmarkSniffMCP measures what -mcp on adds to each request before the
// transport: the body read once more (a model request's, or an MCP
// message's) and looked at for a "jsonrpc" member.
//
//	go test -run '^$' -bench BenchmarkSniffMCP -benchmem ./cmd/toolguard-proxy
func BenchmarkSniffMCP(b *testing.B) {
	for _, tc := range []struct{ name, path, body string }{
		{"model-path", "/v1/chat/completions", chatBody},
		{"other-path", "/v1/other", chatBody},
		{"jsonrpc", mcpPath, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"forecast","arguments":{"city":"Paris","days":3}}}`},
	} {
		b.Run(tc.name, func(b *testing.B) {
			s := &server{cfg: config{mcp: true}}
			var got bool
			h := s.sniffMCP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got = isMCP(r.Context())
				_, _ = io.Copy(io.Discard, r.Body)
			}))
			w := httptest.NewRecorder()
			b.ReportAllocs()
			b.SetBytes(int64(len(tc.body)))
			for b.Loop() {
				r := httptest.NewRequest(http.MethodPost, tc.path, strings.NewReader(tc.body))
				h.ServeHTTP(w, r)
			}
			if got != (tc.name == "jsonrpc") {
				b.Fatalf("isMCP = %v for %s", got, tc.name)
			}
		})
	}
}

// A JSON-RPC body on a path of any protocol httpguard guards is a model
// request, never MCP: one the Transport knows (Ollama's /api/chat and
// Bedrock's converse among them) cannot be taken out of httpguard's stages by a "jsonrpc" member.
func TestMCPSniffLeavesModelPaths(t *testing.T) {
	t.Parallel()
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","model":"m","messages":[]}`
	for _, path := range []string{
		"/v1/chat/completions", "/v1/responses", "/v1/messages",
		"/v1beta/models/gemini-2.5-flash:generateContent", "/api/chat",
		"/model/anthropic.claude-sonnet-4-v1:0/converse", "/model/anthropic.claude-sonnet-4-v1:0/converse-stream",
	} {
		s := &server{cfg: config{mcp: true}}
		var got bool
		h := s.sniffMCP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			got = isMCP(r.Context())
			_, _ = io.Copy(io.Discard, r.Body)
		}))
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, path, strings.NewReader(body)))
		if got {
			t.Errorf("POST %s with a JSON-RPC body was taken for MCP, want the model guard's", path)
		}
	}
}
