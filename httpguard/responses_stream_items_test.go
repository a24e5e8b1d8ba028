package httpguard

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	fp "github.com/toolguard/toolguard/httpguard/fakeprovider"
)

// responsesEvents writes Responses stream events: each is a type and the
// event's other members (a JSON object's inside, without braces), and
// gets the next sequence_number.
type responsesEvents struct{ evs []string }

func (r *responsesEvents) add(typ, members string) *responsesEvents {
	data := `{"type":"` + typ + `",` + members + `,"sequence_number":` + fmt.Sprint(len(r.evs)) + `}`
	r.evs = append(r.evs, "event: "+typ+"\ndata: "+data)
	return r
}

// sseEvents parses events written by responsesEvents.
func (r *responsesEvents) sseEvents(t *testing.T) []streamEvent {
	t.Helper()
	return events(t, []byte(strings.Join(r.evs, "\n\n")+"\n\n"))
}

const responsesCreated = `"response":{"id":"resp_s","object":"response","created_at":1,"status":"in_progress","model":"gpt-4o","output":[]}`

// responsesCompleted is response.completed's members for output.
func responsesCompleted(output ...string) string {
	return `"response":{"id":"resp_s","object":"response","created_at":1,"status":"completed","model":"gpt-4o","output":[` +
		strings.Join(output, ",") + `],"usage":{"input_tokens":1,"output_tokens":1,"total_tokens":2}}`
}

// A valid stream of calls of tools the client runs (a shell_call, a
// custom_tool_call with its input deltas) beside a function call streams
// through to the client as it came, the function call held and validated;
// today the stream fails (a transport error: the proxy answers 502, the
// SDK retries).
func TestTransportResponsesStreamOtherCalls(t *testing.T) {
	t.Parallel()
	c := wireCases(t)[3] // openai-responses/stream
	if c.name != "openai-responses/stream" {
		t.Fatalf("case %s", c.name)
	}
	shell := `{"id":"sh_1","type":"shell_call","call_id":"call_sh","action":{"commands":["ls"]},"status":"completed"}`
	custom := `{"id":"ctc_1","type":"custom_tool_call","call_id":"call_ctc","name":"apply_diff","input":"*** Begin Patch"}`
	fc := `{"id":"fc_1","type":"function_call","call_id":"call_fc","name":"get_weather","arguments":"{\"city\":\"Paris\"}","status":"completed"}`
	up := (&responsesEvents{}).
		add("response.created", responsesCreated).
		add("response.output_item.added", `"output_index":0,"item":{"id":"sh_1","type":"shell_call","call_id":"call_sh","action":{"commands":["ls"]},"status":"in_progress"}`).
		add("response.output_item.done", `"output_index":0,"item":`+shell).
		add("response.output_item.added", `"output_index":1,"item":{"id":"ctc_1","type":"custom_tool_call","call_id":"call_ctc","name":"apply_diff","input":""}`).
		add("response.custom_tool_call_input.delta", `"item_id":"ctc_1","output_index":1,"delta":"*** Begin"`).
		add("response.custom_tool_call_input.delta", `"item_id":"ctc_1","output_index":1,"delta":" Patch"`).
		add("response.custom_tool_call_input.done", `"item_id":"ctc_1","output_index":1,"input":"*** Begin Patch"`).
		add("response.output_item.done", `"output_index":1,"item":`+custom)
	passed := len(up.evs)
	up.add("response.output_item.added", `"output_index":2,"item":{"id":"fc_1","type":"function_call","call_id":"call_fc","name":"get_weather","arguments":"","status":"in_progress"}`).
		add("response.function_call_arguments.delta", `"item_id":"fc_1","output_index":2,"delta":"{\"city\":\"Paris\"}"`).
		add("response.function_call_arguments.done", `"item_id":"fc_1","output_index":2,"arguments":"{\"city\":\"Paris\"}"`).
		add("response.output_item.done", `"output_index":2,"item":`+fc).
		add("response.completed", responsesCompleted(shell, custom, fc))
	srv := fp.New(sse(up.evs...), fp.Reply(fp.Text("never")))
	defer srv.Close()
	ex := do(t, New(nil, ToolArgValidation()), context.Background(), srv.URL+c.url, c.body)
	if ex.resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", ex.resp.StatusCode, ex.body)
	}
	if want := strings.Join(up.evs[:passed], "\n\n") + "\n\n"; !bytes.HasPrefix(ex.body, []byte(want)) {
		t.Errorf("the client's stream does not begin with the other calls' events as they came:\n%s\nwant first\n%s", ex.body, want)
	}
	got := assemble(t, c.w, events(t, ex.body))
	items, _, _, err := responsesOutput(got)
	if err != nil || len(items) != 3 {
		t.Fatalf("the client's response has %d items (%v), want 3:\n%s", len(items), err, got)
	}
	for i, want := range []string{shell, custom, fc} {
		if !sameJSON(raw(got, items[i]), []byte(want)) {
			t.Errorf("item %d is %s, want %s", i, raw(got, items[i]), want)
		}
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("%d upstream requests, want 1", n)
	}
}

