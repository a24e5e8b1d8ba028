package httpguard

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// protocols are the four codecs with the fixture directory and the path
// of their recorded request.
var protocols = []struct {
	dir, path, streamPath string
	w                     wireProtocol
}{
	{"openai-chat", "/v1/chat/completions", "/v1/chat/completions", chatWire{}},
	{"openai-responses", "/v1/responses", "/v1/responses", responsesWire{}},
	{"anthropic", "/v1/messages", "/v1/messages", messagesWire{}},
	{"gemini", "/v1beta/models/gemini-2.5-flash:generateContent", "/v1beta/models/gemini-2.5-flash:streamGenerateContent", geminiWire{}},
}

// The recorded first attempt has two calls: get_weather {"city": 42}
// (bad) and get_weather {"city": "Lyon"}.
var (
	cleaned = [][]byte{[]byte(`{"city":"Paris"}`), nil}
	answers = []wireAnswer{
		{Content: `city: got number, want string. Call get_weather again with corrected arguments.`, IsError: true},
		{Content: `not run: another call in this turn was invalid; call it again if still needed`},
	}
)

const weatherSchema = `{"properties":{"city":{"type":"string"}},"required":["city"],"type":"object"}`

func TestParseRequest(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.dir, func(t *testing.T) {
			for _, tc := range []struct {
				file, path string
				stream     bool
			}{{"request.json", p.path, false}, {"stream-request.json", p.streamPath, true}} {
				if got := recognise(http.MethodPost, tc.path); got != p.w {
					t.Fatalf("recognise(POST, %s) = %v, want %v", tc.path, got, p.w)
				}
				req, err := p.w.parseRequest(tc.path, fixture(t, p.dir, tc.file))
				if err != nil {
					t.Fatal(err)
				}
				if req.Stream != tc.stream || req.Model == "" || len(req.Tools) != 1 || req.Tools[0].Name != "get_weather" || !sameJSON(req.Tools[0].Schema, []byte(weatherSchema)) {
					t.Errorf("parseRequest(%s) = %+v (schema %s)", tc.file, req, req.Tools[0].Schema)
				}
			}
		})
	}
}

func TestRecognise(t *testing.T) {
	tests := []struct {
		method, path string
		want         wireProtocol
	}{
		{"POST", "/v1/chat/completions", chatWire{}},
		{"POST", "/openai/deployments/gpt4/chat/completions", chatWire{}},
		{"GET", "/v1/chat/completions", nil},
		{"POST", "/v1/responses", responsesWire{}},
		{"POST", "/v1/responses/resp_1/cancel", nil},
		{"POST", "/v1/messages", messagesWire{}},
		{"POST", "/v1/messages/count_tokens", nil},
		{"POST", "/v1/messages/batches", nil},
		{"POST", "/v1beta/models/gemini-2.5-flash:generateContent", geminiWire{}},
		{"POST", "/v1beta/models/gemini-2.5-flash:streamGenerateContent", geminiWire{}},
		{"POST", "/v1/projects/p/locations/l/publishers/google/models/gemini-2.5-pro:generateContent", geminiWire{}},
		{"POST", "/v1beta/models/gemini-2.5-flash:countTokens", nil},
		{"POST", "/v1beta/models/:generateContent", nil},
		{"POST", "/v1/embeddings", nil},
	}
	for _, tc := range tests {
		if got := recognise(tc.method, tc.path); got != tc.want {
			t.Errorf("recognise(%s, %s) = %v, want %v", tc.method, tc.path, got, tc.want)
		}
	}
}

// A body that is not the protocol's is refused, never guarded with a
// guess, and never a panic.
func TestParseRequestRefusesOtherBodies(t *testing.T) {
	bodies := []string{``, `[]`, `{"model":"m"}`, `{"messages":{}}`, `{"contents":"x"}`, `{"a":1,"a":2}`, `not json`}
	for _, p := range protocols {
		for _, b := range bodies {
			if _, err := p.w.parseRequest(p.path, []byte(b)); err == nil {
				t.Errorf("%s.parseRequest(%q) = nil error", p.dir, b)
			}
		}
	}
	// Several candidates cannot be re-asked as one turn. (Chat's n > 1 is
	// read: see TestChatUnreadableShapesRefused.)
	if _, err := (geminiWire{}).parseRequest("/v1beta/models/m:generateContent", []byte(`{"contents":[],"generationConfig":{"candidateCount":2}}`)); !errors.Is(err, errUnsupported) {
		t.Errorf("gemini candidateCount=2: %v, want errUnsupported", err)
	}
}

