package httpguard

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/guard"
)

// Ollama streams unless the body says "stream": false; its tools'
// parameters are the schemas.
func TestOllamaParseRequest(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		body   string
		stream bool
	}{
		{string(ollamaRequest("")), true},
		{string(ollamaRequest("true")), true},
		{string(ollamaRequest("false")), false},
		{string(ollamaRequest("null")), true},
	} {
		w, err := ollamaWire{}.parseRequest("/api/chat", []byte(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		if w.Stream != tc.stream || w.Model != "llama3.2" || len(w.Tools) != 1 || w.Tools[0].Name != "get_weather" ||
			!sameJSON(w.Tools[0].Schema, []byte(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)) {
			t.Errorf("parseRequest(%s) = %+v", tc.body, w)
		}
	}
	if _, err := (ollamaWire{}).parseRequest("/api/chat", []byte(`{"model":"m","prompt":"hi"}`)); !errors.Is(err, errUnsupported) {
		t.Errorf("a body without messages: %v, want errUnsupported", err)
	}
	deep := `{"model":"m","messages":[],"tools":[{"type":"function","function":{"name":"deep","parameters":` +
		strings.Repeat(`{"a":`, 10001) + `1` + strings.Repeat(`}`, 10001) + `}},` +
		`{"type":"function","function":{"name":"flat","parameters":{"type":"object"}}}]}`
	w, err := ollamaWire{}.parseRequest("/api/chat", []byte(deep))
	if err != nil || len(w.Tools) != 2 || w.Tools[0].Err == nil || w.Tools[1].Err != nil {
		t.Errorf("a schema nested too deep: %+v, %v; want it to cost its own tool only", w, err)
	}
}

// Only POST …/api/chat is Ollama's; an error to it is in Ollama's shape.
func TestOllamaRecognised(t *testing.T) {
	t.Parallel()
	if _, ok := recognise(http.MethodPost, "/api/chat").(ollamaWire); !ok {
		t.Errorf("POST /api/chat is not recognised as Ollama")
	}
	if _, ok := recognise(http.MethodPost, "/ollama/api/chat").(ollamaWire); !ok {
		t.Errorf("POST /ollama/api/chat (behind a prefix) is not recognised as Ollama")
	}
	for _, p := range []string{"/api/generate", "/api/chat/x", "/v1/chat/completions"} {
		if _, ok := recognise(http.MethodPost, p).(ollamaWire); ok {
			t.Errorf("%s is taken for Ollama's /api/chat", p)
		}
	}
	resp := ErrorResponse(httptest.NewRequest(http.MethodPost, "/api/chat", nil), http.StatusUnauthorized, "authentication_error", "bad key")
	b, _ := io.ReadAll(resp.Body)
	if string(b) != `{"error":"authentication_error: bad key"}` {
		t.Errorf("ErrorResponse body %s", b)
	}
}

// The reads of a response: usage from the counts, finish from done_reason,
// text from content (not thinking), the transcript's turns.
func TestOllamaReads(t *testing.T) {
	t.Parallel()
	resp := []byte(`{"model":"llama3.2","message":{"role":"assistant","content":"Hi.","thinking":"hmm"},"done":true,"done_reason":"stop","prompt_eval_count":94,"eval_count":11}`)
	w := ollamaWire{}
	if u, err := w.usage(resp); err != nil || u != (wireUsage{Model: "llama3.2", InputTokens: 94, OutputTokens: 11, Reported: true}) {
		t.Errorf("usage = %+v, %v", u, err)
	}
	if f := w.finish(resp); len(f) != 1 || f[0] != "stop" {
		t.Errorf("finish = %v", f)
	}
	if s, err := w.text(resp); s != "Hi." || err != nil {
		t.Errorf("text = %q, %v", s, err)
	}
	if _, err := w.text([]byte(`{"message":{"content":"a","Content":"b"}}`)); !isUnguardable(err) {
		t.Errorf("text of a key given in two cases: %v, want unguardable", err)
	}
	ts := w.transcript([]byte(`{"messages":[{"role":"system","content":"s"},{"role":"User","content":"q"},` +
		`{"role":"assistant","content":"","tool_calls":[{"function":{"name":"a","arguments":{}}},{"function":{"name":"b","arguments":{}}}]},` +
		`{"role":"tool","content":"r","tool_name":"a"}]}`))
	if len(ts) != 4 || ts[0].Kind == guard.UserTurn || ts[1].Kind != guard.UserTurn || ts[2].Kind != guard.ModelTurn ||
		strings.Join(ts[2].Calls, ",") != "a,b" || ts[3].Kind == guard.UserTurn {
		t.Errorf("transcript = %+v", ts)
	}
	end := w.end("llama3.2", "Limit reached.")
	if s, err := w.text(end); s != "Limit reached." || err != nil {
		t.Errorf("end's text = %q, %v", s, err)
	}
	if cs, err := w.calls(end); len(cs) != 0 || err != nil {
		t.Errorf("end's calls = %v, %v", cs, err)
	}
}

// The assembled stream is what Ollama answers the same request with
// "stream": false: the last line with every line's content and thinking
// joined and the tool calls in order.
func TestOllamaAssemble(t *testing.T) {
	t.Parallel()
	a := &ollamaAssembler{}
	for _, l := range []string{
		`{"model":"m","message":{"role":"assistant","content":"","thinking":"Th"},"done":false}`,
		`{"model":"m","message":{"role":"assistant","content":"","thinking":"ink."},"done":false}`,
		`{"model":"m","message":{"role":"assistant","content":"Let "},"done":false}`,
		`{"model":"m","message":{"role":"assistant","content":"me."},"done":false}`,
		`{"model":"m","message":{"role":"assistant","content":"","tool_calls":[{"id":"c1","function":{"index":0,"name":"a","arguments":{"x":1}}}]},"done":false}`,
		`{"model":"m","message":{"role":"assistant","content":"","tool_calls":[{"id":"c2","function":{"index":1,"name":"b","arguments":{}}}]},"done":false}`,
		`{"model":"m","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","eval_count":7}`,
	} {
		done, err := a.add(streamEvent{Data: []byte(l)})
		if err != nil {
			t.Fatal(err)
		}
		if done != strings.Contains(l, `"done":true`) {
			t.Errorf("add(%s) done = %v", l, done)
		}
	}
	got, err := a.response()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"model":"m","message":{"role":"assistant","content":"Let me.","thinking":"Think.","tool_calls":[` +
		`{"id":"c1","function":{"index":0,"name":"a","arguments":{"x":1}}},{"id":"c2","function":{"index":1,"name":"b","arguments":{}}}]},` +
		`"done":true,"done_reason":"stop","eval_count":7}`
	if string(got) != want {
		t.Errorf("assembled\n%s\nwant\n%s", got, want)
	}
}
