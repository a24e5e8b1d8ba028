package httpguard

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/guard"
	fp "github.com/toolguard/toolguard/httpguard/fakeprovider"
)

// chatCustomToolsRequest offers a function tool and a custom (freeform) tool.
func chatCustomToolsRequest(stream bool) []byte {
	s := ""
	if stream {
		s = `"stream":true,`
	}
	return []byte(`{"model":"gpt-4o",` + s + `"messages":[{"role":"user","content":"Weather in Paris?"}],"tools":[` +
		`{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}},` +
		`{"type":"custom","custom":{"name":"shell","description":"Runs a command.","format":{"type":"text"}}}]}`)
}

// chatCustomAnswer is a chat completion whose message calls get_weather with
// each of args, then the custom tool shell with the input "ls -la\n".
func chatCustomAnswer(args ...string) string {
	var calls []string
	for i, a := range args {
		calls = append(calls, `{"id":"call_f`+string(rune('0'+i))+`","type":"function","function":{"name":"get_weather","arguments":`+marshalQuoted(a)+`}}`)
	}
	calls = append(calls, `{"id":"call_c","type":"custom","custom":{"name":"shell","input":"ls -la\n"}}`)
	return `{"id":"chatcmpl-c","object":"chat.completion","created":1,"model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[` +
		strings.Join(calls, ",") + `],"refusal":null},"finish_reason":"tool_calls"}]}`
}

// chatJSONAnswer answers with body, a JSON response.
func chatJSONAnswer(body string) fp.Step {
	return fp.Raw(http.StatusOK, body, "Content-Type", "application/json")
}

// customCall is the custom call a client reads in a chat completion.
func chatCustomCall(t *testing.T, resp []byte) (id, name, input string) {
	t.Helper()
	var r struct {
		Choices []struct {
			Message struct {
				ToolCalls []struct {
					ID     string
					Type   string
					Custom struct{ Name, Input string }
				} `json:"tool_calls"`
			}
		}
	}
	if err := json.Unmarshal(resp, &r); err != nil || len(r.Choices) != 1 {
		t.Fatalf("%v: %s", err, resp)
	}
	for _, c := range r.Choices[0].Message.ToolCalls {
		if c.Type == "custom" {
			return c.ID, c.Custom.Name, c.Custom.Input
		}
	}
	return "", "", ""
}

// chatToolMessages are the tool messages a chat request ends with, after its
// last assistant message, in order: tool_call_id and content.
func chatToolMessages(t *testing.T, req []byte) [][2]string {
	t.Helper()
	var r struct {
		Messages []struct {
			Role       string
			ToolCallID string `json:"tool_call_id"`
			Content    string
		}
	}
	if err := json.Unmarshal(req, &r); err != nil {
		t.Fatal(err)
	}
	var out [][2]string
	for _, m := range r.Messages {
		switch m.Role {
		case "assistant":
			out = nil
		case "tool":
			out = append(out, [2]string{m.ToolCallID, m.Content})
		}
	}
	return out
}

