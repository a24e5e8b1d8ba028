package httpguard

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/cenkalti/backoff/v4"
	"github.com/toolguard/toolguard/guard"
	fp "github.com/toolguard/toolguard/httpguard/fakeprovider"
)

// chatFinishChunks reads a client's chat stream: its content deltas
// joined, and the finish_reason of each chunk that has one.
func chatFinishChunks(t *testing.T, body []byte) (content string, finishes []string) {
	t.Helper()
	for _, ev := range events(t, body) {
		if string(ev.Data) == "[DONE]" {
			continue
		}
		c, err := parseChatChunk(ev.Data)
		if err != nil {
			t.Fatalf("%v: %s", err, ev.Data)
		}
		for _, ch := range c.Choices {
			if ch.Delta.Content != nil {
				content += *ch.Delta.Content
			}
			if ch.FinishReason != nil {
				finishes = append(finishes, *ch.FinishReason)
			}
		}
	}
	return content, finishes
}

// An OpenAI-compatible server (vLLM, Ollama, …) puts the last text and
// the finish_reason in one chunk. Through ToolArgValidation the client
// reads both, with and without tools in the request: the answer's text
// whole and one finish_reason, "stop".
func TestChatFinishWithLastText(t *testing.T) {
	t.Parallel()
	upstream := []string{
		`data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Hello"},"finish_reason":null}]}`,
		`data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":" world"},"finish_reason":"stop"}]}`,
		`data: [DONE]`,
	}
	bodies := map[string][]byte{
		"tools":    fixture(t, "openai-chat", "stream-request.json"),
		"no tools": []byte(`{"model":"m","stream":true,"messages":[{"role":"user","content":"Hi"}]}`),
	}
	for name, body := range bodies {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := fp.New(sse(upstream...))
			defer srv.Close()
			ex := do(t, New(nil, ToolArgValidation()), context.Background(), srv.URL+"/v1/chat/completions", body)
			content, finishes := chatFinishChunks(t, ex.body)
			if content != "Hello world" || len(finishes) != 1 || finishes[0] != "stop" {
				t.Errorf("the client reads content %q and finish reasons %q, want \"Hello world\" and [stop]:\n%s", content, finishes, ex.body)
			}
		})
	}
}

// The stacks a streamed answer goes through in these tests: one stage, and
// stages nested.
func endStacks() map[string]func() *Transport {
	zero := guard.WithBackOff(func() backoff.BackOff { return &backoff.ZeroBackOff{} })
	return map[string]func() *Transport{
		"validation": func() *Transport { return New(nil, ToolArgValidation()) },
		"limit+validation+retry": func() *Transport {
			return New(nil, ToolCallLimit(guard.WithRunLimit(5)), ToolArgValidation(), ModelRetry(zero))
		},
	}
}

// A streamed answer reaches the client with its end: the stop reason and
// the usage the provider sent (Chat's finish chunk and usage chunk,
// Anthropic's message_delta, Responses' response.completed, Gemini's last
// chunk, which also carries the last text), in every protocol and stack,
// for an answer without tool calls (which a stage hands on as it is) and
// one with a valid call. The client assembles what it would have
// assembled without the transport.
func TestStreamAnswerKeepsItsEnd(t *testing.T) {
	t.Parallel()
	answers := map[string]func() fp.Step{
		"text": func() fp.Step { return fp.Reply(fp.Text("Hello world")).WithUsage(3, 2) },
		"call": func() fp.Step {
			return fp.Reply(fp.Text("Let me check."), fp.Call("get_weather", `{"city":"Paris"}`)).WithUsage(3, 9)
		},
	}
	for _, c := range wireCases(t) {
		if !c.stream {
			continue
		}
		for answer, step := range answers {
			for stack, tr := range endStacks() {
				t.Run(c.name+"/"+answer+"/"+stack, func(t *testing.T) {
					t.Parallel()
					direct, guarded := fp.New(step()), fp.New(step())
					defer direct.Close()
					defer guarded.Close()
					want := clientRead(t, c, do(t, http.DefaultTransport, context.Background(), direct.URL+c.url, c.body))
					ex := do(t, tr(), context.Background(), guarded.URL+c.url, c.body)
					got := clientRead(t, c, ex)
					if !sameJSON(got, want) {
						t.Errorf("the client assembles\n%s\nwant, as without the transport,\n%s\nfrom\n%s", got, want, ex.body)
					}
					if f, w := c.w.finish(got), c.w.finish(want); strings.Join(f, ",") != strings.Join(w, ",") || len(w) == 0 {
						t.Errorf("stop reasons %q, want %q", f, w)
					}
					if u, w := usageOf(t, c.w, got), usageOf(t, c.w, want); u != w || !w.Reported {
						t.Errorf("usage %+v, want %+v", u, w)
					}
				})
			}
		}
	}
}

