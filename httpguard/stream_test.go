package httpguard

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func events(t *testing.T, b []byte) []streamEvent {
	t.Helper()
	evs, err := readAll(t, bytes.NewReader(b), MaxBody)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// assemble runs a stream through the protocol's assembler.
func assemble(t *testing.T, w wireProtocol, evs []streamEvent) []byte {
	t.Helper()
	a := w.newAssembler()
	for _, ev := range evs {
		if _, err := a.add(ev); err != nil {
			t.Fatalf("add(%s): %v", ev.Data, err)
		}
	}
	resp, err := a.response()
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// text is a response's answer text (not its reasoning).
func text(t *testing.T, dir string, resp []byte) string {
	t.Helper()
	var s strings.Builder
	switch dir {
	case "openai-chat":
		var r struct {
			Choices []struct{ Message struct{ Content string } }
		}
		json.Unmarshal(resp, &r)
		s.WriteString(r.Choices[0].Message.Content)
	case "openai-responses":
		var r struct {
			Output []struct {
				Type    string
				Content []struct{ Text string }
			}
		}
		json.Unmarshal(resp, &r)
		for _, o := range r.Output {
			for _, c := range o.Content {
				s.WriteString(c.Text)
			}
		}
	case "anthropic":
		var r struct{ Content []struct{ Type, Text string } }
		json.Unmarshal(resp, &r)
		for _, c := range r.Content {
			s.WriteString(c.Text)
		}
	case "gemini":
		var r struct {
			Candidates []struct {
				Content struct {
					Parts []struct {
						Text    string
						Thought bool
					}
				}
			}
		}
		json.Unmarshal(resp, &r)
		for _, p := range r.Candidates[0].Content.Parts {
			if !p.Thought {
				s.WriteString(p.Text)
			}
		}
	}
	return s.String()
}

// A stream assembles into the response its sync twin is: the same calls,
// text and usage.
func TestAssemble(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.dir, func(t *testing.T) {
			resp := assemble(t, p.w, events(t, fixture(t, p.dir, "stream.sse")))
			sync := fixture(t, p.dir, "response.json")
			got, err := p.w.calls(resp)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := p.w.calls(sync)
			if len(got) != len(want) {
				t.Fatalf("calls = %+v, want %+v", got, want)
			}
			for i := range got {
				if got[i].Name != want[i].Name || !sameJSON(got[i].Args, want[i].Args) || (got[i].ID == "") != (want[i].ID == "") {
					t.Errorf("call %d = %+v, want %+v", i, got[i], want[i])
				}
			}
			if a, b := text(t, p.dir, resp), text(t, p.dir, sync); a != b || a == "" {
				t.Errorf("text = %q, want %q", a, b)
			}
			gu, _ := p.w.usage(resp)
			wu, _ := p.w.usage(sync)
			if gu != wu {
				t.Errorf("usage = %+v, want %+v", gu, wu)
			}
			// The assembled response serves the sync codec: accept and
			// reask work on it.
			if _, err := p.w.accept(resp, cleaned); err != nil {
				t.Error(err)
			}
			if _, err := p.w.reask(fixture(t, p.dir, "stream-request.json"), resp, answers); err != nil {
				t.Error(err)
			}
		})
	}
}

// A call's arguments that are not JSON survive assembly as the text sent.
func TestAssembleInvalidArguments(t *testing.T) {
	anth := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"content\":[]}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"f\",\"input\":{}}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"city\\\": 4\"}}\n\n"
	resp := assemble(t, messagesWire{}, events(t, []byte(anth)))
	calls, err := messagesWire{}.calls(resp)
	if err != nil || len(calls) != 1 || string(calls[0].Args) != `{"city": 4` {
		t.Errorf("calls = %+v, %v", calls, err)
	}
}

type gateRun struct {
	out         bytes.Buffer
	beforeCalls string // what the client had when the first attempt's stream ended
}

