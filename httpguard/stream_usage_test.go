package httpguard

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// The protocols' directories under testdata/wire, in wireProtocols'
// order.
var reportDirs = []string{"openai-chat", "openai-responses", "anthropic", "gemini", "ollama", "bedrock"}

// encodeEvents writes evs one a line, type and data apart by a tab: the
// form FuzzStreamReport takes, the same for every protocol.
func encodeEvents(evs []streamEvent) []byte {
	var b []byte
	for _, ev := range evs {
		b = append(append(append(append(b, ev.Event...), '\t'), bytes.ReplaceAll(ev.Data, []byte("\n"), []byte(" "))...), '\n')
	}
	return b
}

// decodeEvents reads what encodeEvents writes.
func decodeEvents(data []byte) []streamEvent {
	var evs []streamEvent
	for _, line := range bytes.Split(data, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		typ, payload, _ := bytes.Cut(line, []byte("\t"))
		evs = append(evs, streamEvent{Event: string(typ), Data: payload})
	}
	return evs
}

// reportSeeds are streams of each protocol, by its index in
// wireProtocols: every recorded stream under testdata/wire, the streams
// the calls fuzzers start from, and edges of what usage and finish read.
func reportSeeds(tb testing.TB) map[int][][]streamEvent {
	tb.Helper()
	out := map[int][][]streamEvent{}
	for i, dir := range reportDirs {
		p := wireProtocols()[i]
		files, _ := filepath.Glob(filepath.Join(wireDir, dir, "*"))
		for _, file := range files {
			ext := filepath.Ext(file)
			if ext != ".sse" && ext != ".ndjson" && ext != ".eventstream" {
				continue
			}
			b, err := os.ReadFile(file)
			if err != nil {
				tb.Fatal(err)
			}
			rd := p.framing().newReader(bytes.NewReader(b), MaxBody)
			var evs []streamEvent
			for {
				ev, err := rd.next()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					tb.Fatalf("%s: %v", file, err)
				}
				evs = append(evs, ev)
			}
			out[i] = append(out[i], evs)
		}
	}
	sse := func(i int, b []byte) {
		evs, err := readAllEvents(bytes.NewReader(b))
		if err == nil {
			out[i] = append(out[i], evs)
		}
	}
	for _, b := range chatStreamSeeds(tb) {
		sse(0, b)
	}
	for _, b := range messagesCallStreams(tb) {
		sse(2, b)
	}
	for _, chunks := range geminiCallStreams {
		sse(3, []byte("data: "+strings.Join(chunks, "\n\ndata: ")+"\n\n"))
	}
	for _, s := range ollamaCallStreams {
		out[4] = append(out[4], ollamaLines(s))
	}
	for _, evs := range bedrockCallStreams(tb) {
		out[5] = append(out[5], evs)
	}
	deep := strings.Repeat("[", jsonMaxDepth-2) + strings.Repeat("]", jsonMaxDepth-2)
	data := func(i int, evs ...string) {
		var s []streamEvent
		for _, e := range evs {
			typ, d, ok := strings.Cut(e, "\t")
			if !ok {
				typ, d = "", e
			}
			s = append(s, streamEvent{Event: typ, Data: []byte(d)})
		}
		out[i] = append(out[i], s)
	}
	// Chat: usage that does not read, reads twice or in another case; a
	// created nested as deep as encoding/json reads, and past it.
	for _, u := range []string{`{"prompt_tokens":1.5}`, `{"prompt_tokens":1,"prompt_tokens":2}`, `{"Prompt_Tokens":3}`, `"x"`, `{"completion_tokens":"2"}`, `[]`} {
		data(0, `{"id":"c","model":"m","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}],"usage":`+u+`}`, "[DONE]")
	}
	data(0, `{"id":"c","model":"m","created":`+deep+`,"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}`)
	data(0, `{"id":"c","model":"m","created":[`+deep+`],"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":7}]}`)
	// Responses: a terminal response with a key twice, in another case,
	// nested too deep, or not an object; a stream cut short.
	for _, r := range []string{`{"model":"m","usage":{"input_tokens":1},"status":"completed"}`,
		`{"model":"m","Usage":{"input_tokens":1},"status":"completed"}`, `{"model":"m","status":"a","status":"b"}`,
		`{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"usage":{"input_tokens":1,"output_tokens":1e2}}`,
		`{"status":"completed","x":` + deep + `}`, `{"status":"completed","x":[` + deep + `]}`, `[1]`, `{"mod\u0065l":"m","usage":null}`} {
		data(1, "response.created\t"+`{"type":"response.created","response":{"id":"r","model":"m","output":[]}}`,
			"response.completed\t"+`{"type":"response.completed","response":`+r+`}`)
	}
	data(1, "response.created\t"+`{"type":"response.created","response":{"id":"r","model":"m","usage":{"input_tokens":4},"output":[]}}`)
	// Anthropic: a delta that sets content; a usage in another case; a
	// tool input nested as deep as encoding/json reads, and past it.
	start := "message_start\t" + `{"type":"message_start","message":{"id":"m","model":"c","content":[],"usage":{"input_tokens":3,"output_tokens":1}}}`
	for _, d := range []string{`{"stop_reason":"end_turn","content":"x"}`, `{"Stop_Reason":"end_turn"}`, `{"stop_reason":5}`} {
		data(2, start, "message_delta\t"+`{"type":"message_delta","delta":`+d+`,"usage":{"output_tokens":9}}`, "message_stop\t"+`{"type":"message_stop"}`)
	}
	for _, in := range []string{strings.Repeat("[", jsonMaxDepth-4) + strings.Repeat("]", jsonMaxDepth-4), deep} {
		data(2, start, "content_block_start\t"+`{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","name":"f","input":{}}}`,
			"content_block_delta\t"+`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":`+string(marshalString(in))+`}}`,
			"message_delta\t"+`{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":9}}`)
	}
	// Gemini: a part nested as deep as encoding/json reads, and past it.
	for _, n := range []int{jsonMaxDepth - 6, jsonMaxDepth - 5} {
		part := `{"x":` + strings.Repeat("[", n) + strings.Repeat("]", n) + `}`
		data(3, `{"candidates":[{"content":{"parts":[`+part+`],"role":"model"},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":2},"modelVersion":"g"}`)
	}
	data(3, `{"candidates":[{"content":{"parts":[{"text":"a"}]},"finishReason":"STOP","finishReason":"X"}],"usageMetadata":{"promptTokenCount":2}}`)
	// Ollama: tool calls nested as deep as encoding/json reads, and past
	// it; counts that do not read.
	for _, n := range []int{jsonMaxDepth - 4, jsonMaxDepth - 3} {
		tc := `{"function":{"name":"f","arguments":` + strings.Repeat("[", n) + strings.Repeat("]", n) + `}}`
		data(4, `{"model":"o","message":{"role":"assistant","content":"","tool_calls":[`+tc+`]},"done":false}`,
			`{"model":"o","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","prompt_eval_count":1,"eval_count":2}`)
	}
	data(4, `{"model":"o","message":{"role":"assistant","content":"a"},"done":true,"done_reason":"stop","prompt_eval_count":-1.5}`)
	// Bedrock: a tool input, and a toolUse start, nested as deep as
	// encoding/json reads in the response, and past it.
	nest := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	for _, n := range []int{jsonMaxDepth - 5, jsonMaxDepth - 4} {
		out[5] = append(out[5], bedrockStream("t", nest(n)))
		evs := bedrockStream("t", `{}`)
		evs[4].Data = []byte(`{"contentBlockIndex":1,"start":{"toolUse":{"toolUseId":"t","name":"f","x":` + nest(n-1) + `}}}`)
		out[5] = append(out[5], evs)
	}
	return out
}

