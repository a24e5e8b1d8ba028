package httpguard

import (
	"strings"
	"testing"
)

// anthropicEvents is an Anthropic stream as anthropic-sdk-go reads it:
// named events, each with its JSON.
func anthropicEvents(datas ...string) []streamEvent {
	out := make([]streamEvent, len(datas))
	for i, d := range datas {
		typ := d[len(`{"type":"`):]
		out[i] = streamEvent{Event: typ[:strings.IndexByte(typ, '"')], Data: []byte(d)}
	}
	return out
}

const (
	anthropicStart = `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":1}}}`
	anthropicEnd   = `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":5}}`
	anthropicStop  = `{"type":"message_stop"}`
)

// feedAnthropic feeds evs to a Messages gate (and so its assembler) and
// returns the first error and what the gate wrote for the client.
func feedAnthropic(evs []streamEvent) (string, error) {
	var out strings.Builder
	g := messagesWire{}.newGate(&out)
	for _, ev := range evs {
		if _, err := g.event(ev); err != nil {
			return out.String(), err
		}
	}
	_, err := g.response()
	return out.String(), err
}

// A tool_use block in message_start's content, which anthropic-sdk-go's
// accumulator takes with the message, used to be skipped: the guard
// assembled the streamed blocks only and checked no call while the client
// read one. It cannot be held (the message starts with it), so the answer
// is refused as unguardable before anything reaches the client; so is any
// block in message_start's content.
func TestAnthropicMessageStartWithContent(t *testing.T) {
	t.Parallel()
	for name, content := range map[string]string{
		"tool_use": `[{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":42}}]`,
		"text":     `[{"type":"text","text":"Hello"}]`,
		"object":   `{"type":"tool_use"}`,
	} {
		start := strings.Replace(anthropicStart, `"content":[]`, `"content":`+content, 1)
		out, err := feedAnthropic(anthropicEvents(start, anthropicEnd, anthropicStop))
		if !isUnguardable(err) {
			t.Errorf("%s: %v, want an unguardable error", name, err)
		}
		if out != "" {
			t.Errorf("%s: the client read %s", name, out)
		}
	}
	if _, err := feedAnthropic(anthropicEvents(strings.Replace(anthropicStart, `"content":[]`, `"content":null`, 1), anthropicEnd, anthropicStop)); err != nil {
		t.Errorf("content null: %v, want none", err)
	}
}

// Blocks of the types Anthropic documents pass to the client and into
// what the guard reads (thinking, redacted thinking, a server tool's use
// and result); a block or delta of a type the guard does not know, which
// the client would read and the guard would not check, is refused as
// unguardable, as is a tool input given both in its block's start and in
// deltas (the SDKs add the fragments to it). The sync answer's reader
// refuses an unknown block too.
func TestAnthropicBlockTypes(t *testing.T) {
	t.Parallel()
	known := anthropicEvents(anthropicStart,
		`{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Search."}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"sig"}}`,
		`{"type":"content_block_stop","index":0}`,
		`{"type":"content_block_start","index":1,"content_block":{"type":"redacted_thinking","data":"opaque"}}`,
		`{"type":"content_block_stop","index":1}`,
		`{"type":"content_block_start","index":2,"content_block":{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}}}`,
		`{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"query\":\"weather\"}"}}`,
		`{"type":"content_block_stop","index":2}`,
		`{"type":"content_block_start","index":3,"content_block":{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[]}}`,
		`{"type":"content_block_stop","index":3}`,
		anthropicEnd, anthropicStop)
	out, err := feedAnthropic(known)
	if err != nil {
		t.Fatalf("known blocks: %v", err)
	}
	for _, want := range []string{"Search.", "opaque", "srvtoolu_1", "web_search_tool_result"} {
		if !strings.Contains(out, want) {
			t.Errorf("known blocks: the client did not read %q:\n%s", want, out)
		}
	}
	a := messagesWire{}.newAssembler()
	for _, ev := range known {
		if _, err := a.add(ev); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := a.response()
	if err != nil {
		t.Fatal(err)
	}
	if calls, err := (messagesWire{}).calls(resp); err != nil || len(calls) != 0 ||
		!strings.Contains(string(resp), `"input":{"query":"weather"}`) || !strings.Contains(string(resp), `"data":"opaque"`) {
		t.Errorf("known blocks assembled: %s (calls %v, %v)", resp, calls, err)
	}

	for name, evs := range map[string][]streamEvent{
		"unknown block": anthropicEvents(anthropicStart,
			`{"type":"content_block_start","index":0,"content_block":{"type":"client_tool_call","id":"x","name":"get_weather","input":{"city":42}}}`,
			`{"type":"content_block_stop","index":0}`, anthropicEnd, anthropicStop),
		"unknown delta": anthropicEvents(anthropicStart,
			`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
			`{"type":"content_block_delta","index":0,"delta":{"type":"html_delta","html":"<b>hi</b>"}}`,
			`{"type":"content_block_stop","index":0}`, anthropicEnd, anthropicStop),
		"input twice": anthropicEvents(anthropicStart,
			`{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris"}}}`,
			`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"city\":42}"}}`,
			`{"type":"content_block_stop","index":0}`, anthropicEnd, anthropicStop),
	} {
		out, err := feedAnthropic(evs)
		if !isUnguardable(err) {
			t.Errorf("%s: %v, want an unguardable error", name, err)
		}
		if strings.Contains(out, "client_tool_call") || strings.Contains(out, "html_delta") || strings.Contains(out, "input_json_delta") {
			t.Errorf("%s: the client read what the guard refused:\n%s", name, out)
		}
	}
	if _, err := (messagesWire{}).calls([]byte(`{"content":[{"type":"text","text":"hi"},{"type":"client_tool_call","name":"get_weather","input":{"city":42}}]}`)); !isUnguardable(err) {
		t.Errorf("sync, an unknown block: %v, want an unguardable error", err)
	}
}

// A block keeps the texts its type reads, each of its own deltas alone: a
// text block its text, a thinking block its thinking and signature; a
// delta of another block's type is taken (and counted) and reaches no
// block, as encoding/json's reading of the assembled answer had it.
func TestAnthropicBlockKeepsItsOwnTexts(t *testing.T) {
	t.Parallel()
	a := &messagesAssembler{}
	for _, ev := range anthropicEvents(anthropicStart,
		`{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"not thinking"}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hm"}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"c2ln"}}`,
		`{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`,
		`{"type":"content_block_delta","index":1,"delta":{"type":"thinking_delta","thinking":"not text"}}`,
		`{"type":"content_block_delta","index":1,"delta":{"type":"signature_delta","signature":"bm90"}}`,
		`{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"hi"}}`,
		`{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_1","name":"f","input":{}}}`,
		`{"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"not input"}}`,
		`{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{}"}}`,
		anthropicEnd, anthropicStop) {
		if _, err := a.add(ev); err != nil {
			t.Fatalf("add(%s) = %v", ev.Data, err)
		}
	}
	resp, err := a.response()
	if err != nil {
		t.Fatal(err)
	}
	c, _, err := field(resp, span{0, len(resp)}, "content")
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"type":"thinking","thinking":"hm","signature":"c2ln"},{"type":"text","text":"hi"},{"type":"tool_use","id":"toolu_1","name":"f","input":{}}]`
	if got := string(raw(resp, c)); got != want {
		t.Errorf("content = %s, want %s", got, want)
	}
}
