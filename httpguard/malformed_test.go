package httpguard

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/toolguard/toolguard/guard"
	fp "github.com/toolguard/toolguard/httpguard/fakeprovider"
)

// providerMalformed is the event of a call the provider refused.
const providerMalformed = guard.EventProviderMalformed

// kindLog records the kinds of the events a stage reports, from whichever
// goroutine runs the call.
type kindLog struct {
	mu    sync.Mutex
	kinds []guard.EventKind
}

func (l *kindLog) handler() guard.Option {
	return guard.WithEventHandler(func(_ context.Context, e guard.Event) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.kinds = append(l.kinds, e.Kind)
	})
}

// count returns how many events of each kind were reported.
func (l *kindLog) count() map[guard.EventKind]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[guard.EventKind]int{}
	for _, k := range l.kinds {
		out[k]++
	}
	return out
}

// messagesOf returns the messages (Chat) or contents (Gemini) of a request
// body, each as raw JSON.
func messagesOf(t *testing.T, body []byte, key string) []json.RawMessage {
	t.Helper()
	var r map[string]json.RawMessage
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("request is not a JSON object: %v\n%s", err, body)
	}
	var ms []json.RawMessage
	if err := json.Unmarshal(r[key], &ms); err != nil {
		t.Fatalf("request %s: %v\n%s", key, err, body)
	}
	return ms
}

// sameExceptMessages fails unless re-ask is orig with only its key member
// changed.
func sameExceptMessages(t *testing.T, orig, reask []byte, key string) {
	t.Helper()
	var o, r map[string]json.RawMessage
	if json.Unmarshal(orig, &o) != nil || json.Unmarshal(reask, &r) != nil {
		t.Fatal("bodies are not JSON objects")
	}
	if len(o) != len(r) {
		t.Errorf("the re-ask has members %d, the original %d:\n%s", len(r), len(o), reask)
	}
	for k, v := range o {
		if k != key && !bytes.Equal(v, r[k]) {
			t.Errorf("the re-ask changed %q: %s, want %s", k, r[k], v)
		}
	}
}

