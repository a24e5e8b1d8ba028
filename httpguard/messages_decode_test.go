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
		`{"type":"content_block_start","content_block":[1]}`, `{"type":"content_block_start","content_block":{"type":7}}`,
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
