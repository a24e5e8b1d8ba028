package httpguard

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/guard"
)

// upstreamShape is an upstream answer the guard must not pass unchecked
// under fail closed: what the model or an upstream (buggy, compromised, a
// gateway between) can send, each holding the invalid call.
type upstreamShape struct {
	name   string
	proto  string // the testdata/wire directory of the client's request
	stream bool
	header []string // response headers, name then value
	body   string
	// encode, when set, encodes body as the header says.
	encode func([]byte) []byte
	// clientHeader are headers of the client's request.
	clientHeader []string
}

func responsesAnswer(items ...string) string {
	return `{"id":"resp_1","object":"response","created_at":1,"status":"completed","model":"gpt-4o","output":[` + strings.Join(items, ",") + `]}`
}

func gzipped(b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

func deflated(b []byte) []byte {
	var buf bytes.Buffer
	w := zlib.NewWriter(&buf)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

func chatSSE(chunks ...string) string {
	var b strings.Builder
	for _, c := range chunks {
		b.WriteString("data: " + c + "\n\n")
	}
	b.WriteString("data: [DONE]\n\n")
	return b.String()
}

func unguardableShapes() []upstreamShape {
	chatStream := chatSSE(
		`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\": `+badCity+`}"}}]},"finish_reason":null}]}`,
		`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`)
	return []upstreamShape{
		// The model: documented shapes beside an invalid function call.
		{name: "chat custom tool call beside", proto: "openai-chat",
			body: chatAnswer(`{"role":"assistant","content":null,"tool_calls":[` + chatBadCall + `,{"id":"call_9","type":"custom","custom":{"name":"run_sql","input":"SELECT 1"}}]}`)},
		{name: "chat legacy function_call", proto: "openai-chat",
			body: chatAnswer(`{"role":"assistant","content":null,"function_call":{"name":"get_weather","arguments":"{\"city\": ` + badCity + `}"}}`)},
		{name: "responses custom_tool_call beside", proto: "openai-responses",
			body: responsesAnswer(respBadCall, `{"id":"ctc_1","type":"custom_tool_call","status":"completed","call_id":"call_9","name":"run_sql","input":"SELECT 1"}`)},
		{name: "responses shell_call beside", proto: "openai-responses",
			body: responsesAnswer(respBadCall, `{"id":"sh_1","type":"shell_call","status":"completed","call_id":"call_9","action":{"commands":["ls"]}}`)},
		{name: "responses apply_patch_call beside", proto: "openai-responses",
			body: responsesAnswer(respBadCall, `{"id":"ap_1","type":"apply_patch_call","status":"completed","call_id":"call_9","operation":{"type":"update_file","path":"a.go","diff":"-a\n+b"}}`)},
		{name: "responses local_shell_call beside", proto: "openai-responses",
			body: responsesAnswer(respBadCall, `{"id":"ls_1","type":"local_shell_call","status":"completed","call_id":"call_9","action":{"type":"exec","command":["ls"],"env":{}}}`)},
		{name: "responses computer_call beside", proto: "openai-responses",
			body: responsesAnswer(respBadCall, `{"id":"cu_1","type":"computer_call","status":"completed","call_id":"call_9","action":{"type":"click","button":"left","x":1,"y":2},"pending_safety_checks":[]}`)},
		{name: "responses mcp_approval_request beside", proto: "openai-responses",
			body: responsesAnswer(respBadCall, `{"id":"mcpr_1","type":"mcp_approval_request","server_label":"deepwiki","name":"ask","arguments":"{}"}`)},
		{name: "responses unknown item beside", proto: "openai-responses",
			body: responsesAnswer(respBadCall, `{"id":"x_1","type":"teleport_call","status":"completed"}`)},
		// An upstream: what the SDKs read differently from the guard.
		{name: "chat duplicate tool_calls key", proto: "openai-chat",
			body: chatAnswer(`{"role":"assistant","content":null,"tool_calls":[` + chatGoodCall + `],"tool_calls":[` + chatBadCall + `]}`)},
		{name: "chat case-variant tool_calls key", proto: "openai-chat",
			body: chatAnswer(`{"role":"assistant","content":null,"Tool_Calls":[` + chatBadCall + `]}`)},
		{name: "chat second choice", proto: "openai-chat",
			body: `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"},{"index":1,"message":{"role":"assistant","content":null,"tool_calls":[` + chatBadCall + `]},"finish_reason":"tool_calls"}]}`},
		{name: "responses case-variant output key", proto: "openai-responses",
			body: `{"id":"resp_1","object":"response","created_at":1,"status":"completed","model":"gpt-4o","Output":[` + respBadCall + `]}`},
		{name: "anthropic case-variant content key", proto: "anthropic",
			body: `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","Content":[{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":` + badCity + `}}],"stop_reason":"tool_use"}`},
		{name: "gemini second candidate", proto: "gemini",
			body: `{"candidates":[{"content":{"parts":[{"text":"hi"}],"role":"model"},"finishReason":"STOP","index":0},{"content":{"parts":[{"functionCall":{"name":"get_weather","args":{"city":` + badCity + `}}}],"role":"model"},"finishReason":"STOP","index":1}]}`},
		{name: "chat deflate", proto: "openai-chat", header: []string{"Content-Encoding", "deflate"}, encode: deflated,
			body: chatAnswer(`{"role":"assistant","content":null,"tool_calls":[` + chatBadCall + `]}`)},
		{name: "chat gzip the client asked for", proto: "openai-chat", header: []string{"Content-Encoding", "gzip"}, encode: gzipped,
			clientHeader: []string{"Accept-Encoding", "gzip"},
			body:         chatAnswer(`{"role":"assistant","content":null,"tool_calls":[` + chatBadCall + `]}`)},
		{name: "chat unknown encoding", proto: "openai-chat", header: []string{"Content-Encoding", "x-squash"},
			body: chatAnswer(`{"role":"assistant","content":null,"tool_calls":[` + chatBadCall + `]}`)},
		{name: "chat body past MaxBody", proto: "openai-chat",
			body: chatAnswer(`{"role":"assistant","content":"` + strings.Repeat("x", MaxBody) + `","tool_calls":[` + chatBadCall + `]}`)},
		// Streams not labelled as streams.
		{name: "chat stream labelled text/plain", proto: "openai-chat", stream: true, header: []string{"Content-Type", "text/plain"}, body: chatStream},
		{name: "chat stream labelled application/json", proto: "openai-chat", stream: true, header: []string{"Content-Type", "application/json"}, body: chatStream},
		{name: "chat stream without Content-Type", proto: "openai-chat", stream: true, header: []string{"Content-Type", ""}, body: chatStream},
		{name: "chat stream gzip", proto: "openai-chat", stream: true, clientHeader: []string{"Accept-Encoding", "gzip"},
			header: []string{"Content-Type", "text/event-stream", "Content-Encoding", "gzip"}, encode: gzipped, body: chatStream},
	}
}

// shapeServer answers every request with s.
func shapeServer(t *testing.T, s upstreamShape) (*httptest.Server, *int) {
	t.Helper()
	n := new(int)
	body := []byte(s.body)
	if s.encode != nil {
		body = s.encode(body)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		*n++
		ct := "application/json"
		if s.stream {
			ct = "text/event-stream"
		}
		w.Header().Set("Content-Type", ct)
		for i := 0; i+1 < len(s.header); i += 2 {
			if s.header[i+1] == "" {
				w.Header()["Content-Type"] = nil
				continue
			}
			w.Header().Set(s.header[i], s.header[i+1])
		}
		w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv, n
}

// shapeRequest is the client's request of s: its protocol's recorded one,
// streaming when s streams.
func shapeRequest(t *testing.T, s upstreamShape) (path string, body []byte) {
	t.Helper()
	for _, p := range protocols {
		if p.dir != s.proto {
			continue
		}
		if s.stream {
			return streamURL(p.streamPath), fixture(t, p.dir, "stream-request.json")
		}
		return p.path, fixture(t, p.dir, "request.json")
	}
	t.Fatalf("no protocol %q", s.proto)
	return "", nil
}

// leaked reports whether the client read the invalid call as an answer
// (through the encoding the answer names, as the client's SDK would).
func leaked(ex exchange) bool {
	body := ex.body
	switch ex.resp.Header.Get("Content-Encoding") {
	case "gzip":
		if r, err := gzip.NewReader(bytes.NewReader(body)); err == nil {
			body, _ = io.ReadAll(r)
		}
	case "deflate":
		if r, err := zlib.NewReader(bytes.NewReader(body)); err == nil {
			body, _ = io.ReadAll(r)
		}
	}
	return ex.resp.StatusCode == http.StatusOK && bytes.Contains(body, []byte(badCity))
}

// TestFailClosedPassesNothingUnread: under fail closed, no shape of answer
// that holds an invalid call reaches the client with status 200: the guard
// reads it (and re-asks, then refuses with 422) or refuses it unread (502
// response_unguardable, x-should-retry: false). Each refusal unread is an
// unguarded event.
func TestFailClosedPassesNothingUnread(t *testing.T) {
	for _, s := range unguardableShapes() {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			srv, _ := shapeServer(t, s)
			var ev eventLog
			tr := New(nil, ToolArgValidation(guard.WithFailClosed(), guard.WithMaxRetries(1), guard.WithEventHandler(ev.add)))
			path, body := shapeRequest(t, s)
			ex := do(t, tr, context.Background(), srv.URL+path, body, s.clientHeader...)
			// Every shape holds an invalid call: read, it is re-asked and
			// refused (422); unread, it is refused (502). A 200 either
			// carries the call or stands in for it.
			if ex.resp.StatusCode == http.StatusOK {
				t.Fatalf("the client read status 200 (the invalid call in it: %v; %d bytes):\n%s", leaked(ex), len(ex.body), preview(ex.body))
			}
			if ex.resp.StatusCode == http.StatusBadGateway {
				if ex.resp.Header.Get("X-Should-Retry") != "false" || !bytes.Contains(bytes.ToLower(ex.body), []byte(responseUnguardable)) {
					t.Errorf("502 %q %s, want type %s and x-should-retry: false", ex.resp.Header.Get("X-Should-Retry"), preview(ex.body), responseUnguardable)
				}
				if ev.count(guard.EventUnguarded) == 0 {
					t.Errorf("refused unread with no unguarded event: %v", ev.kinds())
				}
			}
			t.Logf("%d %s", ex.resp.StatusCode, firstLine(ex.body))
		})
	}
}

// TestLimitFailClosedCountsWhatItCannotRead: a thread limit with
// ExitError and fail closed lets no answer with a call through on an
// exhausted thread: it counts the call (422) or refuses what it cannot
// count (502).
func TestLimitFailClosedCountsWhatItCannotRead(t *testing.T) {
	for _, s := range unguardableShapes() {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			srv, _ := shapeServer(t, s)
			store := guard.NewMemoryThreadStore(16)
			tr := New(nil, ToolCallLimit(guard.WithThreadLimit(1), guard.WithExitBehavior(guard.ExitError),
				guard.WithThreadStore(store), guard.WithFailClosed(), guard.WithEventHandler(func(context.Context, guard.Event) {})))
			ctx := guard.WithThread(context.Background(), "t-exhausted")
			if _, _, err := store.Reserve(ctx, guard.ThreadKey{Thread: "t-exhausted", Kind: guard.CountToolCalls}, 1, 1); err != nil {
				t.Fatal(err)
			}
			path, body := shapeRequest(t, s)
			for i := range 3 {
				ex := do(t, tr, ctx, srv.URL+path, body, s.clientHeader...)
				if ex.resp.StatusCode == http.StatusOK {
					t.Fatalf("request %d on the exhausted thread: the client read status 200 (the invalid call in it: %v)", i+1, leaked(ex))
				}
			}
		})
	}
}