// checkReport feeds evs to p's assembler and, after each event it takes,
// holds streamReportOf to what p's usage and finish read of the assembled
// response: the same usage, an error where usage fails, the same finish
// reasons, and an error where the response does not build.
func checkReport(t *testing.T, p wireProtocol, evs []streamEvent) {
	t.Helper()
	a := p.newAssembler()
	for i, ev := range evs {
		done, err := a.add(ev)
		if err != nil {
			return // the gate fails the stream here: nothing is observed
		}
		got, gerr := streamReportOf(p, a)
		body, werr := a.response()
		if (gerr != nil) != (werr != nil) {
			t.Fatalf("%s, event %d: streamReportOf error %v, response() error %v", p.name(), i, gerr, werr)
		}
		if werr == nil {
			checkReportOf(t, p, body, got)
		}
		if done {
			return
		}
	}
}

// checkReportOf fails unless got is what p's usage and finish read of
// body: the same usage, an error where usage fails, the same finish
// reasons.
func checkReportOf(t *testing.T, p wireProtocol, body []byte, got streamReport) {
	t.Helper()
	u, err := p.usage(body)
	want := streamReport{usage: u, usageErr: err, finish: p.finish(body)}
	if got.usage != want.usage || (got.usageErr != nil) != (want.usageErr != nil) || !reflect.DeepEqual(got.finish, want.finish) {
		t.Fatalf("%s: report %+v, want %+v, of %q", p.name(), got, want, body)
	}
}