// A Groq-style refusal (400, code tool_use_failed) is re-asked: the provider
// reads the model's failed text as its turn and the feedback as the user's,
// and the client reads the corrected call, never the 400. Ollama's 500
// "error parsing tool call" is the same refusal in another shape.
func TestChatProviderMalformedReasked(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, fixture string
		status        int
		generation    string // the assistant turn of the re-ask; "" for none
		said          string // what the feedback quotes of the provider
	}{
		{"groq tool_use_failed", "groq-tool-use-failed.json", 400,
			`web_search{"query": "SPFMV and SPCSV in the Pearl Of Africa 2016", "filter_year": 2016}</function>`,
			`"Failed to call a function. Please adjust your prompt. See 'failed_generation' for more details."`},
		{"groq schema check without failed_generation", "groq-tool-validation-failed.json", 400, "",
			"tool call validation failed: parameters for tool HassTurnOff did not match schema: errors: [`/domain`: expected array, but got string]\""},
		{"ollama error parsing tool call", "ollama-error-parsing-tool-call.json", 500, `{"city":"Paris"]`,
			`"error parsing tool call: invalid character ']' after object key:value pair"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			refusal := fixture(t, "openai-chat", c.fixture)
			srv := fp.New(fp.Raw(c.status, string(refusal)),
				fp.Reply(fp.Call("get_weather", `{"city": "Paris"}`)))
			defer srv.Close()
			var log kindLog
			tr := New(nil, ToolArgValidation(log.handler()))
			body := fixture(t, "openai-chat", "request.json")
			ex := do(t, tr, context.Background(), srv.URL+"/v1/chat/completions", body, "Authorization", "Bearer sk-test")
			if ex.resp.StatusCode != http.StatusOK {
				t.Fatalf("the client got %d: %s", ex.resp.StatusCode, ex.body)
			}
			calls := callsOf(t, chatWire{}, ex.body)
			if len(calls) != 1 || !sameJSON(calls[0].Args, []byte(`{"city":"Paris"}`)) {
				t.Fatalf("the client reads %+v, want the corrected call", calls)
			}
			reqs := srv.Requests()
			if len(reqs) != 2 {
				t.Fatalf("the provider got %d requests, want 2", len(reqs))
			}
			t.Logf("re-ask the provider received:\n%s", reqs[1].Body)
			t.Logf("the client read (%d):\n%s", ex.resp.StatusCode, ex.body)
			sameExceptMessages(t, body, reqs[1].Body, "messages")
			msgs := messagesOf(t, reqs[1].Body, "messages")
			want := 3
			if c.generation == "" {
				want = 2
			}
			if len(msgs) != want {
				t.Fatalf("the re-ask has %d messages, want %d:\n%s", len(msgs), want, reqs[1].Body)
			}
			type message struct{ Role, Content string }
			var turns []message
			for _, m := range msgs[1:] {
				var x message
				json.Unmarshal(m, &x)
				turns = append(turns, x)
			}
			if c.generation != "" && (turns[0] != message{"assistant", c.generation}) {
				t.Errorf("the model's turn is %+v, want the failed generation %q", turns[0], c.generation)
			}
			fb := turns[len(turns)-1]
			if fb.Role != "user" || !strings.Contains(fb.Content, "could not read your tool call") ||
				!strings.Contains(fb.Content, "one JSON object matching the tool's schema") || !strings.Contains(fb.Content, c.said) {
				t.Errorf("the feedback turn is %+v, want the user's, saying why and quoting %s", fb, c.said)
			}
			t.Logf("events: %v", log.count())
			if n := log.count(); n[providerMalformed] != 1 || n[guard.EventReask] != 1 || n[guard.EventGiveUp] != 0 {
				t.Errorf("events %v, want one provider_malformed and one reask", n)
			}
		})
	}
}

// chatSSEStep answers a stream request with Groq's streamed refusal: a
// text chunk, then the error object as a data event.
func chatSSEStep(t *testing.T) fp.Step {
	stream := fixture(t, "openai-chat", "groq-tool-use-failed.sse")
	return fp.Handle(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write(stream)
	})
}

// Groq refuses a streaming request's malformed call with the error object
// as a data event of the stream: re-asked as the 400 is. The client reads
// the first attempt's text once and the corrected call, never the error.
func TestChatStreamProviderMalformedReasked(t *testing.T) {
	t.Parallel()
	srv := fp.New(chatSSEStep(t), fp.Reply(fp.Call("get_weather", `{"city": "Paris"}`)))
	defer srv.Close()
	var log kindLog
	tr := New(nil, ToolArgValidation(log.handler()))
	body := fixture(t, "openai-chat", "stream-request.json")
	ex := do(t, tr, context.Background(), srv.URL+"/v1/chat/completions", body)
	got := clientRead(t, wireCase{w: chatWire{}, stream: true}, ex)
	if calls := callsOf(t, chatWire{}, got); len(calls) != 1 || !sameJSON(calls[0].Args, []byte(`{"city":"Paris"}`)) {
		t.Fatalf("the client reads %+v, want the corrected call", calls)
	}
	if bytes.Contains(ex.body, []byte("tool_use_failed")) || strings.Count(string(ex.body), "Let me check.") != 1 {
		t.Errorf("the client read the refusal, or the text other than once:\n%s", ex.body)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("the provider got %d requests, want 2", len(reqs))
	}
	t.Logf("re-ask the provider received:\n%s", reqs[1].Body)
	t.Logf("the client read:\n%s", ex.body)
	sameExceptMessages(t, body, reqs[1].Body, "messages")
	msgs := messagesOf(t, reqs[1].Body, "messages")
	var turn struct{ Role, Content string }
	if len(msgs) != 3 || json.Unmarshal(msgs[1], &turn) != nil || turn.Role != "assistant" ||
		turn.Content != `<function=get_weather>{"city": 42}</function>` {
		t.Errorf("the re-ask's messages are %s, want the failed generation as the model's turn, then the feedback", msgs)
	}
	t.Logf("events: %v", log.count())
	if n := log.count(); n[providerMalformed] != 1 || n[guard.EventReask] != 1 || n[guard.EventGiveUp] != 0 {
		t.Errorf("events %v, want one provider_malformed and one reask", n)
	}
}

// A 400 that is not a refusal of a malformed call passes to the client as
// it came, unasked: status, body byte for byte, one upstream request.
func TestChatPlainErrorUntouched(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		status int
		body   string
	}{
		{"groq invalid request", 400, ""},
		{"tool_use_failed code at another status", 422, `{"error":{"message":"Failed to call a function.","type":"invalid_request_error","code":"tool_use_failed","failed_generation":"x"}}`},
		{"error parsing tool call at another status", 400, `{"error":{"message":"error parsing tool call: raw='x', err=y","type":"invalid_request_error","param":null,"code":null}}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			body := c.body
			if body == "" {
				body = string(fixture(t, "openai-chat", "groq-invalid-request.json"))
			}
			srv := fp.New(fp.Raw(c.status, body), fp.Reply(fp.Call("get_weather", `{"city": "Paris"}`)))
			defer srv.Close()
			var log kindLog
			tr := New(nil, ToolArgValidation(log.handler()))
			ex := do(t, tr, context.Background(), srv.URL+"/v1/chat/completions", fixture(t, "openai-chat", "request.json"))
			if ex.resp.StatusCode != c.status || string(ex.body) != body {
				t.Errorf("the client got %d:\n%s\nwant %d:\n%s", ex.resp.StatusCode, ex.body, c.status, body)
			}
			if n := len(srv.Requests()); n != 1 {
				t.Errorf("the provider got %d requests, want 1", n)
			}
			t.Logf("the client read (%d):\n%s\nevents: %v", ex.resp.StatusCode, ex.body, log.count())
			if n := log.count(); n[providerMalformed] != 0 || n[guard.EventReask] != 0 {
				t.Errorf("events %v, want none of a re-ask", n)
			}
		})
	}
}