func TestCalls(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.dir, func(t *testing.T) {
			calls, err := p.w.calls(fixture(t, p.dir, "response.json"))
			if err != nil {
				t.Fatal(err)
			}
			if len(calls) != 2 {
				t.Fatalf("calls = %+v, want 2", calls)
			}
			for i, want := range []string{`{"city": 42}`, `{"city": "Lyon"}`} {
				c := calls[i]
				if c.Name != "get_weather" || !sameJSON(c.Args, []byte(want)) {
					t.Errorf("call %d = %+v, want args %s", i, c, want)
				}
				// Gemini sent no ids; the others did.
				if (p.dir == "gemini") != (c.ID == "") {
					t.Errorf("call %d id = %q", i, c.ID)
				}
			}
		})
	}
}

// accept changes the cleaned call's arguments and no other byte.
func TestAccept(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.dir, func(t *testing.T) {
			resp := fixture(t, p.dir, "response.json")
			same, err := p.w.accept(resp, [][]byte{nil, nil})
			if err != nil || !bytes.Equal(same, resp) {
				t.Fatalf("accept with nothing cleaned changed the response: %v\n%s", err, same)
			}
			got, err := p.w.accept(resp, cleaned)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, p.dir, "accepted.json", got)
			calls, err := p.w.calls(got)
			if err != nil {
				t.Fatal(err)
			}
			if !sameJSON(calls[0].Args, cleaned[0]) || !sameJSON(calls[1].Args, []byte(`{"city":"Lyon"}`)) {
				t.Errorf("calls after accept = %+v", calls)
			}
			// Every byte outside the replaced value is the response's.
			pre := commonPrefix(resp, got)
			suf := commonSuffix(resp[pre:], got[pre:])
			if removed := resp[pre : len(resp)-suf]; !bytes.Contains(removed, []byte("42")) || len(removed) > 20 {
				t.Errorf("accept replaced %q, want only the bad arguments", removed)
			}
			if _, err := p.w.accept(resp, [][]byte{[]byte(`{"city":`), nil}); err == nil {
				t.Error("accept took arguments that are not JSON")
			}
			if _, err := p.w.accept(resp, cleaned[:1]); err == nil {
				t.Error("accept took one argument for two calls")
			}
		})
	}
}

func commonPrefix(a, b []byte) int {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return i
}

func commonSuffix(a, b []byte) int {
	i := 0
	for i < len(a) && i < len(b) && a[len(a)-1-i] == b[len(b)-1-i] {
		i++
	}
	return i
}