// A streamed answer's usage and finish reasons, as observers read them,
// are what the protocol reads of the assembled response, at every event
// of every recorded stream and edge.
func TestStreamReport(t *testing.T) {
	t.Parallel()
	seeds := reportSeeds(t)
	for i, dir := range reportDirs {
		for j, evs := range seeds[i] {
			t.Run(fmt.Sprintf("%s/%03d", dir, j), func(t *testing.T) { checkReport(t, wireProtocols()[i], evs) })
		}
	}
}

// The recorded streams that end are read from a stand-in of the response
// (reporter), not by building it.
func TestStreamReportStandIn(t *testing.T) {
	t.Parallel()
	for i, dir := range reportDirs {
		p := wireProtocols()[i]
		evs := reportSeeds(t)[i][0]
		a := p.newAssembler()
		for _, ev := range evs {
			if _, err := a.add(ev); err != nil {
				t.Fatalf("%s: %v", dir, err)
			}
		}
		if _, ok := a.(reporter).report(p); !ok {
			t.Errorf("%s: the report of a recorded stream is read from the response built", dir)
		}
	}
}

// FuzzStreamReport holds streamReportOf to the usage and finish read of
// the assembled response (checkReport), over streams of every protocol
// grown from reportSeeds but those nested thousands deep, which
// TestStreamReport reads (mutated, one takes the fuzzer seconds).
func FuzzStreamReport(f *testing.F) {
	for i, streams := range reportSeeds(f) {
		for _, evs := range streams {
			if b := encodeEvents(evs); !bytes.Contains(b, []byte("[[[[[[[[[[[[[[[[")) {
				f.Add(uint8(i), b)
			}
		}
	}
	f.Fuzz(func(t *testing.T, i uint8, data []byte) {
		p := wireProtocols()[int(i)%len(reportDirs)]
		checkReport(t, p, decodeEvents(data))
	})
}

