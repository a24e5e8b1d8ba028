package httpguard

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
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

// The Chat assembler lists its calls from its own parse (callLister)
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
