package httpguard

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/toolguard/toolguard/guard"
)

// Ollama's native API (POST /api/chat) through the Transport, against a
// loopback server that speaks it: sync bodies and NDJSON streams.

// ollamaTurn is one answer of the loopback server: text (streamed in two
// lines), thinking, and tool calls (raw ToolCall objects, each on a line
// of its own when streamed, as Ollama sends them).
type ollamaTurn struct {
	thinking string
	text     string
	calls    []string
	// lines, when not nil, is the stream as it is sent, line by line (the
	// turn's other fields unused): for broken streams.
	lines []string
	// contentType overrides application/x-ndjson (streams) or
	// application/json (sync).
	contentType string
	// status, when not 0, is the answer's status (with lines as its body).
	status int
}

// ollamaServer is a loopback Ollama: the i-th request gets turns[i] (the
// last one again past the end), as one body or as an NDJSON stream as the
// request's "stream" asks (true when absent); it records every request.
type ollamaServer struct {
	*httptest.Server
	turns []ollamaTurn
	mu    sync.Mutex
	reqs  [][]byte
	paths []string
}

func newOllamaServer(t *testing.T, turns ...ollamaTurn) *ollamaServer {
	s := &ollamaServer{turns: turns}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *ollamaServer) requests() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]byte(nil), s.reqs...)
}

func (s *ollamaServer) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	n := len(s.reqs)
	s.reqs = append(s.reqs, body)
	s.paths = append(s.paths, r.URL.Path)
	s.mu.Unlock()
	turn := s.turns[min(n, len(s.turns)-1)]
	var req struct {
		Model  string `json:"model"`
		Stream *bool  `json:"stream"`
	}
	_ = json.Unmarshal(body, &req)
	stream := req.Stream == nil || *req.Stream
	ct := turn.contentType
	if ct == "" {
		ct = "application/json"
		if stream {
			ct = "application/x-ndjson"
		}
	}
	w.Header().Set("Content-Type", ct)
	if turn.status != 0 {
		w.WriteHeader(turn.status)
	}
	if turn.lines != nil {
		for _, l := range turn.lines {
			_, _ = io.WriteString(w, l)
		}
		return
	}
	turn.write(w, req.Model, stream)
}

// write writes the turn as Ollama answers a request for model: one body,
// or NDJSON lines (the thinking, the text in two lines, one line per call,
// the done line with its counts).
func (turn ollamaTurn) write(w http.ResponseWriter, model string, stream bool) {
	head := `{"model":` + string(marshalString(model)) + `,"created_at":"2025-07-07T20:43:37.688511Z",`
	calls := "[" + strings.Join(turn.calls, ",") + "]"
	final := `"done":true,"done_reason":"stop","total_duration":890771750,"prompt_eval_count":94,"eval_count":11}`
	if !stream {
		msg := `{"role":"assistant","content":` + string(marshalString(turn.text))
		if turn.thinking != "" {
			msg += `,"thinking":` + string(marshalString(turn.thinking))
		}
		if len(turn.calls) > 0 {
			msg += `,"tool_calls":` + calls
		}
		_, _ = io.WriteString(w, head+`"message":`+msg+`},`+final)
		return
	}
	line := func(msg string) {
		_, _ = io.WriteString(w, head+`"message":`+msg+`,"done":false}`+"\n")
		w.(http.Flusher).Flush()
	}
	if turn.thinking != "" {
		line(`{"role":"assistant","content":"","thinking":` + string(marshalString(turn.thinking)) + `}`)
	}
	if turn.text != "" {
		half := len(turn.text) / 2
		line(`{"role":"assistant","content":` + string(marshalString(turn.text[:half])) + `}`)
		line(`{"role":"assistant","content":` + string(marshalString(turn.text[half:])) + `}`)
	}
	for _, c := range turn.calls {
		line(`{"role":"assistant","content":"","tool_calls":[` + c + `]}`)
	}
	_, _ = io.WriteString(w, head+`"message":{"role":"assistant","content":""},`+final+"\n")
}