// geminiSSEStep answers a stream request with the recorded malformed stream.
func geminiSSEStep(t *testing.T) fp.Step {
	stream := fixture(t, "gemini", "malformed-function-call.sse")
	return fp.Handle(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write(stream)
	})
}

// Gemini's finishReason MALFORMED_FUNCTION_CALL is re-asked, sync and
// streamed: the provider reads finishMessage's text as the model's turn and
// the feedback as the user's; the client reads the corrected call and
// never the malformed end.
func TestGeminiMalformedReasked(t *testing.T) {
	t.Parallel()
	for _, stream := range []bool{false, true} {
		name := "sync"
		if stream {
			name = "stream"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			first := fp.Raw(200, string(fixture(t, "gemini", "malformed-function-call.json")))
			url, body := "/v1beta/models/gemini-2.5-flash:generateContent", fixture(t, "gemini", "request.json")
			if stream {
				first = geminiSSEStep(t)
				url, body = "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", fixture(t, "gemini", "stream-request.json")
			}
			srv := fp.New(first, fp.Reply(fp.Call("get_weather", `{"city": "Paris"}`)))
			defer srv.Close()
			var log kindLog
			tr := New(nil, ToolArgValidation(log.handler()))
			ex := do(t, tr, context.Background(), srv.URL+url, body)
			c := wireCase{w: geminiWire{}, stream: stream}
			got := clientRead(t, c, ex)
			calls := callsOf(t, geminiWire{}, got)
			if len(calls) != 1 || !sameJSON(calls[0].Args, []byte(`{"city":"Paris"}`)) {
				t.Fatalf("the client reads %+v, want the corrected call", calls)
			}
			if bytes.Contains(ex.body, []byte(geminiMalformed)) || bytes.Contains(ex.body, []byte("city=42")) {
				t.Errorf("the client read the malformed attempt's end:\n%s", ex.body)
			}
			if stream && strings.Count(string(ex.body), "Let me check.") != 1 {
				t.Errorf("the client read the first attempt's text %d times, want once:\n%s", strings.Count(string(ex.body), "Let me check."), ex.body)
			}
			reqs := srv.Requests()
			if len(reqs) != 2 {
				t.Fatalf("the provider got %d requests, want 2", len(reqs))
			}
			t.Logf("re-ask the provider received (%s?%s):\n%s", reqs[1].Path, reqs[1].RawQuery, reqs[1].Body)
			t.Logf("the client read:\n%s", ex.body)
			if reqs[1].Path != reqs[0].Path || reqs[1].RawQuery != reqs[0].RawQuery {
				t.Errorf("the re-ask went to %s?%s, want %s?%s", reqs[1].Path, reqs[1].RawQuery, reqs[0].Path, reqs[0].RawQuery)
			}
			sameExceptMessages(t, body, reqs[1].Body, "contents")
			contents := messagesOf(t, reqs[1].Body, "contents")
			if len(contents) != 3 {
				t.Fatalf("the re-ask has %d contents, want 3:\n%s", len(contents), reqs[1].Body)
			}
			type content struct {
				Role  string
				Parts []struct{ Text string }
			}
			var model, user content
			json.Unmarshal(contents[1], &model)
			json.Unmarshal(contents[2], &user)
			if model.Role != "model" || len(model.Parts) != 1 || model.Parts[0].Text != "print(default_api.get_weather(city=42))" {
				t.Errorf("the model's turn is %s, want finishMessage's text", contents[1])
			}
			if user.Role != "user" || len(user.Parts) != 1 || !strings.Contains(user.Parts[0].Text, "could not read your tool call") ||
				!strings.Contains(user.Parts[0].Text, `"Malformed function call"`) {
				t.Errorf("the feedback turn is %s, want the user's, quoting the provider", contents[2])
			}
			t.Logf("events: %v", log.count())
			if n := log.count(); n[providerMalformed] != 1 || n[guard.EventReask] != 1 || n[guard.EventGiveUp] != 0 {
				t.Errorf("events %v, want one provider_malformed and one reask", n)
			}
		})
	}
}