// A custom tool call beside a function call: the function call is
// guarded (its invalid arguments re-asked, with a tool message for every
// call of the replayed turn, the custom call's saying it was not run), and
// the custom call reaches the client as it came.
func TestChatCustomCallBesideFunctionCall(t *testing.T) {
	t.Parallel()
	srv := fp.New(chatJSONAnswer(chatCustomAnswer(`{"city": 42}`)), chatJSONAnswer(chatCustomAnswer(`{"city": "Paris"}`)))
	defer srv.Close()
	ex := do(t, New(nil, ToolArgValidation()), context.Background(), srv.URL+"/v1/chat/completions", chatCustomToolsRequest(false))
	if ex.resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", ex.resp.StatusCode, ex.body)
	}
	calls := callsOf(t, chatWire{}, ex.body)
	if len(calls) != 1 || !sameJSON(calls[0].Args, []byte(`{"city":"Paris"}`)) {
		t.Errorf("the client reads the function calls %+v, want get_weather Paris", calls)
	}
	if id, name, input := chatCustomCall(t, ex.body); id != "call_c" || name != "shell" || input != "ls -la\n" {
		t.Errorf("the client reads the custom call %q %q %q, want call_c shell %q", id, name, input, "ls -la\n")
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d upstream requests, want 2 (a re-ask)", len(reqs))
	}
	tm := chatToolMessages(t, reqs[1].Body)
	if len(tm) != 2 || tm[0][0] != "call_f0" || !strings.Contains(tm[0][1], "city") || tm[1] != [2]string{"call_c", customNotRun} {
		t.Errorf("the re-ask's tool messages are %q, want call_f0's feedback, then call_c's %q", tm, customNotRun)
	}
	if !strings.Contains(string(reqs[1].Body), `"custom":{"name":"shell","input":"ls -la\n"}`) {
		t.Errorf("the re-ask does not replay the custom call:\n%s", reqs[1].Body)
	}
}

// Under fail closed, an invalid function call beside a custom call is
// refused: the custom call does not make the response unreadable.
func TestChatCustomCallFailClosed(t *testing.T) {
	t.Parallel()
	srv := fp.New(chatJSONAnswer(chatCustomAnswer(`{"city": 42}`)))
	defer srv.Close()
	tr := New(nil, ToolArgValidation(guard.WithMaxRetries(0), guard.WithFailClosed()))
	ex := do(t, tr, context.Background(), srv.URL+"/v1/chat/completions", chatCustomToolsRequest(false))
	typ, _ := errorType(t, chatWire{}, ex.body)
	if ex.resp.StatusCode != http.StatusUnprocessableEntity || typ != "invalid_tool_calls" {
		t.Errorf("the client got %d %q: %.300s; want 422 invalid_tool_calls", ex.resp.StatusCode, typ, ex.body)
	}
}

// ToolCallLimit counts the function calls of a response with a custom
// call, not the custom call: a run limit of 1 lets one function call and
// a custom call through, and blocks two function calls.
func TestChatCustomCallNotCounted(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		want int
	}{
		{"one function call", []string{`{"city":"Paris"}`}, http.StatusOK},
		{"two function calls", []string{`{"city":"Paris"}`, `{"city":"Rome"}`}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := fp.New(chatJSONAnswer(chatCustomAnswer(tc.args...)))
			defer srv.Close()
			tr := New(nil, ToolCallLimit(guard.WithRunLimit(1), guard.WithExitBehavior(guard.ExitError)), ToolArgValidation())
			ex := do(t, tr, context.Background(), srv.URL+"/v1/chat/completions", chatCustomToolsRequest(false))
			if ok := ex.resp.StatusCode == http.StatusOK; ok != (tc.want == http.StatusOK) {
				t.Errorf("status %d: %.300s; want it let through: %v", ex.resp.StatusCode, ex.body, tc.want == http.StatusOK)
			}
			if ex.resp.StatusCode == http.StatusOK {
				if _, _, input := chatCustomCall(t, ex.body); input != "ls -la\n" {
					t.Errorf("the custom call's input is %q", input)
				}
			}
		})
	}
}

