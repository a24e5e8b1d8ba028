package httpguard

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/guard"
	fp "github.com/toolguard/toolguard/httpguard/fakeprovider"
)

// chatStreamSeeds are the recorded Chat streams (every .sse file under
// testdata/wire/openai-chat) and streams made of chunks the recordings
// lack: calls without an index, custom calls, several choices, a legacy
// function_call, a call of an unknown type, indexes out of order.
func chatStreamSeeds(tb testing.TB) map[string][]byte {
	tb.Helper()
	out := map[string][]byte{}
	files, err := filepath.Glob(filepath.Join(wireDir, "openai-chat", "*.sse"))
	if err != nil || len(files) == 0 {
		tb.Fatalf("no recorded Chat stream: %v", err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		out[filepath.Base(f)] = b
	}
	chunk := func(choices string) string {
		return `data: {"id":"chatcmpl-s","object":"chat.completion.chunk","created":1,"model":"m","choices":` + choices + "}\n\n"
	}
	delta := func(d string) string { return chunk(`[{"index":0,"delta":` + d + `,"finish_reason":null}]`) }
	finish := chunk(`[{"index":0,"delta":{},"finish_reason":"tool_calls"}]`) + "data: [DONE]\n\n"
	for name, s := range map[string]string{
		"no index": delta(`{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{\"x\""}}]}`) +
			delta(`{"tool_calls":[{"function":{"arguments":":1}"}}]}`) +
			delta(`{"tool_calls":[{"id":"b","function":{"name":"g","arguments":"{}"}}]}`) + finish,
		"custom beside function": delta(`{"tool_calls":[{"index":0,"id":"c","type":"custom","custom":{"name":"sh","input":"ls"}}]}`) +
			delta(`{"tool_calls":[{"index":1,"id":"d","type":"function","function":{"name":"f","arguments":"{\"a\":\"\\u00e9\\n\"}"}}]}`) + finish,
		"custom without type": delta(`{"tool_calls":[{"index":0,"id":"c","custom":{"name":"sh"}}]}`) +
			delta(`{"tool_calls":[{"index":0,"custom":{"input":"ls -l"}}]}`) + finish,
		"no arguments":       delta(`{"tool_calls":[{"index":0,"id":"e","type":"function","function":{"name":"f"}}]}`) + finish,
		"no function":        delta(`{"tool_calls":[{"index":0,"id":"e","type":"function"}]}`) + finish,
		"null parts":         delta(`{"tool_calls":[{"index":0,"id":null,"type":null,"function":null,"custom":null},null]}`) + finish,
		"index out of order": delta(`{"tool_calls":[{"index":1,"id":"a","function":{"name":"f","arguments":"{}"}}]}`) + finish,
		"negative index": delta(`{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":"{"}}]}`) +
			delta(`{"tool_calls":[{"index":-1,"function":{"arguments":"}"}}]}`) + finish,
		"unknown type":    delta(`{"tool_calls":[{"index":0,"id":"a","type":"computer"}]}`) + finish,
		"both parts":      delta(`{"tool_calls":[{"index":0,"id":"a","function":{"name":"f"},"custom":{"input":"x"}}]}`) + finish,
		"legacy function": delta(`{"function_call":{"name":"f","arguments":"{}"}}`) + finish,
		"several choices of text": chunk(`[{"index":0,"delta":{"content":"a"}},{"index":1,"delta":{"content":"b"}}]`) +
			chunk(`[{"index":1,"delta":{},"finish_reason":"stop"}]`) + "data: [DONE]\n\n",
		"several choices with a call": chunk(`[{"index":1,"delta":{"content":"b"}}]`) +
			delta(`{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":"{}"}}]}`) + finish,
		"text only":      delta(`{"role":"assistant","content":"Hi"}`) + delta(`{"refusal":"no"}`) + chunk(`[]`) + "data: [DONE]\n\n",
		"no events":      "",
		"invalid UTF-8":  delta("{\"tool_calls\":[{\"index\":0,\"id\":\"a\",\"function\":{\"name\":\"f\xff\",\"arguments\":\"{\\\"c\\\":\\\"\xc3\"}}]}") + delta("{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"\xa9\\\"}\"}}]}") + finish,
		"a call cut off": delta(`{"tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"f","arguments":"{\"city\": \"Pa"}}]}`),
	} {
		out[name] = []byte(s)
	}
	return out
}

// chatCallsAgree fails t unless the assembler's own list of its calls is
// what the protocol reads of its assembled response: the same calls (ids,
// names, argument bytes, order), failing where that read fails.
func chatCallsAgree(t *testing.T, stream []byte) {
	t.Helper()
	evs, err := readAllEvents(bytes.NewReader(stream))
	if err != nil {
		return // the framing refuses it: no assembler sees it
	}
	a := &chatAssembler{}
	for _, ev := range evs {
		done, err := a.add(ev)
		if err != nil {
			return // the gate fails the stream here: calls is never read
		}
		if done {
			break
		}
	}
	got, gerr := a.calls()
	var want []wireCall
	resp, werr := a.response()
	if werr == nil {
		want, werr = chatWire{}.calls(resp)
	}
	if (gerr == nil) != (werr == nil) {
		t.Fatalf("%q:\ncalls() error %v; calls(response()) error %v", stream, gerr, werr)
	}
	if len(got) != len(want) {
		t.Fatalf("%q:\ncalls() = %+v\nwant %+v", stream, got, want)
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.ID != w.ID || g.Name != w.Name || string(g.Args) != string(w.Args) || (g.Args == nil) != (w.Args == nil) {
			t.Fatalf("%q:\ncall %d = %q %q %q (nil %v)\nwant %q %q %q (nil %v)", stream, i, g.ID, g.Name, g.Args, g.Args == nil, w.ID, w.Name, w.Args, w.Args == nil)
		}
	}
}

// The Chat assembler lists its calls from its own parse (assembler.calls)
// exactly as chatWire.calls reads them from the response it assembles:
// over every recorded stream and the streams the recordings lack.
func TestChatAssemblerCalls(t *testing.T) {
	for name, s := range chatStreamSeeds(t) {
		t.Run(strings.ReplaceAll(name, " ", "_"), func(t *testing.T) { chatCallsAgree(t, s) })
	}
}

// FuzzChatAssemblerCalls is TestChatAssemblerCalls over any stream.
func FuzzChatAssemblerCalls(f *testing.F) {
	for _, s := range chatStreamSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(chatCallsAgree)
}

// chatStacks are the transports a Chat stream is guarded by in the
// release tests: validation alone (one gate, the root's) and the stack the
// package documentation recommends (two gates: validation's inside the
// limit's, which is the root's).
var chatStacks = []struct {
	name string
	new  func() *Transport
}{
	{"guarded", func() *Transport { return New(nil, ToolArgValidation()) }},
	{"stack", func() *Transport {
		return New(nil, ToolCallLimit(guard.WithRunLimit(1000)), ToolArgValidation(), ModelRetry())
	}},
}

// chatStreamThrough sends a Chat stream request (the recorded one when
// req is nil) through rt to an upstream that answers each request with the
// next of streams, and returns what the client reads.
func chatStreamThrough(t *testing.T, rt http.RoundTripper, req []byte, streams ...string) []byte {
	t.Helper()
	steps := make([]fp.Step, len(streams))
	for i, s := range streams {
		steps[i] = chatRawSSE(s)
	}
	srv := fp.New(steps...)
	defer srv.Close()
	c := wireCases(t)[1] // openai-chat/stream
	if req == nil {
		req = c.body
	}
	ex := do(t, rt, context.Background(), srv.URL+c.url, req)
	if ex.resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", ex.resp.StatusCode, ex.body)
	}
	return ex.body
}

