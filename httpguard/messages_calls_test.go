package httpguard

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// messagesCallStreams are Anthropic streams whose calls the assembler's
// own reading (calls) must read as the sync codec reads the assembled
// response, or refuse where that refuses: every recorded stream, and
// streams at the edges of what the response's building and reading
// refuse.
func messagesCallStreams(t testing.TB) [][]byte {
	t.Helper()
	var out [][]byte
	names, err := filepath.Glob(filepath.Join(wireDir, "anthropic", "*.sse"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no recorded Anthropic streams: %v", err)
	}
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	use := func(start string, deltas ...string) string {
		evs := []string{anthropicStart, `{"type":"content_block_start","index":0,"content_block":` + start + `}`}
		for _, d := range deltas {
			evs = append(evs, `{"type":"content_block_delta","index":0,"delta":`+d+`}`)
		}
		return strings.Join(append(evs, `{"type":"content_block_stop","index":0}`, anthropicEnd, anthropicStop), "\n")
	}
	tool := `{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{}}`
	part := func(p string) string {
		return `{"type":"input_json_delta","partial_json":` + string(marshalString(p)) + `}`
	}
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	for _, s := range []string{
		use(tool, part(`{"city":`), part(` "Paris"}`)),
		use(tool, part(`{"city":"Paris"}`)),
		use(tool, part(`{"city":"Par`)),    // invalid JSON, kept as text
		use(tool, part("{\"a\":\"\xff\"")), // invalid, and not UTF-8
		use(tool, part("  \n")),            // only space: the start's input stands
		use(tool, part(`"a string"`)),      // a JSON string
		use(tool, part(`[1, 2]`)),          // not an object
		use(`{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris"}}`),
		use(`{"type":"tool_use","id":"toolu_1","name":"get_weather"}`), // no input
		use(`{"type":"tool_use","id":"toolu_1","name":"get_weather","input":null}`),
		use(`{"type":"tool_use","id":"toolu_1","name":"get_weather","input":"{\"a\":1}"}`),
		use(`{"type":"tool_use","id":"toolu_\u00e9","name":"get\"weather","input":{}}`, part(`{}`)),
		use(`{"type":"tool_use","id":7,"name":"get_weather","input":{}}`, part(`{}`)),
		use(`{"type":"tool_use","id":"toolu_1","name":null,"input":{}}`, part(`{}`)),
		use(`{"type":"tool_use","id":"toolu_1","Name":"x","name":"get_weather","input":{}}`, part(`{}`)),
		use(`{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{},"x":1,"x":2}`, part(`{}`)),
		use(`{"type":"tool_use","id":"toolu_1","name":"get_weather","x":1,"x":2}`, part(`{}`)),
		use(`{"type":"text","text":"","x":1,"x":2}`, `{"type":"text_delta","text":"hi"}`),
		use(`{"type":"text","x":1,"x":2}`, `{"type":"text_delta","text":"hi"}`),
		use(`{"type":"text","text":"","Text":""}`, `{"type":"text_delta","text":"hi"}`),
		use(`{"type":"thinking","thinking":""}`, `{"type":"thinking_delta","thinking":"hm"}`),
		use(`{"type":"thinking","thinking":"","signature":"","Signature":""}`, `{"type":"thinking_delta","thinking":"hm"}`),
		use(`{"type":"thinking","Thinking":"","signature":""}`, `{"type":"thinking_delta","thinking":"hm"}`),
		use(`{"type":"thinking","thinking":"","x":1,"x":2}`, `{"type":"signature_delta","signature":"c2ln"}`),
		use(`{"type":"thinking","thinking":"","signature":""}`, `{"type":"text_delta","text":"hi"}`, `{"type":"thinking_delta","thinking":"hm"}`),
		use(`{"type":"text","text":""}`, `{"type":"thinking_delta","thinking":"hm"}`, `{"type":"signature_delta","signature":"c2ln"}`),
		use(`{"type":"text","text":""}`, `{"type":"citations_delta","citation":{"type":"char_location","cited_text":"x"}}`),
		use(`{"type":"text","text":"","citations":null,"citations":[]}`, `{"type":"citations_delta","citation":{"a":1}}`),
		use(`{"type":"text","text":""}`, part(`{"a":1}`)), // input on a text block
		use(`{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{},"d":` + deep(9996) + `}`),
		use(`{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{},"d":` + deep(9997) + `}`),
		use(`{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{},"d":` + deep(9998) + `}`),
		use(tool, part(`{"d":`+deep(9995)+`}`)),
		use(tool, part(`{"d":`+deep(9996)+`}`)),
		use(tool, part(`{"d":`+deep(9997)+`}`)),
		use(`{"type":"text","text":""}`, `{"type":"citations_delta","citation":`+deep(9995)+`}`),
		use(`{"type":"text","text":""}`, `{"type":"citations_delta","citation":`+deep(9996)+`}`),
		use(`{"type":"text","text":""}`, `{"type":"citations_delta","citation":`+deep(9997)+`}`),
		use(`{"type":"text","text":""}`, `{"type":"citations_delta","citation":"\"[[[["}`),
	} {
		out = append(out, []byte(anthropicSSE(s)))
	}
	// The message and its end: a delta that sets content replaces the
	// blocks; one that is not an object, usage without an object to go
	// in, a key twice, are refused by the building.
	body := use(tool, part(`{"city":"Paris"}`))
	for _, r := range [][2]string{
		{anthropicEnd, `{"type":"message_delta","delta":{"stop_reason":"tool_use","content":[]},"usage":{"output_tokens":5}}`},
		{anthropicEnd, `{"type":"message_delta","delta":{"stop_reason":"tool_use","Content":[{"type":"tool_use","id":"x","name":"y","input":{}}]}}`},
		{anthropicEnd, `{"type":"message_delta","delta":null,"usage":{"output_tokens":5}}`},
		{anthropicEnd, `{"type":"message_delta","delta":"x"}`},
		{anthropicEnd, `{"type":"message_delta","delta":{"Stop_reason":"x"}}`},
		{anthropicEnd, `{"type":"message_delta","delta":{"usage":7},"usage":{"output_tokens":5}}`},
		{anthropicEnd, `{"type":"message_delta","delta":{},"usage":null}`},
		{anthropicEnd, `{"type":"message_delta","delta":{},"usage":{"a":1,"A":2}}`},
		{anthropicEnd, `{"type":"message_delta"}`},
		{anthropicEnd, ``},
		{anthropicStart, strings.Replace(anthropicStart, `"usage":{"input_tokens":10,"output_tokens":1}`, `"x":1,"x":2`, 1)},
		{anthropicStart, strings.Replace(anthropicStart, `"content":[],`, `"x":1,"x":2,`, 1)},
		{anthropicStart, strings.Replace(anthropicStart, `"content":[],`, ``, 1)},
		{anthropicStart, `{"type":"ping"}`},
	} {
		out = append(out, []byte(anthropicSSE(strings.Replace(body, r[0], r[1], 1))))
	}
	return out
}

// anthropicSSE frames events, one JSON per line, as an SSE stream.
func anthropicSSE(lines string) string {
	var b strings.Builder
	for _, l := range strings.Split(lines, "\n") {
		if l != "" {
			b.WriteString("data: " + l + "\n\n")
		}
	}
	return b.String()
}

// checkMessagesCalls feeds the stream to an assembler until it ends or
// fails, then fails t unless calls() returns what the sync codec reads of
// response() (ids, names, argument bytes, order), or fails where building
// or reading it does, with the same error.
func checkMessagesCalls(t *testing.T, stream []byte) {
	checkMessagesCallsRead(t, stream, false)
}

// checkMessagesCallsRead is checkMessagesCalls; own says that calls must
// read the calls from the blocks (listCalls), not build the response.
func checkMessagesCallsRead(t *testing.T, stream []byte, own bool) {
	t.Helper()
	evs, err := readAllEvents(bytes.NewReader(stream))
	if err != nil {
		return
	}
	a := &messagesAssembler{}
	for _, ev := range evs {
		if done, err := a.add(ev); err != nil || done {
			break
		}
	}
	if _, ok := a.listCalls(); own && !ok {
		t.Errorf("%.200q: calls() built the response to read them", stream)
	}
	got, gerr := a.calls()
	var want []wireCall
	resp, werr := a.response()
	if werr == nil {
		if want, werr = (messagesWire{}).calls(resp); werr != nil {
			werr = unguardable(streamShape, werr)
		}
	}
	if (gerr == nil) != (werr == nil) || (gerr != nil && gerr.Error() != werr.Error()) {
		t.Fatalf("%.400q:\ncalls() = %v\n   want %v", stream, gerr, werr)
	}
	if gerr == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%.400q:\ncalls() = %q\n   want %q", stream, got, want)
	}
}

// The assembler lists its calls from its own parse as the sync codec
// reads them of the assembled response, and fails where that fails.
func TestMessagesCallsAsTheResponse(t *testing.T) {
	t.Parallel()
	recorded, _ := filepath.Glob(filepath.Join(wireDir, "anthropic", "*.sse"))
	for i, s := range messagesCallStreams(t) {
		// The recorded streams are read from the blocks as add parsed them.
		t.Run(fmt.Sprintf("%03d", i), func(t *testing.T) { checkMessagesCallsRead(t, s, i < len(recorded)) })
	}
}

// FuzzMessagesCalls: calls() against the assembled response read back,
// over streams grown from the recorded ones and the edges above.
func FuzzMessagesCalls(f *testing.F) {
	for _, s := range messagesCallStreams(f) {
		f.Add(s)
	}
	f.Fuzz(checkMessagesCalls)
}