func usageOf(t *testing.T, w wireProtocol, resp []byte) wireUsage {
	t.Helper()
	u, err := w.usage(resp)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// A chunk may carry a tool call's last fragment and the finish_reason
// together (OpenAI-compatible servers do). The client reads the first
// attempt's text once, the corrected call whole, and one finish_reason,
// "tool_calls"; the rejected call never.
func TestChatFinishWithLastToolCallPart(t *testing.T) {
	t.Parallel()
	chunk := func(delta, finish string) string {
		return `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + finish + `}]}`
	}
	attempt := func(args string) fp.Step {
		return sse(
			chunk(`{"role":"assistant","content":"Let me check."}`, `null`),
			chunk(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\": "}}]}`, `null`),
			chunk(`{"tool_calls":[{"index":0,"function":{"arguments":`+marshalQuoted(args)+`}}]}`, `"tool_calls"`),
			`data: [DONE]`)
	}
	srv := fp.New(attempt(`42}`), attempt(`"Paris"}`))
	defer srv.Close()
	body := fixture(t, "openai-chat", "stream-request.json")
	ex := do(t, New(nil, ToolArgValidation()), context.Background(), srv.URL+"/v1/chat/completions", body)
	content, finishes := chatFinishChunks(t, ex.body)
	got := assemble(t, chatWire{}, events(t, ex.body))
	calls := callsOf(t, chatWire{}, got)
	if content != "Let me check." || len(finishes) != 1 || finishes[0] != "tool_calls" ||
		len(calls) != 1 || !sameJSON(calls[0].Args, []byte(`{"city":"Paris"}`)) {
		t.Errorf("the client reads content %q, finish reasons %q, calls %+v; want the text once, [tool_calls] and the corrected call:\n%s", content, finishes, calls, ex.body)
	}
	if strings.Contains(string(ex.body), "42") {
		t.Errorf("the client read the rejected call:\n%s", ex.body)
	}
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("%d upstream requests, want 2", n)
	}
}

// marshalQuoted is s as a JSON string.
func marshalQuoted(s string) string { return string(marshalString(s)) }

// A re-ask answered in text: the stage hands the second answer on as it
// is. The client reads the first attempt's text, then the answer's, and
// the answer's end (stop reason, usage); never the rejected call.
func TestStreamReaskAnsweredInText(t *testing.T) {
	t.Parallel()
	for _, c := range wireCases(t) {
		if !c.stream {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv := fp.New(
				fp.Reply(fp.Text("Let me check."), fp.Call("get_weather", `{"city": 42}`)).WithUsage(3, 9),
				fp.Reply(fp.Text("I cannot tell.")).WithUsage(30, 4))
			defer srv.Close()
			ex := do(t, New(nil, ToolArgValidation()), context.Background(), srv.URL+c.url, c.body)
			got := clientRead(t, c, ex)
			if calls := callsOf(t, c.w, got); len(calls) != 0 || strings.Contains(string(ex.body), "42") {
				t.Errorf("the client reads calls %+v:\n%s", calls, ex.body)
			}
			if txt := guardText(t, c, got); txt != "Let me check.I cannot tell." {
				t.Errorf("the client reads the text %q, want the first attempt's then the answer's", txt)
			}
			if f := c.w.finish(got); len(f) != 1 || (f[0] != "stop" && f[0] != "end_turn" && f[0] != "STOP" && f[0] != "completed") {
				t.Errorf("stop reasons %q, want the answer's", f)
			}
			if u := usageOf(t, c.w, got); u.OutputTokens != 4 {
				t.Errorf("usage %+v, want the answer's (4 output tokens)", u)
			}
		})
	}
}