// eventsEqual fails t unless got's events are want's, event for event.
func eventsEqual(t *testing.T, got, want []streamEvent) {
	t.Helper()
	n := max(len(got), len(want))
	for i := range n {
		var g, w streamEvent
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g.Event != w.Event || !bytes.Equal(g.Data, w.Data) {
			t.Errorf("event %d of %d:\n got %q %s\nwant %q %s", i, n, g.Event, g.Data, w.Event, w.Data)
		}
	}
}

// A stream whose calls are valid and unchanged reaches the client as the
// upstream sent it, event for event, its text and its calls' fragments
// too, through validation alone and through the stack: what is held is
// released, not rebuilt. What the upstream did not send that a client
// needs is added, as before: [DONE].
func TestChatStreamReleasedAsSent(t *testing.T) {
	t.Parallel()
	valid := strings.Replace(string(fixture(t, "openai-chat", "stream.sse")), `" 42}"`, `" \"Nice\"}"`, 1)
	chunk := func(choices string, usage string) string {
		return `data: {"id":"chatcmpl-up","object":"chat.completion.chunk","created":1,"model":"gpt-4o","system_fingerprint":"fp_x","choices":` + choices + `,"usage":` + usage + "}\n\n"
	}
	delta := func(d string) string {
		return chunk(`[{"index":0,"delta":`+d+`,"logprobs":null,"finish_reason":null}]`, "null")
	}
	// Text after the call, a member the guard does not read (Gemini's
	// thought signature), escapes, and no [DONE].
	textAfter := delta(`{"role":"assistant","content":""}`) + delta(`{"content":"Hi \u00e9"}`) +
		delta(`{"tool_calls":[{"index":0,"id":"call_r","type":"function","function":{"name":"get_weather","arguments":"{\"city\":"},"extra_content":{"google":{"thought_signature":"c2ln"}}}]}`) +
		delta(`{"tool_calls":[{"index":0,"function":{"arguments":"\"R\\u00f4me\"}"}}]}`) +
		delta(`{"content":" then this."}`) +
		chunk(`[{"index":0,"delta":{},"logprobs":null,"finish_reason":"tool_calls"}]`, `{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}`)
	for _, tc := range []struct {
		name, up string
		added    []string // what the client reads after the upstream's events
	}{
		{"recorded", valid, nil},
		{"text after the call, no [DONE]", textAfter, []string{"[DONE]"}},
	} {
		for _, st := range chatStacks {
			t.Run(tc.name+"/"+st.name, func(t *testing.T) {
				up := events(t, []byte(tc.up))
				want := up
				if len(tc.added) > 0 {
					want = append(append([]streamEvent(nil), up...), streamEvent{Data: []byte("[DONE]")})
				}
				eventsEqual(t, events(t, chatStreamThrough(t, st.new(), nil, tc.up)), want)
			})
		}
	}
}