// ollamaCall is a ToolCall as Ollama sends it.
func ollamaCall(id, name, args string) string {
	c := `{"function":{"index":0,"name":"` + name + `","arguments":` + args + `}}`
	if id != "" {
		c = `{"id":"` + id + `","function":{"index":0,"name":"` + name + `","arguments":` + args + `}}`
	}
	return c
}

const ollamaTools = `"tools":[{"type":"function","function":{"name":"get_weather","description":"Get the weather in a city",` +
	`"parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}]`

// ollamaRequest is a chat request as api.Client sends it; stream "" leaves
// the member out (Ollama streams then).
func ollamaRequest(stream string) []byte {
	b := `{"model":"llama3.2","messages":[{"role":"user","content":"Weather in Paris?"}],` + ollamaTools + `,"options":{"temperature":0}`
	if stream != "" {
		b += `,"stream":` + stream
	}
	return []byte(b + `}`)
}

// ollamaRead is what an Ollama client reads: for a stream, the lines
// decoded and joined as api.Client's caller joins them (content and
// thinking appended, tool calls collected, the last line's top level);
// for a sync answer, the body.
type ollamaRead struct {
	content, thinking string
	calls             []map[string]any
	last              map[string]any
	lines             int
}

func readOllama(t *testing.T, ex exchange) ollamaRead {
	t.Helper()
	var out ollamaRead
	sc := bufio.NewScanner(bytes.NewReader(ex.body))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var line struct {
			Message struct {
				Content   string           `json:"content"`
				Thinking  string           `json:"thinking"`
				ToolCalls []map[string]any `json:"tool_calls"`
			} `json:"message"`
			Error string `json:"error"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("line %d is not a ChatResponse: %v\n%s", out.lines, err, ex.body)
		}
		if line.Error != "" {
			t.Fatalf("the client read an error line: %s", sc.Bytes())
		}
		out.lines++
		out.content += line.Message.Content
		out.thinking += line.Message.Thinking
		out.calls = append(out.calls, line.Message.ToolCalls...)
		out.last = decode(t, sc.Bytes())
	}
	return out
}

// argsOf is the arguments object of a call the client read, as JSON.
func ollamaArgsOf(t *testing.T, call map[string]any) []byte {
	t.Helper()
	fn, _ := call["function"].(map[string]any)
	b, err := json.Marshal(fn["arguments"])
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A bad call is caught and re-asked in Ollama's shape; the client reads the
// corrected call, sync and streamed (a body without "stream" streams, as
// Ollama does).
func TestOllamaBadThenGood(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, stream string
		streamed     bool
	}{
		{"sync", "false", false},
		{"stream-default", "", true},
		{"stream-true", "true", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := newOllamaServer(t,
				ollamaTurn{thinking: "The user wants weather.", text: "Let me check.", calls: []string{ollamaCall("call_bad1", "get_weather", `{"city":42}`)}},
				ollamaTurn{text: "Sorry.", calls: []string{ollamaCall("call_good", "get_weather", `{"city":"Paris"}`)}})
			var kinds []guard.EventKind
			tr := New(nil, ToolArgValidation(guard.WithEventHandler(func(_ context.Context, e guard.Event) { kinds = append(kinds, e.Kind) })))
			body := ollamaRequest(tc.stream)
			ex := do(t, tr, context.Background(), srv.URL+"/api/chat", body, "Authorization", "Bearer ollama-key")
			if ex.resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", ex.resp.StatusCode, ex.body)
			}
			if strings.Contains(string(ex.body), "42") {
				t.Errorf("the client read the rejected call:\n%s", ex.body)
			}
			read := readOllama(t, ex)
			if len(read.calls) != 1 || !sameJSON(ollamaArgsOf(t, read.calls[0]), []byte(`{"city":"Paris"}`)) || read.calls[0]["id"] != "call_good" {
				t.Fatalf("the client reads the calls %v, want the corrected call_good", read.calls)
			}
			if ct := ex.resp.Header.Get("Content-Type"); tc.streamed != (ct == "application/x-ndjson") {
				t.Errorf("Content-Type %q, streamed %v", ct, tc.streamed)
			}
			if tc.streamed {
				// The first attempt's text once, its thinking once, the
				// re-ask's text not at all; the done line last, with its
				// counts.
				if read.content != "Let me check." || read.thinking != "The user wants weather." {
					t.Errorf("the client reads content %q, thinking %q, want the first attempt's", read.content, read.thinking)
				}
				if read.last["done"] != true || read.last["done_reason"] != "stop" || read.last["eval_count"] != 11.0 {
					t.Errorf("the last line is %v, want done with its counts", read.last)
				}
			}
			reqs := srv.requests()
			if len(reqs) != 2 {
				t.Fatalf("the server got %d requests, want 2", len(reqs))
			}
			if !bytes.Equal(reqs[0], body) {
				t.Errorf("the first request is not the client's:\n%s", reqs[0])
			}
			checkOllamaReask(t, body, reqs[1], "call_bad1")
			if len(kinds) < 2 || kinds[0] != guard.EventInvalid || kinds[1] != guard.EventReask {
				t.Errorf("events %v, want invalid, reask", kinds)
			}
		})
	}
}

// checkOllamaReask checks a re-ask's body: the client's request, changed
// only in its messages, which are the client's, then the assistant message
// replayed as it came (thinking, tool calls with their ids and object
// arguments), then one tool message with tool_name and tool_call_id whose
// content names the violation.
func checkOllamaReask(t *testing.T, orig, reask []byte, id string) {
	t.Helper()
	var o, r map[string]json.RawMessage
	if json.Unmarshal(orig, &o) != nil || json.Unmarshal(reask, &r) != nil {
		t.Fatalf("bodies are not JSON objects:\n%s", reask)
	}
	if len(o) != len(r) {
		t.Errorf("the re-ask has members %d, the request %d:\n%s", len(r), len(o), reask)
	}
	for k, v := range o {
		if k != "messages" && !bytes.Equal(r[k], v) {
			t.Errorf("the re-ask changed %q: %s, want %s", k, r[k], v)
		}
	}
	var msgs []map[string]any
	if err := json.Unmarshal(r["messages"], &msgs); err != nil || len(msgs) != 3 {
		t.Fatalf("the re-ask's messages: %v\n%s", err, r["messages"])
	}
	asst, tool := msgs[1], msgs[2]
	calls, _ := asst["tool_calls"].([]any)
	if asst["role"] != "assistant" || len(calls) != 1 {
		t.Fatalf("the replayed turn is %v", asst)
	}
	call, _ := calls[0].(map[string]any)
	fn, _ := call["function"].(map[string]any)
	if call["id"] != id || fn["name"] != "get_weather" || !sameJSON(ollamaJSON(t, fn["arguments"]), []byte(`{"city":42}`)) {
		t.Errorf("the replayed call is %v, want %s with its arguments object as it came", call, id)
	}
	if tool["role"] != "tool" || tool["tool_name"] != "get_weather" || tool["tool_call_id"] != id {
		t.Errorf("the tool message is %v", tool)
	}
	if content, _ := tool["content"].(string); !strings.Contains(content, "/city") {
		t.Errorf("the tool message does not name the violation: %q", content)
	}
}

func ollamaJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A call without an id (servers before Ollama 0.12) is answered by a tool
// message without tool_call_id, by tool_name; the client reads no id the
// server did not send.
func TestOllamaCallsWithoutIDs(t *testing.T) {
	t.Parallel()
	srv := newOllamaServer(t,
		ollamaTurn{calls: []string{ollamaCall("", "get_weather", `{"city":42}`)}},
		ollamaTurn{calls: []string{ollamaCall("", "get_weather", `{"city":"Paris"}`)}})
	tr := New(nil, ToolArgValidation())
	for _, stream := range []string{"false", "true"} {
		ex := do(t, tr, context.Background(), srv.URL+"/api/chat", ollamaRequest(stream))
		read := readOllama(t, ex)
		if len(read.calls) != 1 || !sameJSON(ollamaArgsOf(t, read.calls[0]), []byte(`{"city":"Paris"}`)) {
			t.Fatalf("stream %s: the client reads %v", stream, read.calls)
		}
		if _, ok := read.calls[0]["id"]; ok {
			t.Errorf("stream %s: the client reads an id the server did not send: %v", stream, read.calls[0])
		}
	}
	reqs := srv.requests()
	if len(reqs) != 3 {
		t.Fatalf("the server got %d requests, want 3 (a re-ask, then a good call)", len(reqs))
	}
	var r struct {
		Messages []map[string]any `json:"messages"`
	}
	if err := json.Unmarshal(reqs[1], &r); err != nil || len(r.Messages) != 3 {
		t.Fatalf("re-ask: %v\n%s", err, reqs[1])
	}
	if tool := r.Messages[2]; tool["tool_name"] != "get_weather" || tool["tool_call_id"] != nil {
		t.Errorf("the tool message is %v, want tool_name and no tool_call_id", tool)
	}
}

// Cleaned arguments (a string coerced to the integer the schema asks for)
// are written back as an object, sync and streamed, without a re-ask.
func TestOllamaCleanedArgumentsWrittenBack(t *testing.T) {
	t.Parallel()
	srv := newOllamaServer(t, ollamaTurn{calls: []string{ollamaCall("call_1", "get_forecast", `{"city":"Paris","days":"3"}`)}})
	tr := New(nil, ToolArgValidation())
	for _, stream := range []string{"false", "true"} {
		body := `{"model":"llama3.2","messages":[{"role":"user","content":"Forecast?"}],"stream":` + stream + `,` +
			`"tools":[{"type":"function","function":{"name":"get_forecast","parameters":{"type":"object",` +
			`"properties":{"city":{"type":"string"},"days":{"type":"integer"}},"required":["city","days"]}}}]}`
		read := readOllama(t, do(t, tr, context.Background(), srv.URL+"/api/chat", []byte(body)))
		if len(read.calls) != 1 || string(ollamaArgsOf(t, read.calls[0])) != `{"city":"Paris","days":3}` {
			t.Errorf("stream %s: the client reads %v, want the cleaned arguments object", stream, read.calls)
		}
	}
	if n := len(srv.requests()); n != 2 {
		t.Errorf("the server got %d requests, want one per call", n)
	}
}

// An invalid call past the retries passes with give_up when failing open,
// and is refused in Ollama's error shape when failing closed: a 422 before
// anything was streamed, an error line once text was.
func TestOllamaInvalidPastRetries(t *testing.T) {
	t.Parallel()
	bad := ollamaTurn{calls: []string{ollamaCall("call_1", "get_weather", `{"city":42}`)}}
	badAfterText := ollamaTurn{text: "Checking.", calls: bad.calls}
	t.Run("open", func(t *testing.T) {
		t.Parallel()
		for _, stream := range []string{"false", "true"} {
			srv := newOllamaServer(t, bad)
			var kinds []guard.EventKind
			var mu sync.Mutex
			tr := New(nil, ToolArgValidation(guard.WithMaxRetries(1), guard.WithEventHandler(func(_ context.Context, e guard.Event) {
				mu.Lock()
				kinds = append(kinds, e.Kind)
				mu.Unlock()
			})))
			read := readOllama(t, do(t, tr, context.Background(), srv.URL+"/api/chat", ollamaRequest(stream)))
			if len(read.calls) != 1 || !sameJSON(ollamaArgsOf(t, read.calls[0]), []byte(`{"city":42}`)) {
				t.Errorf("stream %s: the client reads %v, want the last call as it came", stream, read.calls)
			}
			if n := len(srv.requests()); n != 2 {
				t.Errorf("stream %s: %d requests, want 2", stream, n)
			}
			mu.Lock()
			if len(kinds) == 0 || kinds[len(kinds)-1] != guard.EventGiveUp {
				t.Errorf("stream %s: events %v, want give_up last", stream, kinds)
			}
			mu.Unlock()
		}
	})
	t.Run("closed", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct {
			name, stream string
			turn         ollamaTurn
		}{{"sync", "false", bad}, {"stream", "true", bad}} {
			srv := newOllamaServer(t, tc.turn)
			tr := New(nil, ToolArgValidation(guard.WithMaxRetries(1), guard.WithFailClosed()))
			ex := do(t, tr, context.Background(), srv.URL+"/api/chat", ollamaRequest(tc.stream))
			var e struct {
				Error string `json:"error"`
			}
			if ex.resp.StatusCode != http.StatusUnprocessableEntity || json.Unmarshal(ex.body, &e) != nil ||
				!strings.HasPrefix(e.Error, "invalid_tool_calls: ") || ex.resp.Header.Get("X-Should-Retry") != "false" {
				t.Errorf("%s: %d %s, want a 422 {\"error\":\"invalid_tool_calls: …\"}", tc.name, ex.resp.StatusCode, ex.body)
			}
		}
		srv := newOllamaServer(t, badAfterText)
		tr := New(nil, ToolArgValidation(guard.WithMaxRetries(1), guard.WithFailClosed()))
		ex := do(t, tr, context.Background(), srv.URL+"/api/chat", ollamaRequest(""))
		lines := strings.Split(strings.TrimSpace(string(ex.body)), "\n")
		if ex.resp.StatusCode != http.StatusOK || len(lines) != 3 || !strings.HasPrefix(lines[2], `{"error":"invalid_tool_calls: `) {
			t.Errorf("after text: %d\n%s\nwant the text, then an error line", ex.resp.StatusCode, ex.body)
		}
		if strings.Contains(string(ex.body), `"tool_calls":`) {
			t.Errorf("after text: the client read the refused call:\n%s", ex.body)
		}
	})
}

