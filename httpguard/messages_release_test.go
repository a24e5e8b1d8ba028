package httpguard

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/toolguard/toolguard/guard"
)

// releaseRequest is a streaming Messages request offering get_weather,
// whose days are optional (a null there is stripped).
const releaseRequest = `{"model":"claude-sonnet-4-5","max_tokens":1024,"stream":true,` +
	`"messages":[{"role":"user","content":"Weather in Paris?"}],` +
	`"tools":[{"name":"get_weather","input_schema":{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"}},"required":["city"]}}]}`

// releaseStream is an Anthropic stream as the API sends it: pings, a text
// block, a tool_use block whose input comes in fragments with spaces, a
// ping while it is held and a text block after it; input is the call's
// input, written in three fragments.
func releaseStream(input string) string {
	third := len(input) / 3
	frags := []string{input[:third], input[third : 2*third], input[2*third:]}
	evs := []string{anthropicStart, `{"type":"ping"}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Let me "}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"check."}}`,
		`{"type":"content_block_stop","index":0}`,
		`{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{}}}`}
	for _, f := range frags {
		evs = append(evs, `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":`+string(marshalString(f))+`}}`)
	}
	evs = append(evs, `{"type":"ping"}`, `{"type":"content_block_stop","index":1}`,
		`{"type":"content_block_start","index":2,"content_block":{"type":"text","text":""}}`,
		`{"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"One "}}`,
		`{"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"moment."}}`,
		`{"type":"content_block_stop","index":2}`, anthropicEnd, anthropicStop)
	var b strings.Builder
	for _, e := range evs {
		typ := e[len(`{"type":"`):]
		b.WriteString("event: " + typ[:strings.IndexByte(typ, '"')] + "\ndata: " + e + "\n\n")
	}
	return b.String()
}

// serveStreams is a loopback upstream that answers its n-th request with
// bodies[n] (the last one past the end), as server-sent events.
func serveStreams(t *testing.T, bodies ...string) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		i := int(n.Add(1)) - 1
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, bodies[min(i, len(bodies)-1)])
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// sameEvents reports whether got are the events of want, event for event
// (type and data).
func sameEvents(t *testing.T, got, want []byte) bool {
	t.Helper()
	g, w := events(t, got), events(t, want)
	if len(g) != len(w) {
		return false
	}
	for i := range g {
		if g[i].Event != w[i].Event || string(g[i].Data) != string(w[i].Data) {
			return false
		}
	}
	return true
}

// A stream whose call is valid and that the stages accept unchanged
// reaches the client as the upstream sent it, event for event: the
// fragments of the call's input, the text after it, the pings, through
// ToolArgValidation alone and through the recommended stack. It used to be
// written anew from the assembled response: the call's input in one
// fragment, the text after it in one delta, the pings it held dropped.
func TestAnthropicStreamReleasedAsSent(t *testing.T) {
	t.Parallel()
	up := releaseStream(`{"city": "Paris"}`)
	for name, stages := range map[string][]Middleware{
		"validation": {ToolArgValidation()},
		"stack":      {ToolCallLimit(guard.WithRunLimit(1000)), ToolArgValidation(), ModelRetry()},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv, n := serveStreams(t, up)
			ex := do(t, New(nil, stages...), context.Background(), srv.URL+"/v1/messages", []byte(releaseRequest))
			if ex.resp.StatusCode != http.StatusOK || n.Load() != 1 {
				t.Fatalf("status %d after %d upstream requests: %s", ex.resp.StatusCode, n.Load(), ex.body)
			}
			if !sameEvents(t, ex.body, []byte(up)) {
				t.Errorf("the client read\n%s\nwant the upstream's events\n%s", ex.body, up)
			}
		})
	}
}

// A call the stage cleans (an optional null stripped) or re-asks is
// written as before, from the accepted response: the client never reads
// the upstream's null, nor the rejected call.
func TestAnthropicStreamChangedIsWrittenAnew(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		upstream []string
		calls    int32
		want     string // the input the client reads
		never    string
	}{
		{"cleaned", []string{releaseStream(`{"city": "Paris", "days": null}`)}, 1, `{"city":"Paris"}`, `days`},
		{"re-asked", []string{releaseStream(`{"city": 42}`), releaseStream(`{"city": "Lyon"}`)}, 2, `{"city":"Lyon"}`, `42`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv, n := serveStreams(t, tc.upstream...)
			ex := do(t, New(nil, ToolArgValidation()), context.Background(), srv.URL+"/v1/messages", []byte(releaseRequest))
			if ex.resp.StatusCode != http.StatusOK || n.Load() != tc.calls {
				t.Fatalf("status %d after %d upstream requests, want %d: %s", ex.resp.StatusCode, n.Load(), tc.calls, ex.body)
			}
			if sameEvents(t, ex.body, []byte(tc.upstream[0])) || strings.Contains(string(ex.body), tc.never) {
				t.Fatalf("the client read the upstream's call:\n%s", ex.body)
			}
			client := assemble(t, messagesWire{}, events(t, ex.body))
			calls, err := messagesWire{}.calls(client)
			if err != nil || len(calls) != 1 || string(calls[0].Args) != tc.want {
				t.Errorf("the client's calls = %q, %v; want one with %s", calls, err, tc.want)
			}
		})
	}
}

// The events a call's attempt holds for release count against the bound
// whole: pings held behind a tool_use block, each far below MaxBody and
// past it together, are refused (502, response_too_large) rather than
// kept without bound. Before they were held, they were dropped.
func TestAnthropicHeldEventsBounded(t *testing.T) {
	t.Parallel()
	ping := `event: ping` + "\n" + `data: {"type":"ping","x_pad":"` + strings.Repeat("p", 100_000) + `"}`
	evs := []string{"event: message_start\ndata: " + anthropicStart,
		`event: content_block_start` + "\n" + `data: {"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris"}}}`}
	for range MaxBody/100_000 + 1 {
		evs = append(evs, ping)
	}
	evs = append(evs, `event: content_block_stop`+"\n"+`data: {"type":"content_block_stop","index":0}`,
		"event: message_delta\ndata: "+anthropicEnd, "event: message_stop\ndata: "+anthropicStop)
	c := streamCase(t, "anthropic")
	srv := serveBody(t, "text/event-stream", strings.Join(evs, "\n\n")+"\n\n")
	ex := do(t, New(nil, ToolArgValidation()), context.Background(), srv.URL+c.url, c.body)
	typ := ""
	if ex.resp.StatusCode != http.StatusOK {
		typ, _ = errorType(t, c.w, ex.body)
	}
	if ex.resp.StatusCode != http.StatusBadGateway || typ != "response_too_large" {
		t.Errorf("the client got %d %.300s, want 502 response_too_large", ex.resp.StatusCode, ex.body)
	}
}
