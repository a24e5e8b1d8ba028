package mcpguard_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolguard/toolguard/mcpguard"
)

// The transport fetches tools/list once per session, whatever the number
// of calls (concurrent ones included), and not at all when the client
// listed the tools itself.
func TestToolsListFetchedOncePerSession(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			srv, rec := newServer(t, mode)
			// One transport, shared by the sessions, over a count of the
			// tools/list it sends itself, by Mcp-Session-Id.
			var fetches sessionCounts
			rt := mcpguard.New(fetches.wrap(srv.Client().Transport))
			sessions := []*mcp.ClientSession{connectVia(t, srv, mode, rt, nil), connectVia(t, srv, mode, rt, nil)}
			for _, cs := range sessions {
				var wg sync.WaitGroup
				errs := make(chan error, 8)
				for i := range 8 {
					wg.Go(func() {
						res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "forecast",
							Arguments: map[string]any{"city": fmt.Sprint("c", i), "days": 1 + i}})
						if err == nil && res.IsError {
							err = fmt.Errorf("isError: %s", text(res))
						}
						if err != nil {
							errs <- err
						}
					})
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					t.Errorf("CallTool: %v", err)
				}
			}
			// Sessions are told apart by Mcp-Session-Id; stateless clients
			// of one server, with the same credentials, share one list.
			want := 2
			if mode.stateless {
				want = 1
			}
			got := fetched(rec)
			if len(got) != want {
				t.Errorf("the transport fetched tools/list %d times for 16 calls in 2 sessions, want %d: %q", len(got), want, got)
			}
			if n := len(rec.received("tools/call")); n != 16 {
				t.Errorf("the server received %d tools/call, want 16", n)
			}
			if mode.stateless {
				t.Logf("tools/list fetched by the transport: %d for 2 stateless clients of one server with the same credentials, 8 tools/call each; tools/call received by the server: 16", len(got))
			} else {
				for i, cs := range sessions {
					if n := fetches.get(cs.ID()); n != 1 {
						t.Errorf("the transport fetched tools/list %d times for session %d (%s), want 1", n, i+1, cs.ID())
					}
				}
				t.Logf("tools/list fetched by the transport: session 1: %d, session 2: %d, 8 tools/call each; tools/call received by the server: 16",
					fetches.get(sessions[0].ID()), fetches.get(sessions[1].ID()))
			}

			// A client that lists its tools first: nothing fetched.
			srv2, rec2 := newServer(t, mode)
			cs := connect(t, srv2, mode)
			if _, err := cs.ListTools(t.Context(), nil); err != nil {
				t.Fatalf("ListTools: %v", err)
			}
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "forecast", Arguments: map[string]any{"city": "Oslo", "days": 0}})
			if err != nil || !res.IsError {
				t.Fatalf("CallTool(bad) after ListTools = %v, %v; want an isError result", res, err)
			}
			if got := fetched(rec2); len(got) != 0 {
				t.Errorf("after the client's own tools/list the transport fetched %d more, want 0: %q", len(got), got)
			}
		})
	}
}

// sessionCounts counts the tools/list requests the transport sends itself
// (ids "mcpguard-…"), by their Mcp-Session-Id header.
type sessionCounts struct {
	mu sync.Mutex
	n  map[string]int
}

// wrap returns base counting into c.
func (c *sessionCounts) wrap(base http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if r.Method != http.MethodPost || r.Body == nil {
			return base.RoundTrip(r)
		}
		body, err := io.ReadAll(r.Body)
		r.Body.Close()
		if err != nil {
			return nil, err
		}
		if bytes.Contains(body, []byte(`"method":"tools/list"`)) && bytes.Contains(body, []byte(`"id":"mcpguard-`)) {
			c.mu.Lock()
			if c.n == nil {
				c.n = map[string]int{}
			}
			c.n[r.Header.Get("Mcp-Session-Id")]++
			c.mu.Unlock()
		}
		r = r.Clone(r.Context())
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		return base.RoundTrip(r)
	})
}

func (c *sessionCounts) get(session string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[session]
}

// notifications/tools/list_changed forgets a session's tools: the next
// call is checked against the schema the server lists now.
func TestListChangedForgetsTools(t *testing.T) {
	mode := modes[0] // sessions: the notification comes on the session's stream
	srv, rec, s := newMCPServer(t, mode)
	changed := make(chan struct{}, 1)
	cs := connectVia(t, srv, mode, mcpguard.New(srv.Client().Transport), &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	call := func(days int) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "forecast", Arguments: map[string]any{"city": "Rome", "days": days}})
		if err != nil {
			t.Fatalf("CallTool(days %d): %v", days, err)
		}
		return res
	}
	if res := call(5); res.IsError {
		t.Fatalf("CallTool(days 5) under the first schema = isError %q", text(res))
	}
	// The server now allows at most 3 days, and tells its sessions.
	var schema map[string]any
	if err := json.Unmarshal([]byte(forecastSchema), &schema); err != nil {
		t.Fatal(err)
	}
	schema["properties"].(map[string]any)["days"].(map[string]any)["maximum"] = 3
	raw, _ := json.Marshal(schema)
	s.AddTool(&mcp.Tool{Name: "forecast", InputSchema: json.RawMessage(raw), OutputSchema: json.RawMessage(tempSchema)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{StructuredContent: map[string]any{"temp": 1}}, nil
		})
	select {
	case <-changed: // the transport read the notification before the client did
	case <-t.Context().Done():
		t.Fatal("no notifications/tools/list_changed reached the client")
	}
	res := call(5)
	if !res.IsError {
		t.Errorf("CallTool(days 5) after list_changed = %q; want isError under the new maximum", text(res))
	}
	if got := fetched(rec); len(got) != 2 {
		t.Errorf("the transport fetched tools/list %d times, want 2 (before and after list_changed)", len(got))
	}
	if n := len(rec.received("tools/call")); n != 1 {
		t.Errorf("the server received %d tools/call, want 1", n)
	}
}