// A stream whose call is cleaned (a null stripped) or re-asked is written
// as before, its calls whole with the arguments the guard accepted: the
// client reads what the gate's own tests record (gate-accept.sse: the
// recorded stream with its first call's arguments cleaned to
// {"city":"Paris"}; gate-reask.sse: the recorded stream re-asked, answered
// by stream2.sse).
func TestChatStreamCleanedOrReaskedWrittenAsBefore(t *testing.T) {
	t.Parallel()
	rec := string(fixture(t, "openai-chat", "stream.sse"))
	// unit is an optional string: its null fails validation, and
	// stripping it is the cleaning.
	req := []byte(strings.Replace(string(fixture(t, "openai-chat", "stream-request.json")),
		`"properties":{"city":{"type":"string"}}`, `"properties":{"city":{"type":"string"},"unit":{"type":"string"}}`, 1))
	if !bytes.Contains(req, []byte(`"unit"`)) {
		t.Fatal("the recorded request's schema changed: unit not added")
	}
	cleaned := strings.Replace(rec, `" 42}"`, `" \"Paris\", \"unit\": null}"`, 1)
	for _, tc := range []struct {
		name string
		up   []string
		want string
	}{
		{"cleaned", []string{cleaned}, "gate-accept.sse"},
		{"re-asked", []string{rec, string(fixture(t, "openai-chat", "stream2.sse"))}, "gate-reask.sse"},
	} {
		for _, st := range chatStacks {
			t.Run(tc.name+"/"+st.name, func(t *testing.T) {
				got := chatStreamThrough(t, st.new(), req, tc.up...)
				eventsEqual(t, events(t, got), events(t, fixture(t, "openai-chat", tc.want)))
			})
		}
	}
}