// An event for an output item the stream has passed (after a later item
// began, or after the item's own output_item.done) is refused, not
// skipped: the client could read it where the guard does not. So are an
// item of an unknown type and an event the decoder cannot read.
func TestResponsesAssemblerRefusesPassedItems(t *testing.T) {
	msg := `{"id":"msg_1","type":"message","status":"in_progress","role":"assistant","content":[]}`
	fc := `{"id":"fc_1","type":"function_call","call_id":"call_1","name":"get_weather","arguments":"","status":"in_progress"}`
	fcDone := `{"id":"fc_1","type":"function_call","call_id":"call_1","name":"get_weather","arguments":"{\"city\":\"Paris\"}","status":"completed"}`
	tests := []struct {
		name string
		evs  *responsesEvents
	}{
		{"text delta after a later item began", (&responsesEvents{}).add("response.created", responsesCreated).
			add("response.output_item.added", `"output_index":0,"item":`+msg).
			add("response.output_item.added", `"output_index":1,"item":`+fc).
			add("response.output_text.delta", `"item_id":"msg_1","output_index":0,"content_index":0,"delta":"late"`)},
		{"arguments delta after its item's end", (&responsesEvents{}).add("response.created", responsesCreated).
			add("response.output_item.added", `"output_index":0,"item":`+fc).
			add("response.function_call_arguments.delta", `"item_id":"fc_1","output_index":0,"delta":"{\"city\":\"Paris\"}"`).
			add("response.output_item.done", `"output_index":0,"item":`+fcDone).
			add("response.function_call_arguments.delta", `"item_id":"fc_1","output_index":0,"delta":"{\"city\":42}"`)},
		{"item done after a later item began", (&responsesEvents{}).add("response.created", responsesCreated).
			add("response.output_item.added", `"output_index":0,"item":`+fc).
			add("response.output_item.added", `"output_index":1,"item":`+msg).
			add("response.output_item.done", `"output_index":0,"item":`+fcDone)},
		{"item added again", (&responsesEvents{}).add("response.created", responsesCreated).
			add("response.output_item.added", `"output_index":0,"item":`+msg).
			add("response.output_item.added", `"output_index":0,"item":`+fc)},
		{"item done as another type", (&responsesEvents{}).add("response.created", responsesCreated).
			add("response.output_item.added", `"output_index":0,"item":`+msg).
			add("response.output_item.done", `"output_index":0,"item":`+fcDone)},
		{"item of an unknown type", (&responsesEvents{}).add("response.created", responsesCreated).
			add("response.output_item.added", `"output_index":0,"item":{"id":"x_1","type":"a_type_from_next_year"}`)},
		{"event with a key twice", (&responsesEvents{}).add("response.created", responsesCreated).
			add("response.output_item.added", `"output_index":0,"item":`+msg).
			add("response.output_text.delta", `"item_id":"msg_1","output_index":0,"content_index":0,"delta":"a","delta":"b"`)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := responsesWire{}.newAssembler()
			var err error
			evs := tc.evs.sseEvents(t)
			for i, ev := range evs {
				if _, err = a.add(ev); err != nil {
					if i != len(evs)-1 {
						t.Fatalf("event %d of %d refused: %v", i, len(evs), err)
					}
					break
				}
			}
			if !isUnguardable(err) {
				t.Errorf("the last event: %v, want an unguardable error", err)
			}
		})
	}
}

// The bound applies to what the assembler holds of the response, not to
// the events' envelopes: a text-only stream whose events pass MaxBody
// (each padded with an obfuscation member, as OpenAI pads them, and its
// ids repeated) while its text is 150 KB arrives whole. (A stream whose
// held argument bytes pass MaxBody is still refused with
// response_too_large: TestStreamPastTheBoundBeforeCommit.)
func TestTransportResponsesStreamBound(t *testing.T) {
	t.Parallel()
	c := wireCases(t)[3] // openai-responses/stream
	const n = 1_500
	delta := strings.Repeat("ab", 50)
	text := strings.Repeat(delta, n)
	pad := strings.Repeat("x", 5_700)
	msg := `{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"` + text + `","annotations":[]}]}`
	up := (&responsesEvents{}).add("response.created", responsesCreated).
		add("response.output_item.added", `"output_index":0,"item":{"id":"msg_1","type":"message","status":"in_progress","role":"assistant","content":[]}`).
		add("response.content_part.added", `"item_id":"msg_1","output_index":0,"content_index":0,"part":{"type":"output_text","text":"","annotations":[]}`)
	for i := 0; i < n; i++ {
		up.add("response.output_text.delta", `"item_id":"msg_1","output_index":0,"content_index":0,"delta":"`+delta+`","logprobs":[],"obfuscation":"`+pad+`"`)
	}
	up.add("response.output_text.done", `"item_id":"msg_1","output_index":0,"content_index":0,"text":"`+text+`","logprobs":[]`).
		add("response.content_part.done", `"item_id":"msg_1","output_index":0,"content_index":0,"part":{"type":"output_text","text":"`+text+`","annotations":[]}`).
		add("response.output_item.done", `"output_index":0,"item":`+msg).
		add("response.completed", responsesCompleted(msg))
	if size := len(strings.Join(up.evs, "\n\n")); size <= MaxBody {
		t.Fatalf("the stream is %d bytes, want more than MaxBody", size)
	}
	srv := fp.New(sse(up.evs...))
	defer srv.Close()
	ex := do(t, New(nil, ToolArgValidation()), context.Background(), srv.URL+c.url, c.body)
	if ex.resp.StatusCode != http.StatusOK || bytes.Contains(ex.body, []byte("response_too_large")) {
		t.Fatalf("status %d, the stream ends %q; want 200 and the stream whole", ex.resp.StatusCode, ex.body[max(0, len(ex.body)-300):])
	}
	if got := guardText(t, c, assemble(t, c.w, events(t, ex.body))); got != text {
		t.Errorf("the client read %d bytes of text, want %d", len(got), len(text))
	}
}