// When the provider refuses the call on every attempt, the last refusal is
// handed on as it came (fail open, with a give-up) or refused as invalid
// calls are (fail closed): 422 invalid_tool_calls in the protocol's shape,
// or, once a stream began, its error event.
func TestProviderMalformedRetriesExhausted(t *testing.T) {
	t.Parallel()
	chatRefusal := func(t *testing.T) fp.Step {
		return fp.Raw(400, string(fixture(t, "openai-chat", "groq-tool-use-failed.json")))
	}
	geminiRefusal := func(t *testing.T) fp.Step {
		return fp.Raw(200, string(fixture(t, "gemini", "malformed-function-call.json")))
	}
	cases := []struct {
		name, url, dir, request string
		step                    func(*testing.T) fp.Step
		stream                  bool
	}{
		{"openai-chat", "/v1/chat/completions", "openai-chat", "request.json", chatRefusal, false},
		{"openai-chat/stream", "/v1/chat/completions", "openai-chat", "stream-request.json", chatRefusal, true},
		{"openai-chat/stream event", "/v1/chat/completions", "openai-chat", "stream-request.json", chatSSEStep, true},
		{"gemini", "/v1beta/models/gemini-2.5-flash:generateContent", "gemini", "request.json", geminiRefusal, false},
		{"gemini/stream", "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", "gemini", "stream-request.json", geminiSSEStep, true},
	}
	for _, c := range cases {
		for _, closed := range []bool{false, true} {
			name := c.name + "/open"
			if closed {
				name = c.name + "/closed"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				srv := fp.New(c.step(t), c.step(t))
				defer srv.Close()
				var log kindLog
				opts := []guard.ValidationOption{log.handler(), guard.WithMaxRetries(1)}
				if closed {
					opts = append(opts, guard.WithFailClosed())
				}
				tr := New(nil, ToolArgValidation(opts...))
				ex := do(t, tr, context.Background(), srv.URL+c.url, fixture(t, c.dir, c.request))
				if n := len(srv.Requests()); n != 2 {
					t.Errorf("the provider got %d requests, want 2", n)
				}
				t.Logf("events: %v", log.count())
				if n := log.count(); n[providerMalformed] != 2 || n[guard.EventReask] != 1 || n[guard.EventGiveUp] != 1 {
					t.Errorf("events %v, want provider_malformed twice, one reask, one give_up", n)
				}
				t.Logf("the client read (%d):\n%s", ex.resp.StatusCode, ex.body)
				began := c.stream && (c.dir == "gemini" || strings.HasSuffix(c.name, "event"))
				switch {
				case closed && began:
					// The first attempt's text reached the client: the
					// refusal is the stream's error event.
					if ex.resp.StatusCode != 200 || !bytes.Contains(bytes.ToLower(ex.body), []byte("invalid_tool_calls")) ||
						bytes.Contains(ex.body, []byte(geminiMalformed)) || bytes.Contains(ex.body, []byte("tool_use_failed")) {
						t.Errorf("the client read %d:\n%s\nwant the stream ended by an invalid_tool_calls error", ex.resp.StatusCode, ex.body)
					}
				case began && c.dir == "openai-chat":
					// The provider's error event, as it came, ends the
					// stream.
					evs := events(t, ex.body)
					want := bytes.TrimSpace(bytes.TrimPrefix(bytes.Split(fixture(t, "openai-chat", "groq-tool-use-failed.sse"), []byte("\n\n"))[1], []byte("data: ")))
					if ex.resp.StatusCode != 200 || len(evs) == 0 || !bytes.Equal(evs[len(evs)-1].Data, want) {
						t.Errorf("the client read %d:\n%s\nwant the stream ended by the provider's error event %s", ex.resp.StatusCode, ex.body, want)
					}
				case closed:
					if ex.resp.StatusCode != http.StatusUnprocessableEntity || ex.resp.Header.Get("X-Should-Retry") != "false" ||
						!bytes.Contains(bytes.ToLower(ex.body), []byte("invalid_tool_calls")) {
						t.Errorf("the client read %d %v:\n%s\nwant 422 invalid_tool_calls", ex.resp.StatusCode, ex.resp.Header, ex.body)
					}
				case began:
					// The first attempt's text as it came, then the last
					// attempt, which is the answer: its text and its
					// malformed end, as the provider sent them.
					got := assemble(t, geminiWire{}, events(t, ex.body))
					if fr := (geminiWire{}).finish(got); len(fr) != 1 || fr[0] != geminiMalformed ||
						strings.Count(string(ex.body), "Let me check.") != 2 || !bytes.Contains(got, []byte("city=42")) {
						t.Errorf("the client read:\n%s\nwant the last attempt's malformed end last", ex.body)
					}
				case c.dir == "gemini":
					want := fixture(t, "gemini", "malformed-function-call.json")
					if ex.resp.StatusCode != 200 || !bytes.Equal(ex.body, want) {
						t.Errorf("the client read %d:\n%s\nwant the provider's answer as it came:\n%s", ex.resp.StatusCode, ex.body, want)
					}
				default:
					want := fixture(t, "openai-chat", "groq-tool-use-failed.json")
					if ex.resp.StatusCode != 400 || !bytes.Equal(ex.body, want) {
						t.Errorf("the client read %d:\n%s\nwant the provider's 400 as it came:\n%s", ex.resp.StatusCode, ex.body, want)
					}
				}
			})
		}
	}
}