// The gate releases its first attempt only where the client would read
// the upstream's chunks as the guard read them, and within the bound;
// anywhere else release writes nothing and reports false, and accept
// writes the attempt as before.
func TestChatGateReleaseRefused(t *testing.T) {
	t.Parallel()
	chunk := func(id, d string) string {
		return `data: {"id":"` + id + `","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":` + d + `,"finish_reason":null}]}` + "\n\n"
	}
	call := `{"tool_calls":[{"index":0,"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]}`
	finish := `data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}` + "\n\n"
	big := strings.Repeat("a", MaxBody/2+1)
	for _, tc := range []struct {
		name, stream string
		reject       bool // the attempt is a later one
	}{
		{"no index", chunk("x", `{"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]}`) + finish, false},
		{"another id", chunk("x", `{"content":"a"}`) + chunk("y", call) + finish, false},
		{"another id at the end", chunk("x", call) + strings.Replace(finish, `"x"`, `"y"`, 1), false},
		{"not UTF-8", chunk("x", "{\"tool_calls\":[{\"index\":0,\"id\":\"c\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"a\\\":\\\"\xff\\\"}\"}}]}") + finish, false},
		{"type never named", chunk("x", `{"tool_calls":[{"index":0,"id":"c","function":{"name":"f","arguments":"{}"}}]}`) + finish, false},
		{"a later attempt", chunk("x", call) + finish, true},
		{"held past the bound", chunk("x", `{"tool_calls":[{"index":0,"id":"c","type":"function","function":{"name":"f","arguments":"\"`+big+`\""}}]}`) + finish, false},
	} {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			var out bytes.Buffer
			g := newChatGate(&out)
			if tc.reject {
				for _, ev := range events(t, []byte(chunk("x", `{"content":"first"}`)+chunk("x", call))) {
					g.event(ev)
				}
				g.reject()
			}
			for _, ev := range events(t, []byte(tc.stream)) {
				if _, err := g.event(ev); err != nil {
					t.Fatal(err)
				}
			}
			before := out.Len()
			if ok, err := g.release(); ok || err != nil || out.Len() != before {
				t.Fatalf("release() = %v, %v, wrote %q; want false, nothing written", ok, err, out.Bytes()[before:])
			}
			resp, err := g.response()
			if err != nil {
				t.Fatal(err)
			}
			if err := g.accept(resp); err != nil {
				t.Fatal(err)
			}
			client := assemble(t, chatWire{}, events(t, out.Bytes()[before:]))
			want, _ := (chatWire{}).calls(resp)
			got, err := (chatWire{}).calls(client)
			if err != nil || len(got) != 1 || got[0].Name != want[0].Name || string(got[0].Args) != string(want[0].Args) {
				t.Errorf("after accept the client reads %+v, %v; want %+v", got, err, want)
			}
		})
	}
}

// A first attempt released without a finish chunk from upstream ends as
// accept ends it: a finish chunk of the first chunk's, then [DONE].
func TestChatGateReleaseAddsFinish(t *testing.T) {
	t.Parallel()
	up := `data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"a"},"finish_reason":null}]}` + "\n\n" +
		`data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},"finish_reason":null}]}` + "\n\n"
	fed := func(out *bytes.Buffer) *chatGate {
		g := newChatGate(out)
		for _, ev := range events(t, []byte(up)) {
			if _, err := g.event(ev); err != nil {
				t.Fatal(err)
			}
		}
		return g
	}
	var released, accepted bytes.Buffer
	if ok, err := fed(&released).release(); !ok || err != nil {
		t.Fatalf("release() = %v, %v", ok, err)
	}
	g := fed(&accepted)
	resp, _ := g.response()
	if err := g.accept(resp); err != nil {
		t.Fatal(err)
	}
	got, acc := events(t, released.Bytes()), events(t, accepted.Bytes())
	eventsEqual(t, got[:2], events(t, []byte(up)))
	eventsEqual(t, got[2:], acc[len(acc)-2:])
	if len(got) != 4 || !bytes.Contains(got[2].Data, []byte(`"finish_reason":null`)) || string(got[3].Data) != "[DONE]" {
		t.Errorf("released %d events, ending %s %s", len(got), got[len(got)-2].Data, got[len(got)-1].Data)
	}
}

