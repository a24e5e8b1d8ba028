package mcpguard_test

import (
	"bytes"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/mcpguard"
)

// What is not a well-formed JSON-RPC tools/call passes byte-exact, and the
// server's answer comes back as the server wrote it.
func TestMalformedPassesByteExact(t *testing.T) {
	bodies := []struct{ name, body string }{
		{"truncated", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"forecast","argu`},
		{"not JSON", `tools/call forecast days=0`},
		{"jsonrpc 1.0", `{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"forecast","arguments":{"days":0}}}`},
		{"no jsonrpc", `{"id":1,"method":"tools/call","params":{"name":"forecast","arguments":{"days":0}}}`},
		{"id an object", `{"jsonrpc":"2.0","id":{"a":1},"method":"tools/call","params":{"name":"forecast","arguments":{"days":0}}}`},
		{"params an array", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":["forecast"]}`},
		{"name a number", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":7,"arguments":{}}}`},
		{"empty batch", `[]`},
		{"batch without tools/call", ` [{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"}]`},
		{"unknown method", `{"jsonrpc":"2.0","id":9,"method":"tools/frobnicate","params":{"name":"forecast","arguments":{"days":0}}}`},
		{"resource read", "{\"jsonrpc\": \"2.0\", \"id\": \"r\",\n \"method\": \"resources/read\", \"params\": {\"uri\": \"x://y\"}}"},
	}
	srv, rec := newServer(t, serverMode{"stateless/json", true, true})
	var ev events
	guarded := &http.Client{Transport: mcpguard.New(srv.Client().Transport, mcpguard.WithEventHandler(ev.handler))}
	direct := srv.Client()
	send := func(c *http.Client, body string) (int, string, string) {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("POST %q: %v", body, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
	}
	for _, tc := range bodies {
		t.Run(tc.name, func(t *testing.T) {
			ds, dt, db := send(direct, tc.body)
			gs, gt, gb := send(guarded, tc.body)
			all := rec.all()
			if got := all[len(all)-1]; got != tc.body {
				t.Errorf("the server received %q, want %q", got, tc.body)
			}
			if gs != ds || gt != dt || gb != db {
				t.Errorf("through the transport: %d %s %q; directly: %d %s %q", gs, gt, gb, ds, dt, db)
			}
		})
	}
	if k := ev.kinds(); len(k) != 0 {
		t.Errorf("events %q, want none", k)
	}
}

// A tool whose schema toolguard cannot compile costs its own calls only:
// failing open they pass with a schema_error event, failing closed they are
// answered with an isError result and never reach the server; the other
// tools are guarded either way.
func TestSchemaThatDoesNotCompile(t *testing.T) {
	for _, failClosed := range []bool{false, true} {
		name := "fail open"
		if failClosed {
			name = "fail closed"
		}
		t.Run(name, func(t *testing.T) {
			mode := modes[0]
			srv, rec := newServer(t, mode)
			var ev events
			opts := []mcpguard.Option{mcpguard.WithEventHandler(ev.handler)}
			if failClosed {
				opts = append(opts, mcpguard.WithFailClosed())
			}
			cs := connect(t, srv, mode, opts...)
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "bad_schema", Arguments: map[string]any{"u": 1}})
			if err != nil {
				t.Fatalf("CallTool(bad_schema): %v", err)
			}
			calls := rec.received("tools/call")
			if failClosed {
				if !res.IsError || !strings.HasPrefix(text(res), `Not executed: the arguments of tool "bad_schema" could not be checked: inputSchema: `) {
					t.Errorf("CallTool(bad_schema) = isError %v, %q; want an isError result saying it was not executed", res.IsError, text(res))
				}
				if len(calls) != 0 {
					t.Errorf("the server received %q, want nothing", calls)
				}
			} else {
				if res.IsError || text(res) != "ran" {
					t.Errorf("CallTool(bad_schema) = isError %v, %q; want the tool's result", res.IsError, text(res))
				}
				if len(calls) != 1 {
					t.Errorf("the server received %d tools/call, want 1", len(calls))
				}
			}
			if k := ev.kinds(); !slices.Equal(k, []string{string(guard.EventSchemaError)}) {
				t.Errorf("events %q, want [schema_error]", k)
			}
			t.Logf("client read: isError=%v %q", res.IsError, text(res))

			res, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "forecast", Arguments: map[string]any{"city": "Oslo"}})
			if err != nil || !res.IsError || !strings.Contains(text(res), "/days: missing required property") {
				t.Errorf("CallTool(forecast without days) = %v, %v; want an isError result naming /days", res, err)
			}
			if got := len(rec.received("tools/call")); got != len(calls) {
				t.Errorf("the invalid forecast call reached the server")
			}
		})
	}
}

// A request body past MaxBody is forwarded unread with an unguarded event,
// or refused with 413 failing closed.
func TestBodyPastMaxBody(t *testing.T) {
	big := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` +
		strings.Repeat("x", mcpguard.MaxBody) + `"}}}`
	for _, failClosed := range []bool{false, true} {
		var ev events
		opts := []mcpguard.Option{mcpguard.WithEventHandler(ev.handler)}
		if failClosed {
			opts = append(opts, mcpguard.WithFailClosed())
		}
		var got []byte
		base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
			got, _ = io.ReadAll(r.Body)
			r.Body.Close()
			return &http.Response{StatusCode: 202, Body: http.NoBody, Header: http.Header{}, Request: r}, nil
		})
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://mcp.test/mcp", strings.NewReader(big))
		resp, err := mcpguard.New(base, opts...).RoundTrip(req)
		if err != nil {
			t.Fatalf("RoundTrip (fail closed %v): %v", failClosed, err)
		}
		resp.Body.Close()
		if failClosed {
			if resp.StatusCode != http.StatusRequestEntityTooLarge || got != nil {
				t.Errorf("fail closed: status %d, the server received %d bytes; want 413 and nothing", resp.StatusCode, len(got))
			}
		} else if resp.StatusCode != 202 || !bytes.Equal(got, []byte(big)) {
			t.Errorf("fail open: status %d, the server received %d bytes of %d (equal %v); want 202 and the body as sent",
				resp.StatusCode, len(got), len(big), bytes.Equal(got, []byte(big)))
		}
		if k := ev.kinds(); !slices.Equal(k, []string{string(guard.EventUnguarded)}) {
			t.Errorf("fail closed %v: events %q, want [unguarded]", failClosed, k)
		}
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// A client that accepts only server-sent events reads the transport's
// answer as one event.
func TestAnswerAsEventStream(t *testing.T) {
	srv, rec := newServer(t, serverMode{"stateless/sse", true, false})
	c := &http.Client{Transport: mcpguard.New(srv.Client().Transport)}
	body := `{"jsonrpc":"2.0","id":"a1","method":"tools/call","params":{"name":"forecast","arguments":{"city":"Oslo","days":0}}}`
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("POST: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	want := "event: message\ndata: " + `{"jsonrpc":"2.0","id":"a1","result":{"content":[{"type":"text","text":"Invalid arguments for tool \"forecast\": 1 error.\n- /days: expected a number >= 1, got 0\nCall forecast again with corrected arguments."}],"isError":true}}` + "\n\n"
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" || string(b) != want {
		t.Errorf("= %s %q, want text/event-stream %q", ct, b, want)
	}
	if calls := rec.received("tools/call"); len(calls) != 0 {
		t.Errorf("the server received %q, want nothing", calls)
	}
}