// reask appends the response's turn, replayed, and one tool result per
// call to the original request, which keeps every byte it had before.
func TestReask(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.dir, func(t *testing.T) {
			// An unknown field must pass through.
			req := fixture(t, p.dir, "request.json")
			req = append([]byte(`{"x_unknown":{"keep":[1,2.50]},`), req[1:]...)
			resp := fixture(t, p.dir, "response.json")
			got, err := p.w.reask(req, resp, answers)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, p.dir, "reask.json", got)
			if !bytes.Contains(got, []byte(`"x_unknown":{"keep":[1,2.50]}`)) {
				t.Error("reask lost an unknown field")
			}
			if _, err := p.w.reask(req, resp, answers[:1]); err == nil {
				t.Error("reask took one answer for two calls")
			}
			// The re-ask parses as a request of the protocol, with the
			// same tools.
			if pr, err := p.w.parseRequest(p.path, got); err != nil || len(pr.Tools) != 1 {
				t.Errorf("parseRequest(reask) = %+v, %v", pr, err)
			}
			m := decode(t, got)
			switch p.dir {
			case "openai-chat":
				msgs := m["messages"].([]any)
				a, t1, t2 := msgs[1].(map[string]any), msgs[2].(map[string]any), msgs[3].(map[string]any)
				if len(msgs) != 4 || a["role"] != "assistant" || a["annotations"] != nil || a["refusal"] != nil ||
					t1["role"] != "tool" || t1["tool_call_id"] != "call_1" || t1["content"] != answers[0].Content || t2["tool_call_id"] != "call_2" {
					t.Errorf("messages = %v", msgs)
				}
				if !strings.Contains(string(got), `"arguments":"{\"city\": 42}"`) {
					t.Error("the replayed call is not the response's")
				}
			case "openai-responses":
				in := m["input"].([]any)
				if len(in) != 7 || in[0].(map[string]any)["content"] != "Weather in Paris?" {
					t.Fatalf("input = %v", in)
				}
				if rs := in[1].(map[string]any); rs["type"] != "reasoning" || rs["id"] != "rs_1" || rs["encrypted_content"] != "c2lnLTE=" {
					t.Errorf("reasoning item = %v", rs)
				}
				if o := in[5].(map[string]any); o["type"] != "function_call_output" || o["call_id"] != "call_1" || o["output"] != answers[0].Content {
					t.Errorf("function_call_output = %v", o)
				}
			case "anthropic":
				msgs := m["messages"].([]any)
				a := msgs[1].(map[string]any)["content"].([]any)
				if th := a[0].(map[string]any); th["type"] != "thinking" || th["signature"] != "c2lnLTE=" {
					t.Errorf("thinking = %v", th)
				}
				u := msgs[2].(map[string]any)
				rs := u["content"].([]any)
				r0, r1 := rs[0].(map[string]any), rs[1].(map[string]any)
				if u["role"] != "user" || r0["type"] != "tool_result" || r0["tool_use_id"] != "toolu_1" || r0["is_error"] != true || r1["is_error"] != nil {
					t.Errorf("tool results = %v", u)
				}
			case "gemini":
				cs := m["contents"].([]any)
				parts := cs[1].(map[string]any)["parts"].([]any)
				if cs[1].(map[string]any)["role"] != "model" || parts[2].(map[string]any)["thoughtSignature"] != "dHMtMQ==" {
					t.Errorf("model turn = %v", cs[1])
				}
				fr := cs[2].(map[string]any)["parts"].([]any)
				f0 := fr[0].(map[string]any)["functionResponse"].(map[string]any)
				f1 := fr[1].(map[string]any)["functionResponse"].(map[string]any)
				if _, hasID := f0["id"]; hasID || f0["name"] != "get_weather" || f0["response"].(map[string]any)["error"] != answers[0].Content ||
					f1["response"].(map[string]any)["output"] != answers[1].Content {
					t.Errorf("function responses = %v", fr)
				}
			}
		})
	}
}

func TestUsage(t *testing.T) {
	want := map[string]wireUsage{
		"openai-chat":      {"gpt-4o", 20, 12, true},
		"openai-responses": {"gpt-4o", 20, 12, true},
		"anthropic":        {"claude-sonnet-4-5", 20, 12, true},
		"gemini":           {"gemini-2.5-flash", 20, 12, true},
	}
	for _, p := range protocols {
		u, err := p.w.usage(fixture(t, p.dir, "response.json"))
		if err != nil || u != want[p.dir] {
			t.Errorf("%s usage = %+v, %v, want %+v", p.dir, u, err, want[p.dir])
		}
	}
}

func TestErrorResponse(t *testing.T) {
	for _, p := range protocols {
		req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1"+p.path, nil)
		resp := errorResponse(p.w, req, http.StatusUnprocessableEntity, "invalid_tool_calls", `get_weather: /city: got number, want string`)
		body := new(bytes.Buffer)
		body.ReadFrom(resp.Body)
		if resp.StatusCode != 422 || resp.Header.Get("x-should-retry") != "false" || resp.Header.Get("Content-Type") != "application/json" ||
			resp.ContentLength != int64(body.Len()) || resp.Request != req {
			t.Errorf("%s: errorResponse = %+v", p.dir, resp)
		}
		golden(t, p.dir, "error.json", body.Bytes())
		if !strings.Contains(body.String(), "invalid_tool_calls") && !strings.Contains(body.String(), "INVALID_TOOL_CALLS") {
			t.Errorf("%s: error body %s does not name invalid tool calls", p.dir, body)
		}
	}
}