// The client stream's opening check reads the chunk a gate parsed, with
// the answer chatOpening gives from the bytes, for every chunk the gate
// parses: seeded with every recorded Chat chunk and FuzzChatOpening's.
func FuzzChatOpeningParsed(f *testing.F) {
	for _, s := range chatStreamSeeds(f) {
		evs, _ := readAllEvents(bytes.NewReader(s))
		for _, ev := range evs {
			f.Add(ev.Data)
		}
	}
	for _, s := range []string{
		`{"choices":[{"delta":{"role":"assistant","content":""},"finish_reason":null}],"usage":null}`,
		`{"choices":[{"delta":{"role":"assistant","content":"Hi"}}]}`, `{"choices":[{"delta":{"reasoning_content":"hm"}}]}`,
		`{"choices":[{"delta":{"reasoning_content":null,"x":""}}]}`, `{"choices":[{"delta":{"role":null,"refusal":""}}]}`,
		`{"choices":[{"delta":{},"finish_reason":"stop"}]}`, `{"choices":[],"usage":{"total_tokens":1}}`, `null`, `[]`,
		`{"choices":[{"delta":{"r\u006fle":"x","content":null}}]}`, `{"choices":[{"delta":{"r\u006fle":"x"}}]}`,
		`{"choices":[{"finish_reason":1}]}`, `{"choices":[null]}`, `{"choices":[{"delta":{"tool_calls":[]}}]}`,
		`{"choices":[{"delta":{"tool_calls":null,"function_call":null}}]}`, `{"choices":[{"delta":{"function_call":""}}]}`,
		`{"choices":[{"delta":{"content":"","Reasoning":{}}}],"usage":null}`, `{"choices":null,"usage":null}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := parseChatChunk(data)
		if err != nil {
			return // not parsed: opening reads the bytes
		}
		if got, want := (chatWire{}).opening(streamEvent{Data: data, parsed: c}), chatOpening(data); got != want {
			t.Fatalf("%q: opening of the parsed chunk = %v, chatOpening = %v", data, got, want)
		}
	})
}

// reject drops what the first attempt held, storage and all: nothing of
// it stays reachable from the gate, and the next attempt holds its
// terminal chunks anew.
func TestChatGateRejectDropsHeld(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(wireDir, "openai-chat", "gate-accept.sse"))
	if err != nil {
		t.Fatal(err)
	}
	evs, err := readAllEvents(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	g := newChatGate(&eventRecorder{})
	for _, ev := range evs {
		if _, err := g.event(ev); err != nil {
			t.Fatal(err)
		}
	}
	if len(g.held) == 0 || len(g.terminal) != 2 {
		t.Fatalf("held %d chunks, %d terminal, want some and 2", len(g.held), len(g.terminal))
	}
	g.reject()
	if g.held != nil || g.terminal != nil || !reflect.ValueOf(g.heldIn).IsZero() || !reflect.ValueOf(g.terminalIn).IsZero() {
		t.Fatalf("after reject: held %d, terminal %d, storage %v %q", len(g.held), len(g.terminal), g.heldIn, g.terminalIn)
	}
	for _, ev := range evs {
		if _, err := g.event(ev); err != nil {
			t.Fatal(err)
		}
	}
	if len(g.terminal) != 2 || string(g.terminal[1]) != string(evs[len(evs)-2].Data) {
		t.Fatalf("second attempt's terminal chunks %q", g.terminal)
	}
}
