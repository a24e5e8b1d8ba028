package httpguard

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// messagesParsedSeeds are the events of every recorded stream (each
// protocol's: the others' are events an Anthropic decoder may be given
// too), and events at the edges of what the decoder checks and reads.
func messagesParsedSeeds(t testing.TB) [][]byte {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(wireDir, "*", "*.sse"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no recorded streams: %v", err)
	}
	var out [][]byte
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		evs, err := readAllEvents(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			out = append(out, ev.Data)
		}
	}
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	for _, s := range []string{
		``, ` `, `null`, ` null `, `nul`, `nulll`, `[]`, `"x"`, `1`, `{`, `{}`, ` { } `, `{} x`, `{}}`, `{"type":"ping"`, `{"type":"ping",}`,
		`{"type" "ping"}`, `{type:"ping"}`, `{"type":"ping"}` + "\x00", `{"type":"pi` + "\n" + `ng"}`,
		`{"type":"message_start","message":{"id":"m","content":[]}}`, `{"type":"message_start"}`, `{"type":"message_start","message":null}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
		`{"type":"content_block_start","index":0}`, `{"type":"content_block_start","content_block":{"type":"a","TYPE":"b"}}`,
		`{"type":"content_block_start","content_block":[1]}`, `{"type":"content_block_start","content_block":{"type":"te\u0078t"}}`,
		`{"type":"content_block_start","content_block":{"data":"x","type":"redacted_thinking"}}`, `{"type":"content_block_start","content_block":{"type":"tool_use "}}`, `{"type":"content_block_start","content_block":{"type":7}}`,
		`{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"a\nb \u00e9 \ud83d\ude00 \ud800"}}`,
		"{\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"\xff\xfe é\"}}",
		`{"type":"content_block_delta","delta":{"type":"thinking_delta","thinking":"hm","text":"x","signature":"s","partial_json":"{}"}}`,
		`{"type":"content_block_delta","delta":{"type":"signature_delta","signature":null}}`,
		`{"type":"content_block_delta","delta":{"type":"input_json_delta","partial_json":"{\"city\": \"Par"}}`,
		`{"type":"content_block_delta","delta":{"type":"input_json_delta"}}`, `{"type":"content_block_delta","delta":{"type":"input_json_delta","partial_json":""}}`,
		`{"type":"content_block_delta","delta":{"type":"citations_delta","citation":{"a":1}}}`, `{"type":"content_block_delta","delta":{"type":"citations_delta"}}`,
		`{"type":"content_block_delta","delta":{"type":"citations_delta","citation":null}}`, `{"type":"content_block_delta","delta":{"type":"compaction_delta","x":1}}`,
		`{"type":"content_block_delta","delta":null}`, `{"type":"content_block_delta"}`, `{"type":"content_block_delta","delta":"x"}`, `{"type":"content_block_delta","delta":[]}`,
		`{"type":"content_block_delta","delta":{"text":1}}`, `{"type":"content_block_delta","delta":{"type":"text_delta","text":"a","Text":"b"}}`,
		`{"type":"content_block_delta","delta":{"type":"text_delta","text":"a","text":"b"}}`, `{"type":"content_block_delta","delta":{"ty\u0070e":"text_delta","te\u0078t":"a"}}`,
		`{"delta":{"type":"text_delta","text":"a"},"index":2,"type":"content_block_delta"}`, `{"delta":{"text":5},"type":"message_delta"}`,
		`{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":5}}`, `{"type":"message_delta","delta":null,"usage":null}`,
		`{"type":"message_stop"}`, `{"type":"error","error":{"type":"overloaded_error","message":"x"}}`, `{"type":"error","type":"x"}`,
		`{"type":"x","type":"y","index":"not json`, `{"type":"a","TYPE":"b"}`, `{"Type":"ping"}`, `{"type":"message\u005fstop"}`, `{"type":null,"index":null}`,
		// Each member an event or a delta reads, its key in another case.
		`{"type":"content_block_start","Index":0}`, `{"type":"message_start","MESSAGE":{}}`, `{"type":"content_block_start","Content_block":{}}`,
		`{"type":"message_delta","delta":{},"Delta":{}}`, `{"type":"message_delta","Usage":{}}`,
		`{"type":"content_block_delta","delta":{"Type":"text_delta"}}`, `{"type":"content_block_delta","delta":{"type":"text_delta","Text":"a"}}`,
		`{"type":"content_block_delta","delta":{"type":"thinking_delta","THINKING":"a"}}`, `{"type":"content_block_delta","delta":{"type":"signature_delta","Signature":"a"}}`,
		`{"type":"content_block_delta","delta":{"type":"input_json_delta","Partial_json":"a"}}`, `{"type":"content_block_delta","delta":{"type":"citations_delta","Citation":{}}}`,
		`{"type":5}`, `{"index":1.0}`, `{"index":1e2}`, `{"index":-0}`, `{"index":99999999999999999999}`, `{"index":"1"}`, `{"index":01}`, `{"index":-}`,
		`{"ſ":1,"K":2,"\u212aey":3}`, `{"\u017fype":"ping"}`, `{"usage":{},"usage":{}}`, `{"message":1,"Message":2}`, `{"x":tru}`, `{"x":[1,]}`, `{"x":{"a"}}`,
		`{"x":"\u12"}`, `{"x":"\q"}`, `{"x":-01}`, `{"x":1.}`, `{"x":1e}`, `{"x":.5}`, `{"x":[{"a":[{"b":null}]}],"type":"ping"}`,
		`{"x":` + deep(9998) + `}`, `{"x":` + deep(9999) + `}`, `{"x":` + deep(10000) + `}`, `{"x":` + deep(64) + `,"type":"ping"}`, `{"x":` + deep(65) + `}`,
		`{"type":"a","type":"b","x":` + deep(10000) + `}`, `{"index":"x","y":[}`, `{"type":"content_block_start","content_block":{"type":"a","type":"b"},"x":[}`,
	} {
		out = append(out, []byte(s))
	}
	return out
}