// What the guard cannot read it does not pass: a line past MaxBody, a line
// that is not JSON, a stream without its done line, a sync answer that is
// not one object. Each is refused (502) whether failing open or closed for
// a stream, before anything reached the client; the upstream's own error
// line is passed on as it came.
func TestOllamaStreamBounds(t *testing.T) {
	t.Parallel()
	callLine := `{"model":"llama3.2","message":{"role":"assistant","content":"","tool_calls":[` +
		ollamaCall("call_1", "get_weather", `{"city":"Paris"}`) + `]},"done":false}` + "\n"
	huge := `{"model":"llama3.2","message":{"role":"assistant","content":"` + strings.Repeat("a", MaxBody) + `"},"done":false}` + "\n"
	for _, tc := range []struct {
		name   string
		lines  []string
		status int
		typ    string
	}{
		{"huge line", []string{huge}, http.StatusBadGateway, "response_too_large"},
		{"not JSON", []string{"{not json\n"}, http.StatusBadGateway, "response_unguardable"},
		{"not an object", []string{"[1,2]\n"}, http.StatusBadGateway, "response_unguardable"},
		{"message not an object", []string{`{"message":"hi","done":false}` + "\n"}, http.StatusBadGateway, "response_unguardable"},
		{"done not a boolean", []string{`{"message":{"role":"assistant","content":""},"done":"yes"}` + "\n"}, http.StatusBadGateway, "response_unguardable"},
		{"no done line", []string{callLine}, http.StatusBadGateway, "response_unguardable"},
		{"key twice", []string{`{"message":{"role":"assistant","content":"","tool_calls":[],"tool_calls":[]},"done":true}` + "\n"}, http.StatusBadGateway, "response_unguardable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := newOllamaServer(t, ollamaTurn{lines: tc.lines})
			tr := New(nil, ToolArgValidation())
			ex := do(t, tr, context.Background(), srv.URL+"/api/chat", ollamaRequest(""))
			var e struct {
				Error string `json:"error"`
			}
			if ex.resp.StatusCode != tc.status || json.Unmarshal(ex.body, &e) != nil || !strings.HasPrefix(e.Error, tc.typ+": ") {
				t.Errorf("%d %.300s, want %d {\"error\":\"%s: …\"}", ex.resp.StatusCode, ex.body, tc.status, tc.typ)
			}
		})
	}
	t.Run("upstream error line", func(t *testing.T) {
		t.Parallel()
		srv := newOllamaServer(t, ollamaTurn{lines: []string{
			`{"model":"llama3.2","message":{"role":"assistant","content":"Let me"},"done":false}` + "\n",
			`{"error":"model runner has unexpectedly stopped"}` + "\n"}})
		ex := do(t, New(nil, ToolArgValidation()), context.Background(), srv.URL+"/api/chat", ollamaRequest(""))
		want := `{"model":"llama3.2","message":{"role":"assistant","content":"Let me"},"done":false}` + "\n" +
			`{"error":"model runner has unexpectedly stopped"}` + "\n"
		if ex.resp.StatusCode != http.StatusOK || string(ex.body) != want {
			t.Errorf("%d\n%s\nwant\n%s", ex.resp.StatusCode, ex.body, want)
		}
	})
	t.Run("sync not one object", func(t *testing.T) {
		t.Parallel()
		srv := newOllamaServer(t, ollamaTurn{contentType: "application/json", lines: []string{callLine, callLine}})
		ex := do(t, New(nil, ToolArgValidation(guard.WithFailClosed())), context.Background(), srv.URL+"/api/chat", ollamaRequest("false"))
		if ex.resp.StatusCode != http.StatusBadGateway || !strings.HasPrefix(string(ex.body), `{"error":"response_unguardable: `) {
			t.Errorf("%d %s, want a 502 response_unguardable", ex.resp.StatusCode, ex.body)
		}
	})
	t.Run("stream not NDJSON", func(t *testing.T) {
		t.Parallel()
		srv := newOllamaServer(t, ollamaTurn{contentType: "text/plain", calls: []string{ollamaCall("call_1", "get_weather", `{"city":42}`)}})
		ex := do(t, New(nil, ToolArgValidation(guard.WithFailClosed())), context.Background(), srv.URL+"/api/chat", ollamaRequest(""))
		if ex.resp.StatusCode != http.StatusBadGateway || !strings.HasPrefix(string(ex.body), `{"error":"response_unguardable: `) {
			t.Errorf("%d %s, want a 502 response_unguardable", ex.resp.StatusCode, ex.body)
		}
	})
}

