package httpguard

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/guard"
	fp "github.com/toolguard/toolguard/httpguard/fakeprovider"
)

// responsesCallStream is a Responses stream as OpenAI sends it: reasoning,
// text, then a function call of get_weather with args, its arguments in
// three deltas, and response.completed.
func responsesCallStream(args string) *responsesEvents {
	q := marshalString(args)
	third := len(args) / 3
	delta := func(s string) string { return string(marshalString(s)) }
	msg := `{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Let me check.","annotations":[],"logprobs":[]}]}`
	fc := `{"id":"fc_1","type":"function_call","status":"completed","arguments":` + string(q) + `,"call_id":"call_1","name":"get_weather"}`
	return (&responsesEvents{}).
		add("response.created", responsesCreated).
		add("response.in_progress", responsesCreated).
		add("response.output_item.added", `"output_index":0,"item":{"id":"msg_1","type":"message","status":"in_progress","role":"assistant","content":[]}`).
		add("response.content_part.added", `"item_id":"msg_1","output_index":0,"content_index":0,"part":{"type":"output_text","text":"","annotations":[],"logprobs":[]}`).
		add("response.output_text.delta", `"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Let me","logprobs":[]`).
		add("response.output_text.delta", `"item_id":"msg_1","output_index":0,"content_index":0,"delta":" check.","logprobs":[]`).
		add("response.output_text.done", `"item_id":"msg_1","output_index":0,"content_index":0,"text":"Let me check.","logprobs":[]`).
		add("response.content_part.done", `"item_id":"msg_1","output_index":0,"content_index":0,"part":{"type":"output_text","text":"Let me check.","annotations":[],"logprobs":[]}`).
		add("response.output_item.done", `"output_index":0,"item":`+msg).
		add("response.output_item.added", `"output_index":1,"item":{"id":"fc_1","type":"function_call","status":"in_progress","arguments":"","call_id":"call_1","name":"get_weather"}`).
		add("response.function_call_arguments.delta", `"item_id":"fc_1","output_index":1,"delta":`+delta(args[:third])).
		add("response.function_call_arguments.delta", `"item_id":"fc_1","output_index":1,"delta":`+delta(args[third:2*third])).
		add("response.function_call_arguments.delta", `"item_id":"fc_1","output_index":1,"delta":`+delta(args[2*third:])).
		add("response.function_call_arguments.done", `"item_id":"fc_1","output_index":1,"arguments":`+string(q)).
		add("response.output_item.done", `"output_index":1,"item":`+fc).
		add("response.completed", responsesCompleted(msg, fc))
}

// responsesTransports are the two transports a stream is released by:
// validation alone, and the stack the package recommends.
func responsesTransports() []struct {
	name string
	rt   func() http.RoundTripper
} {
	return []struct {
		name string
		rt   func() http.RoundTripper
	}{
		{"guarded", func() http.RoundTripper { return New(nil, ToolArgValidation()) }},
		{"stack", func() http.RoundTripper {
			return New(nil, ToolCallLimit(guard.WithRunLimit(1000)), ToolArgValidation(), ModelRetry())
		}},
	}
}

// A Responses stream whose call is valid and unchanged reaches the client
// as the upstream sent it, event for event (its text, its call's
// argument deltas, its terminal event), through validation alone and
// through the stack: the guard writes none of it anew.
func TestResponsesStreamReleasedAsItCame(t *testing.T) {
	t.Parallel()
	c := streamCase(t, "openai-responses")
	up := responsesCallStream(`{"city": "Paris"}`)
	for _, tr := range responsesTransports() {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			srv := fp.New(sse(up.evs...), fp.Reply(fp.Text("never")))
			defer srv.Close()
			ex := do(t, tr.rt(), context.Background(), srv.URL+c.url, c.body)
			if ex.resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", ex.resp.StatusCode, ex.body)
			}
			got, want := events(t, ex.body), up.sseEvents(t)
			for i := 0; i < max(len(got), len(want)); i++ {
				var g, w streamEvent
				if i < len(got) {
					g = got[i]
				}
				if i < len(want) {
					w = want[i]
				}
				if g.Event != w.Event || string(g.Data) != string(w.Data) {
					t.Errorf("client event %d:\n%s %s\nwant the upstream's\n%s %s", i, g.Event, g.Data, w.Event, w.Data)
				}
			}
			if n := len(srv.Requests()); n != 1 {
				t.Errorf("%d upstream requests, want 1", n)
			}
		})
	}
}