// The model's failed text is shown to it bounded: a failed_generation of
// 100 KiB costs the re-ask guard.MaxMalformedGeneration bytes of it.
func TestProviderMalformedGenerationBounded(t *testing.T) {
	t.Parallel()
	huge := strings.Repeat("é", 50<<10) // 100 KiB, two bytes a rune
	refusal, _ := json.Marshal(map[string]any{"error": map[string]any{
		"message": "Failed to parse tool call arguments as JSON", "type": "invalid_request_error",
		"code": "tool_use_failed", "failed_generation": huge}})
	srv := fp.New(fp.Raw(400, string(refusal)), fp.Reply(fp.Call("get_weather", `{"city": "Paris"}`)))
	defer srv.Close()
	tr := New(nil, ToolArgValidation())
	ex := do(t, tr, context.Background(), srv.URL+"/v1/chat/completions", fixture(t, "openai-chat", "request.json"))
	if ex.resp.StatusCode != 200 {
		t.Fatalf("the client got %d: %s", ex.resp.StatusCode, ex.body)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("the provider got %d requests, want 2", len(reqs))
	}
	var turn struct{ Role, Content string }
	msgs := messagesOf(t, reqs[1].Body, "messages")
	json.Unmarshal(msgs[1], &turn)
	if turn.Role != "assistant" || len(turn.Content) > guard.MaxMalformedGeneration+len("…") ||
		!strings.HasPrefix(huge, strings.TrimSuffix(turn.Content, "…")) || !strings.HasSuffix(turn.Content, "…") {
		t.Errorf("the model's turn holds %d bytes (%q…), want at most %d of the failed generation and an ellipsis",
			len(turn.Content), turn.Content[:min(len(turn.Content), 20)], guard.MaxMalformedGeneration)
	}
	if len(reqs[1].Body) > 8<<10 {
		t.Errorf("the re-ask is %d bytes", len(reqs[1].Body))
	}
}

