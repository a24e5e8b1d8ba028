package httpguard

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/guard"
	fp "github.com/toolguard/toolguard/httpguard/fakeprovider"
)

// A Responses request that continues server-side state is guarded without
// feedback: an invalid call is refused with a 422 naming the violation,
// and no re-ask reaches the provider (it would stay in the conversation);
// a call that stripping or coercion fixes passes with its arguments
// written back. A request only stored (store: true, the default) is
// re-asked as any other.
func TestServerStateWithoutFeedback(t *testing.T) {
	t.Parallel()
	tools := `"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"}},"required":["city"]}}]`
	tests := []struct {
		name, state string
		stream      bool
	}{
		{"previous_response_id", `"previous_response_id":"resp_0",`, false},
		{"previous_response_id stream", `"previous_response_id":"resp_0",`, true},
		{"conversation", `"conversation":{"id":"conv_1"},`, false},
		{"conversation string", `"conversation":"conv_1",`, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			stream := ""
			if tc.stream {
				stream = `"stream":true,`
			}
			body := []byte(`{"model":"gpt-4o",` + tc.state + stream + `"input":[{"type":"message","role":"user","content":"Weather?"}],` + tools + `}`)
			srv := fp.New(
				fp.Reply(fp.Call("get_weather", `{"city": 42}`)),
				fp.Reply(fp.Call("get_weather", `{"city": "Paris", "days": "3"}`)))
			defer srv.Close()
			tr := New(nil, ToolArgValidation())
			ex := do(t, tr, context.Background(), srv.URL+"/v1/responses", body)
			if ex.resp.StatusCode != http.StatusUnprocessableEntity {
				t.Fatalf("status %d, want 422:\n%s", ex.resp.StatusCode, ex.body)
			}
			typ, msg := errorType(t, responsesWire{}, ex.body)
			if typ != "tool_calls_refused" || !strings.Contains(msg, "/city") || !strings.Contains(msg, strings.Fields(tc.name)[0]) {
				t.Errorf("error %q %q", typ, msg)
			}
			if n := len(srv.Requests()); n != 1 {
				t.Fatalf("%d upstream requests, want 1 (no re-ask)", n)
			}
			// A coercion needs no feedback: the call passes, cleaned.
			ex = do(t, tr, context.Background(), srv.URL+"/v1/responses", body)
			c := wireCase{w: responsesWire{}, stream: tc.stream}
			calls := callsOf(t, responsesWire{}, clientRead(t, c, ex))
			if len(calls) != 1 || !sameJSON(calls[0].Args, []byte(`{"city":"Paris","days":3}`)) {
				t.Errorf("the client reads %+v, want the coerced call", calls)
			}
		})
	}
	t.Run("store", func(t *testing.T) {
		t.Parallel()
		body := []byte(`{"model":"gpt-4o","store":true,"input":"Weather?",` + tools + `}`)
		srv := fp.New(fp.Reply(fp.Call("get_weather", `{"city": 42}`)), fp.Reply(fp.Call("get_weather", `{"city": "Paris"}`)))
		defer srv.Close()
		ex := do(t, New(nil, ToolArgValidation()), context.Background(), srv.URL+"/v1/responses", body)
		if ex.resp.StatusCode != http.StatusOK || len(srv.Requests()) != 2 {
			t.Errorf("a stored request: %d after %d requests, want 200 after a re-ask", ex.resp.StatusCode, len(srv.Requests()))
		}
	})
}

// ToolCallLimit's re-ask (ExitContinue) is refused the same way.
func TestServerStateLimitRefused(t *testing.T) {
	t.Parallel()
	body := []byte(`{"model":"gpt-4o","previous_response_id":"resp_0","input":"Weather?","tools":[{"type":"function","name":"get_weather","parameters":{"type":"object"}}]}`)
	srv := fp.New(fp.Reply(fp.Call("get_weather", `{}`), fp.Call("get_weather", `{}`)))
	defer srv.Close()
	ex := do(t, New(nil, ToolCallLimit(guard.WithRunLimit(1))), guard.WithRun(context.Background()), srv.URL+"/v1/responses", body)
	if typ, msg := errorType(t, responsesWire{}, ex.body); ex.resp.StatusCode != 422 || typ != "tool_calls_refused" || !strings.Contains(msg, "limit") {
		t.Errorf("%d %q %q", ex.resp.StatusCode, typ, msg)
	}
}

// An Anthropic request on a message thread, created or continued, is
// guarded without feedback too.
func TestAnthropicThreadWithoutFeedback(t *testing.T) {
	t.Parallel()
	for _, thread := range []string{`{"type":"create"}`, `{"type":"continue","previous_message_id":"msg_0"}`} {
		body := []byte(`{"model":"claude","max_tokens":10,"thread":` + thread + `,"messages":[{"role":"user","content":"Weather?"}],` +
			`"tools":[{"name":"get_weather","input_schema":{"type":"object","properties":{"city":{"type":"string"}}}}]}`)
		srv := fp.New(fp.Reply(fp.Call("get_weather", `{"city": 42}`)), fp.Reply(fp.Call("get_weather", `{"city": "Paris"}`)))
		ex := do(t, New(nil, ToolArgValidation()), context.Background(), srv.URL+"/v1/messages", body)
		srv.Close()
		if typ, msg := errorType(t, messagesWire{}, ex.body); ex.resp.StatusCode != 422 || typ != "tool_calls_refused" || !strings.Contains(msg, "thread") {
			t.Errorf("thread %s: %d %q %q", thread, ex.resp.StatusCode, typ, msg)
		}
		if n := len(srv.Requests()); n != 1 {
			t.Errorf("thread %s: %d upstream requests, want 1", thread, n)
		}
	}
}