// A Responses stream whose call the guard cleans (a null stripped) or
// re-asks is written as before, not released: the client reads the
// cleaned call, or the re-ask's, whole in one delta, never the upstream's
// argument deltas.
func TestResponsesStreamChangedNotReleased(t *testing.T) {
	t.Parallel()
	c := streamCase(t, "openai-responses")
	for _, tc := range []struct {
		name, args, want string
	}{
		{"cleaned", `{"city": "Paris", "unit": null}`, `{"city":"Paris"}`},
		{"reasked", `{"city": 42}`, `{"city": "Lyon"}`},
	} {
		for _, tr := range responsesTransports() {
			t.Run(tc.name+"/"+tr.name, func(t *testing.T) {
				t.Parallel()
				srv := fp.New(sse(responsesCallStream(tc.args).evs...), sse(responsesCallStream(`{"city": "Lyon"}`).evs...))
				defer srv.Close()
				// get_weather with an optional unit, whose null is stripped.
				body := []byte(`{"input":"Weather in Paris?","model":"gpt-4o","tools":[{"parameters":{"properties":{"city":{"type":"string"},"unit":{"type":"string"}},"required":["city"],"type":"object"},"name":"get_weather","type":"function"}],"stream":true}`)
				ex := do(t, tr.rt(), context.Background(), srv.URL+c.url, body)
				got := clientRead(t, c, ex)
				calls := callsOf(t, c.w, got)
				if len(calls) != 1 || string(calls[0].Args) != tc.want {
					t.Fatalf("the client's calls are %q, want one with %s", calls, tc.want)
				}
				deltas := 0
				for _, ev := range events(t, ex.body) {
					if ev.Event == "response.function_call_arguments.delta" {
						deltas++
						if !strings.Contains(string(ev.Data), string(marshalString(tc.want))) {
							t.Errorf("the client read the delta %s, want the call whole", ev.Data)
						}
					}
				}
				if deltas != 1 {
					t.Errorf("the client read %d argument deltas, want 1: the call written whole", deltas)
				}
			})
		}
	}
}

// A stream whose events disagree with its terminal response about a call
// is not released: the guard validates the call response.completed
// holds, so the client reads that call, written whole, and never the
// events that disagree (an upstream that streams one call's arguments and
// completes with another's would otherwise slip an unvalidated call to a
// client that accumulates the deltas).
func TestResponsesStreamNotReleasedWhenEventsDisagree(t *testing.T) {
	t.Parallel()
	c := streamCase(t, "openai-responses")
	for _, tc := range []struct {
		name string
		ev   int // the event of responsesCallStream changed
		old  string
		new  string
	}{
		{"argument delta", 12, `Paris`, `Rome!`},
		{"arguments done", 13, `Paris`, `Rome!`},
		{"item done", 14, `Paris`, `Rome!`},
		{"added item's name", 9, `"get_weather"`, `"delete_all"`},
		{"added item's arguments", 9, `"arguments":""`, `"arguments":"{\"city\":\"Rome!\"}"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			up := responsesCallStream(`{"city": "Paris"}`)
			if !strings.Contains(up.evs[tc.ev], tc.old) {
				t.Fatalf("event %d has no %s: %s", tc.ev, tc.old, up.evs[tc.ev])
			}
			up.evs[tc.ev] = strings.Replace(up.evs[tc.ev], tc.old, tc.new, 1)
			srv := fp.New(sse(up.evs...), fp.Reply(fp.Text("never")))
			defer srv.Close()
			ex := do(t, New(nil, ToolArgValidation()), context.Background(), srv.URL+c.url, c.body)
			calls := callsOf(t, c.w, clientRead(t, c, ex))
			if len(calls) != 1 || calls[0].Name != "get_weather" || string(calls[0].Args) != `{"city": "Paris"}` {
				t.Errorf("the client's calls are %q, want get_weather {\"city\": \"Paris\"}", calls)
			}
			if bad := strings.Trim(tc.new, `"`); strings.Contains(string(ex.body), bad) {
				t.Errorf("the client read %s, which the guard did not validate:\n%s", bad, ex.body)
			}
		})
	}
}

// What a Responses gate holds for release is bounded by MaxBody however
// small the held events: past it the gate drops them and does not
// release the attempt, which is then accepted as before, so a stream the
// assembler takes is never refused for what release would keep (an
// upstream's flood of tiny events after a call is held at the cost of
// its events, not of a struct each beyond the bound).
func TestResponsesGateHeldEventsBounded(t *testing.T) {
	t.Parallel()
	up := responsesCallStream(`{"city": "Paris"}`).sseEvents(t)
	tiny := []byte(`{"type":"response.x","output_index":1}`)
	n := MaxBody/(len(tiny)+heldEventCost) + 1
	var out bytes.Buffer
	g := newResponsesGate(&out)
	feed := func(ev streamEvent) {
		t.Helper()
		if _, err := g.event(ev); err != nil {
			t.Fatalf("event %s: %v", ev.Data, err)
		}
		if g.heldBytes > MaxBody && g.held != nil {
			t.Fatalf("the gate holds %d events, %d bytes, past MaxBody", len(g.held), g.heldBytes)
		}
	}
	for _, ev := range up[:10] { // up to the call's output_item.added
		feed(ev)
	}
	for i := 0; i < n; i++ {
		feed(streamEvent{Event: "response.x", Data: tiny})
	}
	for _, ev := range up[10:] {
		feed(ev)
	}
	if ok, err := g.release(); ok || err != nil {
		t.Fatalf("release() = %v, %v after the held events passed MaxBody, want false", ok, err)
	}
	resp, err := g.response()
	if err != nil {
		t.Fatal(err)
	}
	if err := g.accept(resp); err != nil {
		t.Fatal(err)
	}
	client := assemble(t, responsesWire{}, events(t, out.Bytes()))
	if calls := callsOf(t, responsesWire{}, client); len(calls) != 1 || string(calls[0].Args) != `{"city": "Paris"}` {
		t.Errorf("the client's calls are %q", calls)
	}
}