// checkMessagesParsed fails unless parseMessagesEventInto reads ev as the
// two-pass decoder read it (parseMessagesEventOld): the same error, or the
// members the event's type reads alike.
func checkMessagesParsed(t *testing.T, ev streamEvent) {
	t.Helper()
	want, werr := parseMessagesEventOld(ev)
	got, gerr := parseMessagesEventInto(ev, new(messagesParsed))
	if (werr == nil) != (gerr == nil) || werr != nil && (werr.Error() != gerr.Error() || isUnguardable(werr) != isUnguardable(gerr) ||
		isUpstreamError(werr) != isUpstreamError(gerr) || errors.Is(werr, errJSON) != errors.Is(gerr, errJSON)) {
		t.Fatalf("%q (event %q): parse = %v, want %v", ev.Data, ev.Event, gerr, werr)
	}
	if werr != nil {
		return
	}
	// text is a delta's text, where nil and empty are one; any other is a
	// value as it came, never empty, nil when absent.
	type pair struct {
		got, want []byte
		text      bool
	}
	var raws []pair
	same := got.typ == want.Type && got.index == want.Index
	switch want.Type {
	case "message_start":
		raws = []pair{{got.raw, want.Message, false}}
	case "content_block_start":
		raws = []pair{{got.raw, want.ContentBlock, false}}
		same = same && got.sub == want.blockType
	case "message_delta":
		raws = []pair{{got.raw, want.Delta, false}, {got.usage, want.Usage, false}}
	case "content_block_delta":
		d := want.delta
		text := map[string]string{"text_delta": d.Text, "thinking_delta": d.Thinking, "signature_delta": d.Signature, "input_json_delta": d.PartialJSON}
		w, ok := text[d.Type]
		wantRaw := []byte(w)
		if d.Type == "citations_delta" {
			wantRaw, ok = d.Citation, true
		}
		if !ok {
			wantRaw = nil
		}
		raws = []pair{{got.raw, wantRaw, d.Type != "citations_delta"}}
		same = same && got.sub == d.Type && got.text == len(d.Text)+len(d.Thinking)+len(d.Signature)+len(d.PartialJSON)
	default:
		raws = []pair{{got.raw, nil, false}, {got.usage, nil, false}}
	}
	for _, r := range raws {
		same = same && bytes.Equal(r.got, r.want) && (r.text || (r.got == nil) == (len(r.want) == 0))
	}
	if !same {
		t.Fatalf("%q: parse = %+v, want %+v", ev.Data, *got, *want)
	}
}