// A response without calls has none: text, server-run tools, a safety
// stop, several candidates without calls.
func TestResponsesWithoutCalls(t *testing.T) {
	// A response without calls has none.
	for _, tc := range []struct {
		w    wireProtocol
		resp string
	}{
		{chatWire{}, `{"choices":[{"index":0,"message":{"role":"assistant","content":"hi","tool_calls":null}}]}`},
		{responsesWire{}, `{"output":[{"type":"message","content":[]},{"type":"web_search_call","id":"ws"}]}`},
		{messagesWire{}, `{"content":[{"type":"text","text":"hi"},{"type":"server_tool_use","id":"s","name":"web_search","input":{}}]}`},
		{geminiWire{}, `{"candidates":[{"finishReason":"SAFETY"}]}`},
		// Several candidates without calls (TestGeminiSeveralCandidates
		// has those with calls).
		{geminiWire{}, `{"candidates":[{"content":{"parts":[]}},{"content":{"parts":[]}}]}`},
	} {
		if calls, err := tc.w.calls([]byte(tc.resp)); err != nil || len(calls) != 0 {
			t.Errorf("%s.calls(%s) = %v, %v, want none", tc.w.name(), tc.resp, calls, err)
		}
	}
}

// Server-side state is reported so the adapter can decide (DESIGN:
// a re-ask stored server-side stays in the conversation).
func TestServerState(t *testing.T) {
	tests := []struct {
		w    wireProtocol
		body string
		want serverState
	}{
		{responsesWire{}, `{"model":"m","input":"hi"}`, serverState{Stored: true}},
		{responsesWire{}, `{"model":"m","input":"hi","store":false}`, serverState{}},
		{responsesWire{}, `{"model":"m","previous_response_id":"resp_9","store":false}`, serverState{PreviousResponseID: "resp_9"}},
		{responsesWire{}, `{"model":"m","input":[],"conversation":"conv_1"}`, serverState{Conversation: "conv_1", Stored: true}},
		{responsesWire{}, `{"model":"m","input":[],"conversation":{"id":"conv_2"}}`, serverState{Conversation: "conv_2", Stored: true}},
		{chatWire{}, `{"model":"m","messages":[],"store":true}`, serverState{Stored: true}},
		{chatWire{}, `{"model":"m","messages":[]}`, serverState{}},
	}
	for _, tc := range tests {
		r, err := tc.w.parseRequest("/v1/x", []byte(tc.body))
		if err != nil || r.State != tc.want {
			t.Errorf("%s.parseRequest(%s).State = %+v, %v, want %+v", tc.w.name(), tc.body, r.State, err, tc.want)
		}
	}
	// A re-ask of a request that only continues a stored response adds
	// the input it lacked.
	got, err := responsesWire{}.reask([]byte(`{"model":"m","previous_response_id":"resp_9"}`), fixture(t, "openai-responses", "response.json"), answers)
	if err != nil {
		t.Fatal(err)
	}
	if m := decode(t, got); m["previous_response_id"] != "resp_9" || len(m["input"].([]any)) != 6 {
		t.Errorf("reask = %s", got)
	}
}

