package mcpguard_test

import (
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/mcpguard"
)

// A message the transport cannot read the way every server would (a key
// given twice, a batch holding a tools/call) is passed with an unguarded
// event failing open and refused failing closed; a key given twice inside
// the arguments is an invalid call, answered with feedback.
func TestAmbiguousRequests(t *testing.T) {
	cases := []struct {
		name, body string
		// failing open: the kinds of the events; failing closed: the
		// status and whether the body reached the server.
		open       []string
		status     int
		reachedBad bool
	}{
		{"method twice", `{"jsonrpc":"2.0","id":1,"method":"ping","method":"tools/call","params":{"name":"forecast","arguments":{"days":0}}}`,
			[]string{"unguarded"}, http.StatusBadRequest, false},
		{"arguments twice", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"forecast","arguments":{"city":"a","days":1},"arguments":{"days":0}}}`,
			[]string{"unguarded"}, http.StatusOK, false},
		{"batch with a call", `[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"forecast","arguments":{"days":0}}}]`,
			[]string{"unguarded"}, http.StatusBadRequest, false},
		{"key twice in the arguments", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"forecast","arguments":{"city":"a","days":1,"days":0}}}`,
			[]string{"invalid"}, http.StatusOK, false},
	}
	for _, tc := range cases {
		for _, failClosed := range []bool{false, true} {
			name := tc.name + "/fail open"
			if failClosed {
				name = tc.name + "/fail closed"
			}
			t.Run(name, func(t *testing.T) {
				srv, rec := newServer(t, serverMode{"stateless/json", true, true})
				var ev events
				opts := []mcpguard.Option{mcpguard.WithEventHandler(ev.handler)}
				if failClosed {
					opts = append(opts, mcpguard.WithFailClosed())
				}
				c := &http.Client{Transport: mcpguard.New(srv.Client().Transport, opts...)}
				req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL, strings.NewReader(tc.body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				resp, err := c.Do(req)
				if err != nil {
					t.Fatalf("POST: %v", err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				reached := slices.Contains(rec.all(), tc.body)
				if tc.open[0] == "invalid" {
					if reached || resp.StatusCode != 200 || !strings.Contains(string(b), `"isError":true`) || !strings.Contains(string(b), `the key \"days\" appears more than once`) {
						t.Errorf("= %d %s (reached the server: %v); want an isError result naming the key days, nothing forwarded", resp.StatusCode, b, reached)
					}
				} else if failClosed {
					if reached || resp.StatusCode != tc.status {
						t.Errorf("= %d %s (reached the server: %v); want %d, nothing forwarded", resp.StatusCode, b, reached, tc.status)
					}
				} else if !reached {
					t.Errorf("failing open, the body did not reach the server")
				}
				if k := ev.kinds(); !slices.Equal(k, tc.open) {
					t.Errorf("events %q, want %q", k, tc.open)
				}
				t.Logf("%d %s", resp.StatusCode, b)
			})
		}
	}
}
