package mcpguard_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/mcpguard"
)

// Whatever a client sends and whatever the server answers, the transport
// answers with a response, never a panic; a body that is not a tools/call
// of a listed tool reaches the server as sent.
func FuzzRoundTrip(f *testing.F) {
	for _, s := range []string{
		benchCall,
		`{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"forecast","arguments":{"city":null,"days":"5","units":[]}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"forecast","arguments":"{\"city\":\"a\",\"days\":1}"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"2"}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, `{"jsonrpc":"2.0","id":1e400,"method":"tools/call"}`, `{`, ``,
	} {
		f.Add([]byte(s), []byte(benchResult), true)
		f.Add([]byte(s), []byte("event: message\ndata: "+benchResult+"\n\n"), false)
	}
	f.Fuzz(func(t *testing.T, body, answer []byte, asJSON bool) {
		var got []byte
		base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
			b, _ := io.ReadAll(r.Body)
			r.Body.Close()
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if json.Unmarshal(b, &m) == nil && m.Method == "tools/list" && bytes.HasPrefix(m.ID, []byte(`"mcpguard-`)) {
				list := strings.Replace(benchList, `"id":2`, `"id":`+string(m.ID), 1)
				return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
					Body: io.NopCloser(strings.NewReader(list)), Request: r}, nil
			}
			got = b
			ct := "text/event-stream"
			if asJSON {
				ct = "application/json"
			}
			return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {ct}},
				Body: io.NopCloser(bytes.NewReader(answer)), Request: r}, nil
		})
		rt := mcpguard.New(base, mcpguard.WithEventHandler(func(context.Context, guard.Event) {}),
			mcpguard.WithCallLimit(mcpguard.PerSession, guard.WithThreadLimit(1<<30)),
			mcpguard.WithToolPolicy(func(context.Context, mcpguard.ToolInfo) error { return nil }),
			mcpguard.WithObserver(guard.ObserverFunc(func(context.Context, guard.Event) {})))
		req, _ := http.NewRequest(http.MethodPost, "http://mcp.test/mcp", bytes.NewReader(body))
		resp, err := rt.RoundTrip(req)
		if err != nil {
			t.Fatalf("RoundTrip(%q) error %v", body, err)
		}
		if _, err := io.ReadAll(resp.Body); err != nil {
			t.Fatalf("reading the answer to %q: %v", body, err)
		}
		resp.Body.Close()
		if got != nil && !bytes.Contains(body, []byte("tools/call")) && !bytes.Equal(got, body) {
			t.Fatalf("the server received %q for %q", got, body)
		}
	})
}
