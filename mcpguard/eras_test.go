package mcpguard_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/toolguard/toolguard/mcpguard"
)

// rawServer is an MCP server written by hand: it records each POST's body
// and headers and answers tools/list with one tool (an outputSchema
// wanting {"temp": number}), tools/call with callResult, and anything else
// with answer.
type rawServer struct {
	mu         sync.Mutex
	bodies     []string
	headers    []http.Header
	callResult string
}

const rawAnswer = `{"jsonrpc":"2.0","id":"x","result":{"served":"by the server"}}`

func (s *rawServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.bodies = append(s.bodies, string(b))
	s.headers = append(s.headers, r.Header.Clone())
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Served", "raw")
	switch {
	case bytes.Contains(b, []byte(`"tools/list"`)):
		io.WriteString(w, `{"jsonrpc":"2.0","id":`+idOf(b)+`,"result":{"tools":[{"name":"ask","inputSchema":{"type":"object"},`+
			`"outputSchema":{"type":"object","properties":{"temp":{"type":"number"}},"required":["temp"]}}]}}`)
	case bytes.Contains(b, []byte(`"tools/call"`)):
		io.WriteString(w, strings.Replace(s.callResult, "ID", idOf(b), 1))
	default:
		io.WriteString(w, rawAnswer)
	}
}

// idOf returns the raw id of a request body written as the tests write
// them.
func idOf(b []byte) string {
	_, rest, _ := bytes.Cut(b, []byte(`"id":`))
	end := bytes.IndexAny(rest, ",}")
	return string(rest[:end])
}

func (s *rawServer) last() (string, http.Header) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bodies[len(s.bodies)-1], s.headers[len(s.headers)-1]
}

// The two protocol eras' headers: sessions (2025-11-25, after initialize:
// Mcp-Session-Id) and stateless (2026-07-28: no session; the version in
// every request's _meta and in MCP-Protocol-Version, the method in
// Mcp-Method).
var eras = []struct {
	name    string
	headers map[string]string
	meta    string // what a request's params begin with
}{
	{"sessions 2025-11-25", map[string]string{"Mcp-Session-Id": "s-1", "MCP-Protocol-Version": "2025-11-25"}, ""},
	{"stateless 2026-07-28", map[string]string{"MCP-Protocol-Version": "2026-07-28"},
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`},
}

// withMeta returns the params object {meta, rest} ({rest} without meta).
func withMeta(meta, rest string) string {
	switch {
	case meta == "":
		return "{" + rest + "}"
	case rest == "":
		return "{" + meta + "}"
	}
	return "{" + meta + "," + rest + "}"
}

// Everything but a tools/call passes byte-exact in both eras: the server
// receives the bytes the client sent, with its headers, and the client
// reads the bytes the server wrote; the transport reports nothing.
func TestBothErasPassByteExact(t *testing.T) {
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			s := &rawServer{}
			srv := httptest.NewServer(s)
			t.Cleanup(srv.Close)
			var ev events
			c := &http.Client{Transport: mcpguard.New(srv.Client().Transport, mcpguard.WithEventHandler(ev.handler))}
			m := era.meta
			bodies := []struct{ name, method, body string }{
				{"initialize", "initialize", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`},
				{"server/discover", "server/discover", `{"jsonrpc":"2.0","id":2,"method":"server/discover","params":` + withMeta(m, "") + `}`},
				{"initialized notification", "notifications/initialized", `{"jsonrpc":"2.0","method":"notifications/initialized"}`},
				{"cancelled notification", "notifications/cancelled", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"user"}}`},
				{"ping", "ping", `{"jsonrpc":"2.0","id":3,"method":"ping"}`},
				{"resources/list", "resources/list", `{"jsonrpc":"2.0","id":4,"method":"resources/list","params":` + withMeta(m, `"cursor":"c1"`) + `}`},
				{"resources/templates/list", "resources/templates/list", `{"jsonrpc":"2.0","id":5,"method":"resources/templates/list","params":` + withMeta(m, "") + `}`},
				{"resources/read", "resources/read", "{ \"jsonrpc\" : \"2.0\", \"id\" : \"r-6\",\n\t\"method\":\"resources/read\",\"params\":" + withMeta(m, `"uri":"file:///a%20b.txt"`) + "}\n"},
				{"resources/subscribe", "resources/subscribe", `{"jsonrpc":"2.0","id":7,"method":"resources/subscribe","params":` + withMeta(m, `"uri":"file:///x"`) + `}`},
				{"prompts/list", "prompts/list", `{"jsonrpc":"2.0","id":8,"method":"prompts/list","params":` + withMeta(m, "") + `}`},
				{"prompts/get", "prompts/get", `{"jsonrpc":"2.0","id":9,"method":"prompts/get","params":` + withMeta(m, `"name":"review","arguments":{"code":"x := \u003c-c"}`) + `}`},
				{"completion/complete", "completion/complete", `{"jsonrpc":"2.0","id":10,"method":"completion/complete","params":` + withMeta(m, `"ref":{"type":"ref/prompt","name":"review"},"argument":{"name":"code","value":"x"}`) + `}`},
				{"unknown method", "vendor/frobnicate", `{"jsonrpc":"2.0","id":11,"method":"vendor/frobnicate","params":{"name":"forecast","arguments":{"days":0}}}`},
				{"batch", "", `[{"jsonrpc":"2.0","id":12,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":13,"method":"prompts/list"}]`},
				{"a response to the server", "", `{"jsonrpc":"2.0","id":"srv-1","result":{"roots":[]}}`},
				{"malformed", "", `{"jsonrpc":"2.0","id":14,"method":"prompts/get","params":{"name":`},
			}
			for _, tc := range bodies {
				req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+"/mcp", strings.NewReader(tc.body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				for k, v := range era.headers {
					req.Header.Set(k, v)
				}
				if tc.method != "" && era.meta != "" {
					req.Header.Set("Mcp-Method", tc.method)
				}
				resp, err := c.Do(req)
				if err != nil {
					t.Fatalf("%s: %v", tc.name, err)
				}
				got, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				body, hdr := s.last()
				if body != tc.body {
					t.Errorf("%s: the server received %q, want %q", tc.name, body, tc.body)
				}
				for k := range req.Header {
					if !slices.Equal(hdr.Values(k), req.Header.Values(k)) {
						t.Errorf("%s: the server received %s: %q, want %q", tc.name, k, hdr.Values(k), req.Header.Values(k))
					}
				}
				if string(got) != rawAnswer || resp.Header.Get("X-Served") != "raw" {
					t.Errorf("%s: the client read %q, want the server's %q", tc.name, got, rawAnswer)
				}
			}
			if k := ev.kinds(); len(k) != 0 {
				t.Errorf("events %q, want none", k)
			}
			t.Logf("%d messages passed byte-exact", len(bodies))
		})
	}
}

