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
func (r *responsesEvents) sseEvents(t *testing.T) []sseEvent {
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