// chatCustomStream is a chat stream calling get_weather with args (in two
// fragments) and then shell with "ls -la" (in two fragments).
func chatCustomStream(args string) fp.Step {
	half := len(args) / 2
	return sse(chatChunkEvent(`{"role":"assistant","content":null}`),
		chatChunkEvent(`{"tool_calls":[{"index":0,"id":"call_f","type":"function","function":{"name":"get_weather","arguments":""}}]}`),
		chatChunkEvent(`{"tool_calls":[{"index":0,"function":{"arguments":`+marshalQuoted(args[:half])+`}}]}`),
		chatChunkEvent(`{"tool_calls":[{"index":0,"function":{"arguments":`+marshalQuoted(args[half:])+`}}]}`),
		chatChunkEvent(`{"tool_calls":[{"index":1,"id":"call_c","type":"custom","custom":{"name":"shell","input":""}}]}`),
		chatChunkEvent(`{"tool_calls":[{"index":1,"custom":{"input":"ls "}}]}`),
		chatChunkEvent(`{"tool_calls":[{"index":1,"custom":{"input":"-la"}}]}`),
		`data: {"id":"chatcmpl-up","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
		`data: [DONE]`)
}

// A streamed custom call reaches the client whole, beside the function
// call, held and validated as usual (an invalid one re-asked first).
func TestChatCustomCallStreamed(t *testing.T) {
	t.Parallel()
	srv := fp.New(chatCustomStream(`{"city": 42}`), chatCustomStream(`{"city": "Paris"}`))
	defer srv.Close()
	ex := do(t, New(nil, ToolArgValidation()), context.Background(), srv.URL+"/v1/chat/completions", chatCustomToolsRequest(true))
	if ex.resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", ex.resp.StatusCode, ex.body)
	}
	got := assemble(t, chatWire{}, events(t, ex.body))
	calls := callsOf(t, chatWire{}, got)
	if len(calls) != 1 || !sameJSON(calls[0].Args, []byte(`{"city":"Paris"}`)) {
		t.Errorf("the client reads the function calls %+v, want get_weather Paris:\n%s", calls, ex.body)
	}
	if id, name, input := chatCustomCall(t, got); id != "call_c" || name != "shell" || input != "ls -la" {
		t.Errorf("the client reads the custom call %q %q %q, want call_c shell \"ls -la\":\n%s", id, name, input, ex.body)
	}
	if n := strings.Count(string(ex.body), `"type":"custom"`); n != 1 {
		t.Errorf("the client reads %d custom call parts, want the call once, whole:\n%s", n, ex.body)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d upstream requests, want 2 (a re-ask)", len(reqs))
	}
	if tm := chatToolMessages(t, reqs[1].Body); len(tm) != 2 || tm[0][0] != "call_f" || tm[1] != [2]string{"call_c", customNotRun} {
		t.Errorf("the re-ask's tool messages are %q", tm)
	}
}

// Shapes the guard cannot read are unguardable, not skipped, in a response
// and in a stream: a legacy function_call, several choices of which one
// holds tool calls, a tool call of an unknown type. Several choices of
// text only are read (no calls).
func TestChatUnreadableShapesRefused(t *testing.T) {
	t.Parallel()
	msg := func(m string) string { return `{"index":0,"message":` + m + `,"finish_reason":"stop"}` }
	resp := func(choices ...string) string {
		return `{"id":"x","object":"chat.completion","choices":[` + strings.Join(choices, ",") + `]}`
	}
	call := `{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"get_weather","arguments":"{}"}}]}`
	for _, tc := range []struct {
		name, resp  string
		stream      []string
		unguardable bool
	}{
		{"legacy function_call", resp(msg(`{"role":"assistant","function_call":{"name":"get_weather","arguments":"{}"}}`)),
			[]string{`{"role":"assistant","function_call":{"name":"get_weather","arguments":"{}"}}`}, true},
		{"two choices, one with tool calls", resp(msg(`{"role":"assistant","content":"a"}`), strings.Replace(msg(call), `"index":0`, `"index":1`, 1)),
			[]string{`{"role":"assistant","content":"a"}`, `1:{"tool_calls":[{"index":0,"id":"c","type":"function","function":{"name":"get_weather","arguments":"{}"}}]}`}, true},
		{"two choices, tool calls in the first", resp(msg(call), strings.Replace(msg(`{"role":"assistant","content":"b"}`), `"index":0`, `"index":1`, 1)),
			[]string{`{"tool_calls":[{"index":0,"id":"c","type":"function","function":{"name":"get_weather","arguments":"{}"}}]}`, `1:{"content":"b"}`}, true},
		{"unknown tool call type", resp(msg(`{"role":"assistant","tool_calls":[{"id":"c","type":"computer","computer":{"action":"click"}}]}`)),
			[]string{`{"tool_calls":[{"index":0,"id":"c","type":"computer","computer":{"action":"click"}}]}`}, true},
		{"two choices of text", resp(msg(`{"role":"assistant","content":"a"}`), strings.Replace(msg(`{"role":"assistant","content":"b"}`), `"index":0`, `"index":1`, 1)),
			[]string{`{"role":"assistant","content":"a"}`, `1:{"role":"assistant","content":"b"}`}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls, err := chatWire{}.calls([]byte(tc.resp))
			if isUnguardable(err) != tc.unguardable || (!tc.unguardable && (err != nil || len(calls) != 0)) {
				t.Errorf("calls(%s) = %v, %v; want unguardable: %v", tc.resp, calls, err, tc.unguardable)
			}
			a := chatWire{}.newAssembler()
			var serr error
			for _, d := range tc.stream {
				index := "0"
				if strings.HasPrefix(d, "1:") {
					index, d = "1", d[2:]
				}
				ev := streamEvent{Data: []byte(`{"id":"x","object":"chat.completion.chunk","choices":[{"index":` + index + `,"delta":` + d + `,"finish_reason":null}]}`)}
				if _, serr = a.add(ev); serr != nil {
					break
				}
			}
			if serr == nil {
				_, serr = a.response()
			}
			if isUnguardable(serr) != tc.unguardable || (!tc.unguardable && serr != nil) {
				t.Errorf("the stream's assembler: %v; want unguardable: %v", serr, tc.unguardable)
			}
		})
	}
}

// A stream of two choices of text only (n = 2) reaches the client whole:
// each choice's text once, each finish reason, [DONE] last.
func TestChatSeveralChoicesOfTextStreamed(t *testing.T) {
	t.Parallel()
	chunk := func(index int, delta, finish string) string {
		return fmt.Sprintf(`data: {"id":"chatcmpl-up","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":%d,"delta":%s,"finish_reason":%s}]}`, index, delta, finish)
	}
	srv := fp.New(sse(chunk(0, `{"role":"assistant","content":""}`, "null"), chunk(1, `{"role":"assistant","content":""}`, "null"),
		chunk(0, `{"content":"Sunny"}`, "null"), chunk(1, `{"content":"Rainy"}`, "null"), chunk(1, `{"content":" in Paris."}`, "null"),
		chunk(0, `{}`, `"stop"`), chunk(0, `{"content":" in Rome."}`, "null"), chunk(1, `{}`, `"stop"`), `data: [DONE]`))
	defer srv.Close()
	body := []byte(strings.Replace(string(chatCustomToolsRequest(true)), `"stream":true,`, `"stream":true,"n":2,`, 1))
	ex := do(t, New(nil, ToolArgValidation()), context.Background(), srv.URL+"/v1/chat/completions", body)
	if ex.resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", ex.resp.StatusCode, ex.body)
	}
	text, finish := map[int]string{}, map[int]string{}
	evs := events(t, ex.body)
	for _, ev := range evs[:len(evs)-1] {
		var c struct {
			Choices []struct {
				Index        int
				Delta        struct{ Content string }
				FinishReason string `json:"finish_reason"`
			}
		}
		if err := json.Unmarshal(ev.Data, &c); err != nil {
			t.Fatalf("%v: %s", err, ev.Data)
		}
		for _, ch := range c.Choices {
			text[ch.Index] += ch.Delta.Content
			finish[ch.Index] += ch.FinishReason
		}
	}
	if text[0] != "Sunny in Rome." || text[1] != "Rainy in Paris." || finish[0] != "stop" || finish[1] != "stop" || string(evs[len(evs)-1].Data) != "[DONE]" {
		t.Errorf("the client reads texts %q, finish reasons %q:\n%s", text, finish, ex.body)
	}
}