// The one-pass parse of an event reads what the two-pass decoder read, and
// fails where it failed, with the same error.
func TestMessagesParsedAsBefore(t *testing.T) {
	t.Parallel()
	for _, data := range messagesParsedSeeds(t) {
		for _, name := range []string{"", "error"} {
			checkMessagesParsed(t, streamEvent{Event: name, Data: data})
		}
	}
}

// FuzzMessagesParsed holds the one-pass parse of an event to the two-pass
// decoder, over the recorded events and the edges above.
func FuzzMessagesParsed(f *testing.F) {
	for _, data := range messagesParsedSeeds(f) {
		f.Add(data, false)
	}
	f.Fuzz(func(t *testing.T, data []byte, errorEvent bool) {
		ev := streamEvent{Data: data}
		if errorEvent {
			ev.Event = "error"
		}
		checkMessagesParsed(t, ev)
	})
}

// A text delta's text is the event's own bytes where it needs no
// decoding, and decoded where it does; validValueEnd finds the end of a
// value as validJSON checks it.
func TestMessagesParsedText(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ data, text string }{
		{`{"type":"content_block_delta","delta":{"type":"text_delta","text":"plain é"}}`, "plain é"},
		{`{"type":"content_block_delta","delta":{"type":"text_delta","text":"a\nb\u00e9"}}`, "a\nbé"},
		{"{\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"\xff\"}}", "\uFFFD"},
	} {
		data := []byte(tc.data)
		e, err := parseMessagesEventInto(streamEvent{Data: data}, new(messagesParsed))
		if err != nil || string(e.raw) != tc.text {
			t.Fatalf("parse(%q) = %q, %v; want %q", data, e.raw, err, tc.text)
		}
		in := bytes.Index(data, []byte(tc.text))
		if own := in >= 0 && len(e.raw) > 0 && &data[in] == &e.raw[0]; own != (tc.text == "plain é") {
			t.Errorf("parse(%q): text in the event's bytes = %v", data, own)
		}
	}
}

// envelopeSeeds are message_start's messages, message_delta's deltas and
// usages of the recorded streams, and edges of the envelope's building:
// keys twice, in another case, not ASCII, usage that is not an object or
// that the delta replaces.
func envelopeSeeds(t testing.TB) (messages, deltas, usages [][]byte) {
	t.Helper()
	for _, data := range messagesParsedSeeds(t) {
		e, err := parseMessagesEventInto(streamEvent{Data: data}, new(messagesParsed))
		switch {
		case err != nil:
		case e.typ == "message_start" && kind(e.raw, span{0, len(e.raw)}) == '{':
			messages = append(messages, e.raw)
		case e.typ == "message_delta":
			deltas, usages = append(deltas, e.raw), append(usages, e.usage)
		}
	}
	for _, s := range []string{`{}`, `{"x":1,"x":2}`, `{"content":[],"Content":[]}`, `{"CONTENT":[]}`, `{"usage":7}`, `{"Usage":{}}`,
		`{"usage":{"a":1,"a":2}}`, `{"usage":{"output_tokens":1,"Output_tokens":2}}`, `{"ſtop_reason":null,"usage":{}}`, `{"usage":{"\u212a":1}}`,
		`{"usage":null}`, `{"usage":{},"usage":{}}`, `{"id":"m","content":[],"stop_reason":null,"usage":{"output_tokens":1}}`} {
		messages = append(messages, []byte(s))
	}
	for _, s := range []string{`{}`, `null`, `"x"`, `{"stop_reason":"x","stop_reason":"y"}`, `{"Stop_reason":"x"}`, `{"usage":7}`, `{"usage":{"b":1}}`,
		`{"x":1,"X":2}`, `{"a\u00e9":1}`, `{"stop_reason":"end_turn","stop_sequence":null}`, `{"content":[]}`} {
		deltas = append(deltas, []byte(s))
	}
	for _, s := range []string{`{}`, `null`, `[]`, `{"a":1,"A":2}`, `{"a":1,"a":2}`, `{"output_tokens":5}`, `{"Output_tokens":5}`, `{"\u017f":1}`} {
		usages = append(usages, []byte(s))
	}
	return messages, append(deltas, nil), append(usages, nil)
}