// A tools/call answered with a 2026-07-28 input_required result (a multi
// round-trip request, SEP-2322: no structuredContent, since the tool has
// not run yet) reaches the client as the server wrote it, in both eras;
// a complete result without structuredContent is still withheld.
func TestInputRequiredResultPasses(t *testing.T) {
	inputRequired := `{"jsonrpc":"2.0","id":ID,"result":{"resultType":"input_required","inputRequests":{"city":{"method":"elicitation/create",` +
		`"params":{"message":"Which city?","requestedSchema":{"type":"object","properties":{"city":{"type":"string"}}}}}},"requestState":"opaque-1"}}`
	for _, era := range eras {
		for _, tc := range []struct {
			name, result string
			withheld     bool
		}{
			{"input_required", inputRequired, false},
			{"complete without structuredContent", `{"jsonrpc":"2.0","id":ID,"result":{"resultType":"complete","content":[]}}`, true},
		} {
			t.Run(era.name+"/"+tc.name, func(t *testing.T) {
				s := &rawServer{callResult: tc.result}
				srv := httptest.NewServer(s)
				t.Cleanup(srv.Close)
				var ev events
				c := &http.Client{Transport: mcpguard.New(srv.Client().Transport, mcpguard.WithEventHandler(ev.handler))}
				body := `{"jsonrpc":"2.0","id":21,"method":"tools/call","params":` + withMeta(era.meta, `"name":"ask","arguments":{}`) + `}`
				req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, srv.URL, strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				for k, v := range era.headers {
					req.Header.Set(k, v)
				}
				resp, err := c.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				got, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				sent := strings.Replace(tc.result, "ID", "21", 1)
				if tc.withheld {
					if !strings.Contains(string(got), `"isError":true`) || !slices.Equal(ev.kinds(), []string{string(mcpguard.EventInvalidResult)}) {
						t.Errorf("the client read %q, events %q; want an isError result and invalid_result", got, ev.kinds())
					}
					return
				}
				if string(got) != sent {
					t.Errorf("the client read %q, want the server's %q", got, sent)
				}
				if k := ev.kinds(); len(k) != 0 {
					t.Errorf("events %q, want none", k)
				}
				t.Logf("client read: %s", got)
			})
		}
	}
}
