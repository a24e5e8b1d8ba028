package mcpguard

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A tools/list whose result carries a positive ttlMs (2026-07-28's
// cacheable results) is fresh that long: calls within it are checked
// against the list learned, the first call after it fetches the list
// again, so a schema the server changed is read; a list without a ttlMs
// (or 0) is kept as before, until list_changed or the session's end.
func TestToolsListTTL(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ttl     string // the ttlMs member of the result, "" for none
		fetches int    // tools/list the server received for the three calls
		third   bool   // the third call (its schema changed) reached the server
	}{
		{"ttl 60000", `,"ttlMs":60000`, 2, true},
		{"ttl 0", `,"ttlMs":0`, 1, false},
		{"no ttl", "", 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var lists, calls atomic.Int32
			var mu sync.Mutex
			schema := `{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				var msg struct {
					ID     json.RawMessage `json:"id"`
					Method string          `json:"method"`
				}
				_ = json.Unmarshal(b, &msg)
				w.Header().Set("Content-Type", "application/json")
				switch msg.Method {
				case "tools/list":
					lists.Add(1)
					mu.Lock()
					s := schema
					mu.Unlock()
					_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(msg.ID)+`,"result":{"tools":[{"name":"count","inputSchema":`+s+`}]`+tc.ttl+`}}`)
				case "tools/call":
					calls.Add(1)
					_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(msg.ID)+`,"result":{"content":[{"type":"text","text":"ok"}]}}`)
				}
			}))
			defer srv.Close()
			rt := New(srv.Client().Transport)
			now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
			rt.(*transport).tools.now = func() time.Time { return now }
			call := func(args string) string {
				t.Helper()
				req, _ := http.NewRequest(http.MethodPost, srv.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"count","arguments":`+args+`}}`))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Mcp-Session-Id", "s1")
				resp, err := rt.RoundTrip(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				return string(b)
			}
			if out := call(`{"n":1}`); !strings.Contains(out, `"ok"`) {
				t.Fatalf("first call read %s, want the server's result", out)
			}
			// The server now takes a string; the guard learns it only
			// from a fresh list.
			mu.Lock()
			schema = `{"type":"object","properties":{"n":{"type":"string"}},"required":["n"]}`
			mu.Unlock()
			now = now.Add(30 * time.Second)
			call(`{"n":2}`)
			now = now.Add(31 * time.Second)
			out := call(`{"n":"three"}`)
			if got := int(lists.Load()); got != tc.fetches {
				t.Errorf("the server received %d tools/list, want %d", got, tc.fetches)
			}
			if reached := calls.Load() == 3; reached != tc.third {
				t.Errorf("the third call reached the server: %v, want %v (the client read %s)", reached, tc.third, out)
			}
		})
	}
}