// checkEnvelope fails unless envelopeBuildsPlain, where it knows, says
// what envelope's building does.
func checkEnvelope(t *testing.T, message, delta, usage []byte) bool {
	t.Helper()
	a := &messagesAssembler{message: message, delta: delta, usage: usage}
	builds, known := a.envelopeBuildsPlain()
	_, err := a.envelope([]byte("[]"))
	if known && builds != (err == nil) {
		t.Fatalf("message %q, delta %q, usage %q: builds %v; envelope: %v", message, delta, usage, builds, err)
	}
	return known
}

// The envelope's building is read without building it, as it builds.
func TestMessagesEnvelopeBuilds(t *testing.T) {
	t.Parallel()
	messages, deltas, usages := envelopeSeeds(t)
	for _, m := range messages {
		for _, d := range deltas {
			for _, u := range usages {
				checkEnvelope(t, m, d, u)
			}
		}
	}
	// The recorded streams' envelopes are read without building them.
	for _, dir := range []string{"anthropic"} {
		names, _ := filepath.Glob(filepath.Join(wireDir, dir, "*.sse"))
		for _, n := range names {
			b, _ := os.ReadFile(n)
			evs, _ := readAllEvents(bytes.NewReader(b))
			a := &messagesAssembler{}
			for _, ev := range evs {
				if _, err := a.add(ev); err != nil {
					break
				}
			}
			if _, known := a.envelopeBuildsPlain(); !known {
				t.Errorf("%s: the envelope's keys were not read as plain", n)
			}
		}
	}
}

// FuzzMessagesEnvelope holds envelopeBuildsPlain to envelope over
// messages, deltas and usages as events carry them (JSON values, without
// space around them; a message is an object).
func FuzzMessagesEnvelope(f *testing.F) {
	messages, deltas, usages := envelopeSeeds(f)
	for i, m := range messages {
		f.Add(m, deltas[i%len(deltas)], usages[i%len(usages)])
	}
	for i, d := range deltas {
		f.Add(messages[i%len(messages)], d, usages[(i+1)%len(usages)])
	}
	f.Fuzz(func(t *testing.T, message, delta, usage []byte) {
		for _, b := range [][]byte{message, delta, usage} {
			if len(b) == 0 {
				continue
			}
			if r, err := root(b); err != nil || !validJSON(b) || r != (span{0, len(b)}) {
				return
			}
		}
		if kind(message, span{0, len(message)}) != '{' {
			return
		}
		checkEnvelope(t, message, delta, usage)
	})
}

// eventSink is an eventWriter that drops what it is given.
type eventSink struct{}

func (eventSink) putEvent(streamEvent) error  { return nil }
func (eventSink) Write(p []byte) (int, error) { return len(p), nil }

// BenchmarkMessagesGate measures an Anthropic gate alone over the
// recorded stream of BenchmarkTransport's anthropic/stream rows (a
// thinking block, a text block, two calls): each event parsed and taken,
// the calls listed, what was held released, without the transport, the
// stream's reading or the client's buffer.
func BenchmarkMessagesGate(b *testing.B) {
	raw, err := os.ReadFile(filepath.Join(wireDir, "anthropic", "gate-accept.sse"))
	if err != nil {
		b.Fatal(err)
	}
	evs, err := readAllEvents(bytes.NewReader(raw))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		g := newMessagesGate(eventSink{})
		for _, ev := range evs {
			if _, err := g.event(ev); err != nil {
				b.Fatal(err)
			}
		}
		if cs, err := g.current().calls(); err != nil || len(cs) != 2 {
			b.Fatalf("calls = %q, %v", cs, err)
		}
		if ok, err := g.release(); !ok || err != nil {
			b.Fatalf("release = %v, %v", ok, err)
		}
	}
}