// A request that offers no tools is not held: its stream reaches the
// client byte for byte as the server sent it.
func TestOllamaWithoutToolsPassesThrough(t *testing.T) {
	t.Parallel()
	srv := newOllamaServer(t, ollamaTurn{text: "Hello there."})
	direct := do(t, http.DefaultTransport, context.Background(), srv.URL+"/api/chat", []byte(`{"model":"llama3.2","messages":[{"role":"user","content":"Hi"}]}`))
	guarded := do(t, New(nil, ToolArgValidation()), context.Background(), srv.URL+"/api/chat", []byte(`{"model":"llama3.2","messages":[{"role":"user","content":"Hi"}]}`))
	if !bytes.Equal(direct.body, guarded.body) || guarded.resp.Header.Get("Content-Type") != "application/x-ndjson" {
		t.Errorf("guarded\n%s\nwant\n%s", guarded.body, direct.body)
	}
}

// Ollama's refusal of a call its parser could not read ("error parsing
// tool call: raw='…', err=…"), a 500 or an error line of the stream, is
// re-asked with the model's text as its turn and the reason as the
// user's; the client reads the corrected call.
func TestOllamaProviderMalformed(t *testing.T) {
	t.Parallel()
	const refusal = `{"error":"error parsing tool call: raw='{\"city\": Paris}', err=invalid character 'P' looking for beginning of value"}`
	good := ollamaTurn{calls: []string{ollamaCall("call_2", "get_weather", `{"city":"Paris"}`)}}
	for _, tc := range []struct {
		name, stream string
		first        ollamaTurn
	}{
		{"sync 500", "false", ollamaTurn{status: http.StatusInternalServerError, contentType: "application/json", lines: []string{refusal}}},
		{"stream 500", "", ollamaTurn{status: http.StatusInternalServerError, contentType: "application/json", lines: []string{refusal}}},
		{"stream error line", "", ollamaTurn{lines: []string{
			`{"model":"llama3.2","message":{"role":"assistant","content":"","thinking":"Weather."},"done":false}` + "\n", refusal + "\n"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := newOllamaServer(t, tc.first, good)
			var mu sync.Mutex
			var kinds []guard.EventKind
			tr := New(nil, ToolArgValidation(guard.WithEventHandler(func(_ context.Context, e guard.Event) {
				mu.Lock()
				kinds = append(kinds, e.Kind)
				mu.Unlock()
			})))
			ex := do(t, tr, context.Background(), srv.URL+"/api/chat", ollamaRequest(tc.stream))
			read := readOllama(t, ex)
			if len(read.calls) != 1 || !sameJSON(ollamaArgsOf(t, read.calls[0]), []byte(`{"city":"Paris"}`)) {
				t.Fatalf("the client reads %v\n%s", read.calls, ex.body)
			}
			reqs := srv.requests()
			if len(reqs) != 2 {
				t.Fatalf("the server got %d requests, want 2", len(reqs))
			}
			var r struct {
				Messages []map[string]any `json:"messages"`
			}
			if err := json.Unmarshal(reqs[1], &r); err != nil || len(r.Messages) != 3 {
				t.Fatalf("re-ask: %v\n%s", err, reqs[1])
			}
			if m := r.Messages[1]; m["role"] != "assistant" || m["content"] != `{"city": Paris}` {
				t.Errorf("the model's turn is %v, want its text as it came", m)
			}
			if m := r.Messages[2]; m["role"] != "user" || !strings.Contains(m["content"].(string), "invalid character") {
				t.Errorf("the feedback turn is %v", m)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(kinds) == 0 || kinds[0] != guard.EventProviderMalformed {
				t.Errorf("events %v, want provider_malformed first", kinds)
			}
		})
	}
}

// A limit's stand-in answer ([guard.ExitEnd]) reaches a streaming client
// as Ollama lines: the first attempt's text, then the stand-in text, the
// held calls never, the done line last.
func TestOllamaLimitEndStreamed(t *testing.T) {
	t.Parallel()
	srv := newOllamaServer(t, ollamaTurn{text: "On it.", calls: []string{
		ollamaCall("call_1", "get_weather", `{"city":"Paris"}`), ollamaCall("call_2", "get_weather", `{"city":"Lyon"}`)}})
	tr := New(nil, ToolCallLimit(guard.WithRunLimit(1), guard.WithExitBehavior(guard.ExitEnd)), ToolArgValidation())
	ex := do(t, tr, context.Background(), srv.URL+"/api/chat", ollamaRequest(""), "Content-Type", "application/json")
	t.Logf("the client read:\n%s", ex.body)
	read := readOllama(t, ex)
	if len(read.calls) != 0 || !strings.HasPrefix(read.content, "On it.") || !strings.Contains(read.content, "limit") {
		t.Errorf("the client reads content %q, calls %v; want the text, then the limit's answer, no call", read.content, read.calls)
	}
	if read.last["done"] != true {
		t.Errorf("the last line is %v, want done", read.last)
	}
}

// HistoryCheck passes an Ollama request as it came, even under
// RefuseHistory: Ollama refuses no unanswered call, orphaned result or
// repeated id.
func TestOllamaHistoryNotChecked(t *testing.T) {
	t.Parallel()
	srv := newOllamaServer(t, ollamaTurn{text: "Done."})
	body := []byte(`{"model":"llama3.2","stream":false,"messages":[{"role":"user","content":"Weather?"},` +
		`{"role":"assistant","content":"","tool_calls":[{"id":"call_1","function":{"name":"get_weather","arguments":{"city":"Paris"}}}]},` +
		`{"role":"user","content":"And?"}],` + ollamaTools + `}`)
	ex := do(t, New(nil, HistoryCheck(RefuseHistory), ToolArgValidation()), context.Background(), srv.URL+"/api/chat", body)
	if reqs := srv.requests(); ex.resp.StatusCode != http.StatusOK || len(reqs) != 1 || !bytes.Equal(reqs[0], body) {
		t.Errorf("%d %s; the server received %q, want the request as it came", ex.resp.StatusCode, ex.body, reqs)
	}
}