// runGate feeds attempts to the protocol's gate: every attempt but the
// last is rejected, the last accepted with cleaned written back.
func runGate(t *testing.T, p wireProtocol, cleaned [][]byte, attempts ...[]streamEvent) *gateRun {
	t.Helper()
	r := &gateRun{}
	g := p.newGate(&r.out)
	for i, evs := range attempts {
		for _, ev := range evs {
			if _, err := g.event(ev); err != nil {
				t.Fatalf("attempt %d: event(%s): %v", i, ev.Data, err)
			}
		}
		if i == 0 {
			r.beforeCalls = r.out.String()
		}
		if i < len(attempts)-1 {
			g.reject()
			continue
		}
		resp, err := g.response()
		if err != nil {
			t.Fatal(err)
		}
		if cleaned != nil {
			if resp, err = p.accept(resp, cleaned); err != nil {
				t.Fatal(err)
			}
		}
		if err := g.accept(resp); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// responseID is the id the client's stream names.
func responseID(t *testing.T, dir string, resp []byte) string {
	var r struct {
		ID         string `json:"id"`
		ResponseID string `json:"responseId"`
	}
	json.Unmarshal(resp, &r)
	return r.ID + r.ResponseID
}

// callMarker is a word only a tool call's events carry.
var callMarker = map[string]string{
	"openai-chat": "tool_calls", "openai-responses": `"function_call"`, "anthropic": "tool_use", "gemini": "functionCall",
}

// The gate passes text at once, holds the calls, and on accept writes them
// with cleaned arguments: the client's stream assembles into the cleaned
// response.
func TestGateAccept(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.dir, func(t *testing.T) {
			up := events(t, fixture(t, p.dir, "stream.sse"))
			r := runGate(t, p.w, cleaned, up)
			golden(t, p.dir, "gate-accept.sse", r.out.Bytes())
			if !strings.Contains(r.beforeCalls, "Let m") || !strings.Contains(r.beforeCalls, "ck.") || strings.Contains(r.beforeCalls, callMarker[p.dir]) {
				t.Errorf("before accept the client had %q: want the text and no call", r.beforeCalls)
			}
			client := assemble(t, p.w, events(t, r.out.Bytes()))
			calls, err := p.w.calls(client)
			if err != nil {
				t.Fatal(err)
			}
			if len(calls) != 2 || !sameJSON(calls[0].Args, cleaned[0]) || !sameJSON(calls[1].Args, []byte(`{"city":"Lyon"}`)) {
				t.Errorf("client calls = %+v", calls)
			}
			if got := text(t, p.dir, client); got != "Let me check." {
				t.Errorf("client text = %q", got)
			}
			if strings.Contains(r.out.String(), `42`) {
				t.Error("the client read the rejected arguments")
			}
			upResp := assemble(t, p.w, up)
			if a, b := responseID(t, p.dir, client), responseID(t, p.dir, upResp); a != b {
				t.Errorf("client id %q, want the upstream's %q", a, b)
			}
			gu, _ := p.w.usage(client)
			wu, _ := p.w.usage(upResp)
			if gu != wu {
				t.Errorf("client usage = %+v, want %+v", gu, wu)
			}
		})
	}
}

// A rejected attempt's calls never reach the client; the re-ask's calls
// do, under the first attempt's ids, and its text is not streamed again.
func TestGateReask(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.dir, func(t *testing.T) {
			first := events(t, fixture(t, p.dir, "stream.sse"))
			second := events(t, fixture(t, p.dir, "stream2.sse"))
			r := runGate(t, p.w, nil, first, second)
			golden(t, p.dir, "gate-reask.sse", r.out.Bytes())
			out := r.out.String()
			if strings.Contains(out, "Lyon") || strings.Contains(out, "42") {
				t.Error("the client read a call of the rejected attempt")
			}
			if strings.Contains(out, "Sorry") {
				t.Error("the client read the re-ask's text")
			}
			client := assemble(t, p.w, events(t, r.out.Bytes()))
			calls, err := p.w.calls(client)
			if err != nil {
				t.Fatal(err)
			}
			if len(calls) != 1 || !sameJSON(calls[0].Args, []byte(`{"city":"Paris"}`)) {
				t.Errorf("client calls = %+v", calls)
			}
			if got := text(t, p.dir, client); got != "Let me check." {
				t.Errorf("client text = %q", got)
			}
			// The client reads one id throughout, the first attempt's;
			// Responses' terminal event carries the accepted attempt's, the
			// one a stored response is continued from.
			want := responseID(t, p.dir, assemble(t, p.w, first))
			if p.dir == "openai-responses" {
				want = responseID(t, p.dir, assemble(t, p.w, second))
			}
			if a := responseID(t, p.dir, client); a != want {
				t.Errorf("client id %q, want %q", a, want)
			}
		})
	}
}

