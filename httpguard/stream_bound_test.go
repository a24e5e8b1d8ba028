package httpguard

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/guard"
)

// streamCase is the recorded streaming request of the protocol in dir.
func streamCase(t *testing.T, dir string) wireCase {
	t.Helper()
	for _, c := range wireCases(t) {
		if c.dir == dir && c.stream {
			return c
		}
	}
	t.Fatalf("no streaming case for %s", dir)
	return wireCase{}
}

// serveBody is a loopback upstream that answers every request with body,
// written at once.
func serveBody(t *testing.T, contentType, body string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", contentType)
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// The bound applies to the assembled response, not the SSE envelope: a
// text-only stream whose events pass MaxBody while its text is 150 KB
// reaches the client whole (it used to be cut with response_too_large once
// its events' bytes added up to 8 MiB), on Anthropic and Gemini. Each
// event carries 100 bytes of text and a member of 6,000 bytes the wire
// code does not keep (as many small deltas would, in fewer events).
// Held tool-call bytes past MaxBody are still refused:
// TestStreamPastTheBoundBeforeCommit.
func TestStreamBoundIsTheAssembledResponse(t *testing.T) {
	t.Parallel()
	const n = 1500
	pad := `"x_pad":"` + strings.Repeat("p", 6000) + `"`
	textOf := func(i int) string { return strings.Repeat(string(rune('a'+i%26)), 100) }
	for _, tc := range []struct {
		dir    string
		events func() []string
	}{
		{"anthropic", func() []string {
			evs := []string{"event: message_start\ndata: " + anthropicStart,
				`event: content_block_start` + "\n" + `data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`}
			for i := 0; i < n; i++ {
				evs = append(evs, `event: content_block_delta`+"\n"+`data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"`+textOf(i)+`"},`+pad+`}`)
			}
			return append(evs, `event: content_block_stop`+"\n"+`data: {"type":"content_block_stop","index":0}`,
				`event: message_delta`+"\n"+`data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":5}}`,
				"event: message_stop\ndata: "+anthropicStop)
		}},
		{"gemini", func() []string {
			var evs []string
			for i := 0; i < n; i++ {
				finish := ""
				if i == n-1 {
					finish = `,"finishReason":"STOP"`
				}
				evs = append(evs, `data: {"candidates":[{"content":{"parts":[{"text":"`+textOf(i)+`"}],"role":"model"},"index":0`+finish+`}],"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":1,"totalTokenCount":11},"modelVersion":"gemini-2.5-flash","responseId":"resp-1",`+pad+`}`)
			}
			return evs
		}},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			t.Parallel()
			evs := tc.events()
			var want strings.Builder
			for i := 0; i < n; i++ {
				want.WriteString(textOf(i))
			}
			data := 0
			for _, ev := range evs {
				data += len(ev) - strings.Index(ev, "data: ") - len("data: ")
			}
			if data <= MaxBody || want.Len() != 150_000 {
				t.Fatalf("the events hold %d bytes, the text %d, want past MaxBody and 150 KB", data, want.Len())
			}
			c := streamCase(t, tc.dir)
			srv := serveBody(t, "text/event-stream", strings.Join(evs, "\n\n")+"\n\n")
			ex := do(t, New(nil, ToolArgValidation(guard.WithFailClosed())), context.Background(), srv.URL+c.url, c.body)
			got := clientRead(t, c, ex)
			if txt := guardText(t, c, got); txt != want.String() {
				t.Errorf("the client read %d bytes of text, want %d: %.300s", len(txt), want.Len(), ex.body[max(0, len(ex.body)-300):])
			}
		})
	}
}

// Held tool-call bytes past MaxBody, in events each far below it, are
// still refused: 502, response_too_large, before anything reached the
// client (Anthropic's input in 90 deltas of 100 KB; Gemini's calls in 90
// chunks of one call each).
func TestStreamHeldCallsPastTheBound(t *testing.T) {
	t.Parallel()
	const n = 90
	chunk := strings.Repeat("x", 100_000)
	for _, tc := range []struct {
		dir    string
		events func() []string
	}{
		{"anthropic", func() []string {
			evs := []string{"event: message_start\ndata: " + anthropicStart,
				`event: content_block_start` + "\n" + `data: {"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{}}}`,
				`event: content_block_delta` + "\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"city\":\""}}`}
			for i := 0; i < n; i++ {
				evs = append(evs, `event: content_block_delta`+"\n"+`data: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"`+chunk+`"}}`)
			}
			return append(evs, `event: content_block_delta`+"\n"+`data: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"\"}"}}`,
				`event: content_block_stop`+"\n"+`data: {"type":"content_block_stop","index":0}`,
				"event: message_delta\ndata: "+anthropicEnd, "event: message_stop\ndata: "+anthropicStop)
		}},
		{"gemini", func() []string {
			var evs []string
			for i := 0; i < n; i++ {
				evs = append(evs, `data: {"candidates":[{"content":{"parts":[{"functionCall":{"name":"get_weather","args":{"city":"`+chunk+`"}}}],"role":"model"},"index":0}],"responseId":"resp-1"}`)
			}
			return evs
		}},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			t.Parallel()
			c := streamCase(t, tc.dir)
			srv := serveBody(t, "text/event-stream", strings.Join(tc.events(), "\n\n")+"\n\n")
			ex := do(t, New(nil, ToolArgValidation()), context.Background(), srv.URL+c.url, c.body)
			typ := ""
			if ex.resp.StatusCode != http.StatusOK {
				typ, _ = errorType(t, c.w, ex.body)
			}
			if ex.resp.StatusCode != http.StatusBadGateway || typ != "response_too_large" {
				t.Errorf("the client got %d %.300s, want 502 response_too_large", ex.resp.StatusCode, ex.body)
			}
		})
	}
}