// The Chat replay keeps members a request accepts, drops those it
// refuses (annotations, nulls) and names audio by its id.
func TestChatReplay(t *testing.T) {
	resp := []byte(`{"choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":null,"annotations":[],"audio":{"id":"au_1","data":"AAAA","expires_at":1},"reasoning_content":"hm","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]}}]}`)
	got, err := chatWire{}.reask([]byte(`{"messages":[]}`), resp, []wireAnswer{{Content: "bad"}})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"messages":[{"role":"assistant","reasoning_content":"hm","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}],"audio":{"id":"au_1"}},{"role":"tool","tool_call_id":"c1","content":"bad"}]}`
	if string(got) != want {
		t.Errorf("reask =\n%s\nwant\n%s", got, want)
	}
}

func TestObjectArgsKeepInvalidText(t *testing.T) {
	// A stream's invalid JSON, assembled as a string, reads back as the
	// text the model sent.
	resp := []byte(`{"content":[{"type":"tool_use","id":"t","name":"f","input":"{\"city\": 4"}]}`)
	calls, err := messagesWire{}.calls(resp)
	if err != nil || string(calls[0].Args) != `{"city": 4` {
		t.Errorf("calls = %+v, %v", calls, err)
	}
	var v any
	if json.Unmarshal(calls[0].Args, &v) == nil {
		t.Error("invalid arguments became valid")
	}
}

// ErrorResponse answers in the shape of the protocol the path names, as
// each SDK reads its provider's errors: Anthropic's error.type, Gemini's
// code and Google status, else OpenAI's error.type and code; statuses the
// SDKs retry carry no x-should-retry, others false.
func TestErrorResponseShapes(t *testing.T) {
	type shaped struct {
		Type  string `json:"type"`
		Error struct {
			Type    string  `json:"type"`
			Code    any     `json:"code"`
			Message string  `json:"message"`
			Status  string  `json:"status"`
			Param   *string `json:"param"`
		} `json:"error"`
	}
	tests := []struct {
		method, path string
		status       int
		shape        string // anthropic, gemini, openai
		google       string // Gemini's status
		retry        string // x-should-retry
	}{
		{"POST", "/v1/chat/completions", 413, "openai", "", "false"},
		{"POST", "/openai/deployments/d/chat/completions", 502, "openai", "", ""},
		{"POST", "/v1/responses", 400, "openai", "", "false"},
		{"POST", "/v1/messages", 413, "anthropic", "", "false"},
		{"POST", "/v1/messages", 408, "anthropic", "", ""},
		{"POST", "/v1beta/models/gemini-2.5-flash:generateContent", 413, "gemini", "INVALID_ARGUMENT", "false"},
		{"POST", "/v1beta/models/gemini-2.5-flash:streamGenerateContent", 502, "gemini", "UNAVAILABLE", ""},
		{"POST", "/v1/projects/p/locations/l/publishers/google/models/gemini-2.5-flash:countTokens", 408, "gemini", "DEADLINE_EXCEEDED", ""},
		{"POST", "/v1beta/models/gemini-2.5-flash:generateContent", 503, "gemini", "UNAVAILABLE", ""},
		{"POST", "/v1/embeddings", 400, "openai", "", "false"},
		{"GET", "/v1/models", 429, "openai", "", ""},
	}
	for _, tc := range tests {
		req, _ := http.NewRequest(tc.method, "http://127.0.0.1"+tc.path+"?key=k", nil)
		resp := ErrorResponse(req, tc.status, "request_too_large", "the body is too large")
		b, _ := io.ReadAll(resp.Body)
		var e shaped
		if err := json.Unmarshal(b, &e); err != nil {
			t.Fatalf("%s %s: %v: %s", tc.method, tc.path, err, b)
		}
		name := fmt.Sprintf("%s %s %d", tc.method, tc.path, tc.status)
		if resp.StatusCode != tc.status || resp.Status != statusLine(tc.status) || resp.Header.Get("Content-Type") != "application/json" ||
			resp.ContentLength != int64(len(b)) || resp.Request != req || resp.Header.Get("X-Should-Retry") != tc.retry {
			t.Errorf("%s: %d %q, headers %v, length %d of %d, want x-should-retry %q", name, resp.StatusCode, resp.Status, resp.Header, resp.ContentLength, len(b), tc.retry)
		}
		ok := e.Error.Message == "the body is too large"
		switch tc.shape {
		case "anthropic":
			ok = ok && e.Type == "error" && e.Error.Type == "request_too_large"
		case "gemini":
			ok = ok && e.Error.Code == float64(tc.status) && e.Error.Status == tc.google && strings.Contains(string(b), `"reason":"REQUEST_TOO_LARGE"`)
		case "openai":
			ok = ok && e.Error.Type == "request_too_large" && e.Error.Code == "request_too_large" && strings.Contains(string(b), `"param":null`)
		}
		if !ok {
			t.Errorf("%s: body %s, want %s's error shape", name, b, tc.shape)
		}
	}
}