// A later attempt accepted without tool calls (the model answers in text
// after a re-ask) streams its text: it is the answer, and without it a
// streaming client would end the turn on the first attempt's preamble
// while a sync client reads the answer.
func TestGateReaskAnsweredInText(t *testing.T) {
	answer := map[string][]byte{
		"openai-chat":      []byte(`{"id":"chatcmpl-9","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"I need a city."},"finish_reason":"stop"}]}`),
		"anthropic":        []byte(`{"id":"msg_9","type":"message","role":"assistant","model":"m","content":[{"type":"thinking","thinking":"hm","signature":"s"},{"type":"text","text":"I need a city."}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}`),
		"openai-responses": []byte(`{"id":"resp_9","object":"response","status":"completed","model":"m","output":[{"id":"rs_9","type":"reasoning","summary":[]},{"id":"msg_9","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"I need a city.","annotations":[]}]}]}`),
		"gemini":           []byte(`{"candidates":[{"content":{"role":"model","parts":[{"text":"hm","thought":true},{"text":"I need a city."}]},"finishReason":"STOP"}],"modelVersion":"m"}`),
	}
	for _, p := range protocols {
		t.Run(p.dir, func(t *testing.T) {
			var out bytes.Buffer
			g := p.w.newGate(&out)
			for _, ev := range events(t, fixture(t, p.dir, "stream.sse")) {
				if _, err := g.event(ev); err != nil {
					t.Fatal(err)
				}
			}
			g.reject()
			if err := g.accept(answer[p.dir]); err != nil {
				t.Fatal(err)
			}
			client := assemble(t, p.w, events(t, out.Bytes()))
			if calls, err := p.w.calls(client); err != nil || len(calls) != 0 {
				t.Errorf("client calls = %+v, %v; want none", calls, err)
			}
			if got := text(t, p.dir, client); got != "Let me check.I need a city." {
				t.Errorf("client text = %q, want the first attempt's then the answer", got)
			}
			if strings.Contains(out.String(), `"hm"`) {
				t.Error("the client read the later attempt's thinking")
			}
		})
	}
}

// A gate that saw no event (a stand-in answer before any upstream stream)
// writes the whole response as a stream the client's assembler takes.
func TestGateAcceptWithoutEvents(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.dir, func(t *testing.T) {
			resp := p.w.end("gpt-x", "Tool call limit reached.")
			var out bytes.Buffer
			if err := p.w.newGate(&out).accept(resp); err != nil {
				t.Fatal(err)
			}
			client := assemble(t, p.w, events(t, out.Bytes()))
			if got := text(t, p.dir, client); got != "Tool call limit reached." {
				t.Errorf("client text = %q\n%s", got, out.Bytes())
			}
		})
	}
}

// An upstream error event is reported as such; abort hands it to the
// client as it came, fail writes the guard's own.
func TestGateErrors(t *testing.T) {
	tests := []struct {
		w    wireProtocol
		ev   streamEvent
		want string
	}{
		{chatWire{}, streamEvent{Data: []byte(`{"error":{"message":"boom","type":"server_error"}}`)}, `"error"`},
		{messagesWire{}, streamEvent{Event: "error", Data: []byte(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)}, "overloaded_error"},
		{responsesWire{}, streamEvent{Event: "error", Data: []byte(`{"type":"error","code":"server_error","message":"boom","sequence_number":3}`)}, `"sequence_number":0`},
		{geminiWire{}, streamEvent{Data: []byte(`{"error":{"code":503,"message":"overloaded","status":"UNAVAILABLE"}}`)}, "UNAVAILABLE"},
	}
	for _, tc := range tests {
		var out bytes.Buffer
		g := tc.w.newGate(&out)
		_, err := g.event(tc.ev)
		var ue *upstreamStreamError
		if !errors.As(err, &ue) {
			t.Errorf("%s: event(error) = %v, want *upstreamStreamError", tc.w.name(), err)
			continue
		}
		if err := g.abort(tc.ev); err != nil || !strings.Contains(out.String(), tc.want) {
			t.Errorf("%s: abort wrote %q, %v", tc.w.name(), out.String(), err)
		}
		out.Reset()
		g = tc.w.newGate(&out)
		if err := g.fail("invalid_tool_calls", "get_weather: /city: got number"); err != nil {
			t.Fatal(err)
		}
		if s := out.String(); !strings.Contains(strings.ToLower(s), "invalid_tool_calls") || !strings.Contains(s, "get_weather: /city") {
			t.Errorf("%s: fail wrote %q", tc.w.name(), s)
		}
		// Nothing after the end.
		n := out.Len()
		g.event(streamEvent{Data: []byte(`{}`)})
		g.fail("x", "y")
		if out.Len() != n {
			t.Errorf("%s: the gate wrote after the end", tc.w.name())
		}
	}
}

// An assembler holds no more than the bound.
func TestAssemblerBounded(t *testing.T) {
	big := streamEvent{Data: []byte(`{"id":"x","choices":[{"index":0,"delta":{"content":"` + strings.Repeat("a", 1<<20) + `"}}]}`)}
	a := chatWire{}.newAssembler()
	var err error
	for i := 0; i < 9 && err == nil; i++ {
		_, err = a.add(big)
	}
	if !errors.Is(err, errTooLarge) {
		t.Errorf("9 MiB of chunks: %v, want errTooLarge", err)
	}
}