// reportBodies are responses of each protocol, by its index in
// wireProtocols: the recorded ones, the streams' assembled responses, and
// edges of what plainReport reads or leaves to usage and finish.
func reportBodies(tb testing.TB) map[int][][]byte {
	tb.Helper()
	out := map[int][][]byte{}
	for i, dir := range reportDirs {
		files, _ := filepath.Glob(filepath.Join(wireDir, dir, "*.json"))
		for _, file := range files {
			b, err := os.ReadFile(file)
			if err != nil {
				tb.Fatal(err)
			}
			out[i] = append(out[i], b)
		}
	}
	for i, streams := range reportSeeds(tb) {
		for _, evs := range streams {
			a := wireProtocols()[i].newAssembler()
			for _, ev := range evs {
				if done, err := a.add(ev); err != nil || done {
					break
				}
			}
			if b, err := a.response(); err == nil && len(b) < 4<<10 {
				out[i] = append(out[i], b)
			}
		}
	}
	for _, v := range []string{`"m"`, `"m\u0065"`, `"\u00e9"`, `"é"`, "\"\xff\"", `null`, `1`, `{}`, `[]`} {
		for _, n := range []string{`1`, `-0`, `-12`, `123456789012345678`, `1234567890123456789`, `9223372036854775808`, `1.0`, `1e2`, `null`, `"1"`, `true`} {
			out[0] = append(out[0], []byte(`{"model":`+v+`,"usage":{"prompt_tokens":`+n+`,"completion_tokens":2},"choices":[{"finish_reason":`+v+`},{"finish_reason":`+v+`}]}`))
			out[1] = append(out[1], []byte(`{"model":"m","status":`+v+`,"incomplete_details":{"reason":`+v+`},"usage":{"input_tokens":`+n+`}}`))
			out[2] = append(out[2], []byte(`{"model":`+v+`,"stop_reason":`+v+`,"usage":{"input_tokens":1,"cache_read_input_tokens":`+n+`,"output_tokens":`+n+`}}`))
			out[3] = append(out[3], []byte(`{"modelVersion":`+v+`,"candidates":[null,{"finishReason":`+v+`}],"usageMetadata":{"thoughtsTokenCount":`+n+`}}`))
			out[4] = append(out[4], []byte(`{"model":`+v+`,"done_reason":`+v+`,"eval_count":`+n+`}`))
			out[5] = append(out[5], []byte(`{"stopReason":`+v+`,"usage":{"cacheWriteInputTokens":`+n+`}}`))
		}
	}
	for _, b := range []string{`{"choices":null,"usage":null}`, `{"choices":[]}`, `{"choices":[1]}`, `{"choices":{}}`, `{"choices":[null,{"finish_reason":"stop"}]}`,
		`{"choices":[{"finish_reason":"a","Finish_Reason":"b"}]}`, `{"model":"a","model":"b"}`, `{"Model":"a"}`, `{"usage":{"prompt_tokens":1,"prompt_tokens":2}}`,
		`{"usage":[]}`, `{"usage":{"prompt_tokens":1}} x`, `[{"model":"a"}]`, `null`, `{"choices":[{"finish_reason":"stop"}],"x":[1,}`,
		`{"choices":[{"finish_reason":"stop"},{"finish_reason":5}]}`, `{"choices":[{"finish_reason":"stop"},{"finish_reason":"a","finish_reason":"b"}]}`,
		`{"candidates":[{"finishReason":"STOP"},{"finishReason":[]}]}`, `{"candidates":[{"finishReason":"STOP"},{"FinishReason":"X"}]}`,
		`{"ſtatus":"x","status":"y"}`, `{"incomplete_details":[],"status":"s"}`, `{"incomplete_details":{"reason":"r"},"status":""}`} {
		for i := range reportDirs {
			out[i] = append(out[i], []byte(b))
		}
	}
	return out
}

// reportOf reads what the protocol's usage and finish read, of every
// response in reportBodies.
func TestReportOf(t *testing.T) {
	t.Parallel()
	for i, bodies := range reportBodies(t) {
		p := wireProtocols()[i]
		for _, b := range bodies {
			checkReportOf(t, p, b, reportOf(p, b))
		}
	}
}

// The recorded responses are read in place (plainReport), not decoded.
func TestReportOfPlain(t *testing.T) {
	t.Parallel()
	for i, dir := range reportDirs {
		b, err := os.ReadFile(filepath.Join(wireDir, dir, "accepted.json"))
		if err != nil {
			t.Fatal(err)
		}
		if _, uok, _, fok := wireProtocols()[i].(plainReporter).plainReport(b); !uok || !fok {
			t.Errorf("%s: accepted.json read in place: usage %v, finish %v; want both", dir, uok, fok)
		}
	}
}

// FuzzReportOf holds reportOf to the protocol's usage and finish, over
// responses grown from reportBodies.
func FuzzReportOf(f *testing.F) {
	for i, bodies := range reportBodies(f) {
		for _, b := range bodies {
			f.Add(uint8(i), b)
		}
	}
	f.Fuzz(func(t *testing.T, i uint8, body []byte) {
		p := wireProtocols()[int(i)%len(reportDirs)]
		checkReportOf(t, p, body, reportOf(p, body))
	})
}