// ModelRetry inside ToolArgValidation hands the 400 on at once (it is not
// retryable), and ToolArgValidation re-asks it all the same.
func TestProviderMalformedThroughModelRetry(t *testing.T) {
	t.Parallel()
	srv := fp.New(fp.Raw(400, string(fixture(t, "openai-chat", "groq-tool-use-failed.json"))),
		fp.Reply(fp.Call("get_weather", `{"city": "Paris"}`)))
	defer srv.Close()
	tr := New(nil, ToolArgValidation(), ModelRetry())
	ex := do(t, tr, context.Background(), srv.URL+"/v1/chat/completions", fixture(t, "openai-chat", "request.json"))
	if ex.resp.StatusCode != 200 || len(srv.Requests()) != 2 {
		t.Fatalf("the client got %d after %d requests: %s", ex.resp.StatusCode, len(srv.Requests()), ex.body)
	}
	if calls := callsOf(t, chatWire{}, ex.body); len(calls) != 1 || !sameJSON(calls[0].Args, []byte(`{"city":"Paris"}`)) {
		t.Errorf("the client reads %+v, want the corrected call", calls)
	}
}

// What each protocol reads as a refusal of a malformed call, and what it
// reads of it; everything else is not one.
func TestMalformedRefusals(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		read   func() (guard.Malformed, bool)
		want   guard.Malformed
		wantOK bool
	}{
		{"chat groq 400", func() (guard.Malformed, bool) {
			return chatWire{}.malformedError(400, []byte(`{"error":{"message":"m","code":"tool_use_failed","failed_generation":"g"}}`))
		}, guard.Malformed{Generation: "g", Message: "m"}, true},
		{"chat groq stream event", func() (guard.Malformed, bool) {
			return chatWire{}.malformedError(0, []byte(`{"error":{"message":"m","code":"tool_use_failed"}}`))
		}, guard.Malformed{Message: "m"}, true},
		{"chat groq other code", func() (guard.Malformed, bool) {
			return chatWire{}.malformedError(400, []byte(`{"error":{"message":"m","code":"invalid_request_error"}}`))
		}, guard.Malformed{}, false},
		{"chat code not a string", func() (guard.Malformed, bool) {
			return chatWire{}.malformedError(400, []byte(`{"error":{"message":"m","code":400}}`))
		}, guard.Malformed{}, false},
		{"chat not JSON", func() (guard.Malformed, bool) {
			return chatWire{}.malformedError(400, []byte(`tool_use_failed`))
		}, guard.Malformed{}, false},
		{"chat ollama", func() (guard.Malformed, bool) {
			return chatWire{}.malformedError(500, []byte(`{"error":{"message":"error parsing tool call: raw='{\"a\": 1', err=x', err=unexpected end of JSON input","type":"api_error"}}`))
		}, guard.Malformed{Generation: `{"a": 1', err=x`, Message: "error parsing tool call: unexpected end of JSON input"}, true},
		{"chat ollama without raw", func() (guard.Malformed, bool) {
			return chatWire{}.malformedError(500, []byte(`{"error":{"message":"error parsing tool call: something else"}}`))
		}, guard.Malformed{Message: "error parsing tool call: something else"}, true},
		{"chat ollama 500 of another message", func() (guard.Malformed, bool) {
			return chatWire{}.malformedError(500, []byte(`{"error":{"message":"model runner has unexpectedly stopped"}}`))
		}, guard.Malformed{}, false},
		{"gemini malformed", func() (guard.Malformed, bool) {
			return geminiWire{}.malformedResponse(fixture(t, "gemini", "malformed-function-call.json"))
		}, guard.Malformed{Generation: "print(default_api.get_weather(city=42))", Message: "Malformed function call"}, true},
		{"gemini malformed without message", func() (guard.Malformed, bool) {
			return geminiWire{}.malformedResponse([]byte(`{"candidates":[{"finishReason":"MALFORMED_FUNCTION_CALL","index":0}]}`))
		}, guard.Malformed{Message: "MALFORMED_FUNCTION_CALL"}, true},
		{"gemini malformed beside a call", func() (guard.Malformed, bool) {
			return geminiWire{}.malformedResponse([]byte(`{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"get_weather","args":{"city":"Paris"}}}]},"finishReason":"MALFORMED_FUNCTION_CALL","finishMessage":"Malformed function call: x"}]}`))
		}, guard.Malformed{Generation: "x", Message: "Malformed function call"}, true},
		{"gemini stop", func() (guard.Malformed, bool) {
			return geminiWire{}.malformedResponse(fixture(t, "gemini", "response.json"))
		}, guard.Malformed{}, false},
		{"gemini error status", func() (guard.Malformed, bool) {
			return geminiWire{}.malformedError(400, fixture(t, "gemini", "error.json"))
		}, guard.Malformed{}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got, ok := c.read()
			if ok != c.wantOK || got != c.want {
				t.Errorf("read %+v, %v; want %+v, %v", got, ok, c.want, c.wantOK)
			}
		})
	}
}

// The codec is no MalformedReader of a stand-in answer or of a protocol
// without such refusals (Anthropic's 400 passes as any error).
func TestMalformedNotRead(t *testing.T) {
	t.Parallel()
	gemini := &request{proto: geminiWire{}}
	stand := codec{}.End(gemini, "limit reached", nil)
	stand.body = fixture(t, "gemini", "malformed-function-call.json")
	if _, ok := (codec{}).Malformed(gemini, stand, nil); ok {
		t.Error("a stand-in answer was read as a refusal")
	}
	refusal := &UpstreamError{Response: &http.Response{StatusCode: 400}, Body: fixture(t, "openai-chat", "groq-tool-use-failed.json")}
	if _, ok := (codec{}).Malformed(&request{proto: messagesWire{}}, nil, refusal); ok {
		t.Error("an Anthropic request's 400 was read as Groq's refusal")
	}
	if _, ok := (codec{}).Malformed(&request{proto: chatWire{}}, nil, refusal); !ok {
		t.Error("a Chat request's Groq 400 was not read as a refusal")
	}
}
