package mcpguard_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/mcpguard"
)

// A call of a tool the server does not list passes to the server, which
// refuses it, with an unknown_tool event; failing closed it is answered
// with an isError result listing the tools.
func TestUnknownTool(t *testing.T) {
	mode := modes[1]
	for _, failClosed := range []bool{false, true} {
		srv, rec := newServer(t, mode)
		var ev events
		opts := []mcpguard.Option{mcpguard.WithEventHandler(ev.handler)}
		if failClosed {
			opts = append(opts, mcpguard.WithFailClosed())
		}
		cs := connect(t, srv, mode, opts...)
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "forcast", Arguments: map[string]any{"city": "Oslo"}})
		reached := len(rec.received("tools/call")) > 0
		if failClosed {
			if err != nil || !res.IsError || !strings.Contains(text(res), `"forecast"`) || reached {
				t.Errorf("fail closed: CallTool = %v, %v (reached the server: %v); want an isError result naming forecast, nothing forwarded", res, err, reached)
			} else {
				t.Logf("fail closed: client read: %q", text(res))
			}
		} else if !reached {
			t.Errorf("fail open: the call did not reach the server (CallTool = %v, %v)", res, err)
		}
		if k := ev.kinds(); !slices.Equal(k, []string{string(guard.EventUnknownTool)}) {
			t.Errorf("fail closed %v: events %q, want [unknown_tool]", failClosed, k)
		}
	}
}

// A stream whose event past MaxBody may be the answer to a call whose
// result must be checked: passed with an unguarded event failing open,
// replaced by an isError answer (and the stream ended) failing closed.
func TestResultEventPastMaxBody(t *testing.T) {
	list := `{"jsonrpc":"2.0","id":"x","result":{"tools":[{"name":"forecast","inputSchema":` + forecastSchema + `,"outputSchema":` + tempSchema + `}]}}`
	huge := "event: message\ndata: " + `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"` + strings.Repeat("x", mcpguard.MaxBody) + `"}],"structuredContent":{"temp":"warm"}}}` + "\n\n"
	base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		if bytes.Contains(b, []byte(`"tools/list"`)) {
			var m struct {
				ID json.RawMessage `json:"id"`
			}
			if err := json.Unmarshal(b, &m); err != nil {
				t.Errorf("the transport's tools/list %q: %v", b, err)
			}
			body := strings.Replace(list, `"id":"x"`, `"id":`+string(m.ID), 1)
			return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(strings.NewReader(body)), Request: r}, nil
		}
		return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(strings.NewReader(huge)), Request: r}, nil
	})
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"forecast","arguments":{"city":"Oslo","days":2}}}`
	for _, failClosed := range []bool{false, true} {
		var ev events
		opts := []mcpguard.Option{mcpguard.WithEventHandler(ev.handler)}
		if failClosed {
			opts = append(opts, mcpguard.WithFailClosed())
		}
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://mcp.test/mcp", strings.NewReader(call))
		resp, err := mcpguard.New(base, opts...).RoundTrip(req)
		if err != nil {
			t.Fatalf("RoundTrip: %v", err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if failClosed {
			if !bytes.HasPrefix(got, []byte("event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"Not accepted: ")) ||
				!bytes.Contains(got, []byte(`"isError":true}}`)) || len(got) > 4096 {
				t.Errorf("fail closed: the client read %d bytes beginning %q; want one isError answer", len(got), got[:min(len(got), 200)])
			}
		} else if string(got) != huge {
			t.Errorf("fail open: the client read %d bytes, want the %d the server sent", len(got), len(huge))
		}
		if k := ev.kinds(); !slices.Equal(k, []string{string(guard.EventUnguarded)}) {
			t.Errorf("fail closed %v: events %q, want [unguarded]", failClosed, k)
		}
	}
}
