package httpguard

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/toolguard/toolguard/guard"
	fp "github.com/toolguard/toolguard/httpguard/fakeprovider"
)

// errorType reads the error type of a protocol's error body.
func errorType(t *testing.T, w wireProtocol, b []byte) (typ, msg string) {
	t.Helper()
	var r struct {
		Error struct {
			Type, Message, Status string
			Code                  json.RawMessage
			Details               []struct{ Reason string }
		}
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("error body is not JSON: %v\n%s", err, b)
	}
	switch w.(type) {
	case geminiWire:
		if len(r.Error.Details) == 0 {
			t.Fatalf("no ErrorInfo: %s", b)
		}
		return strings.ToLower(r.Error.Details[0].Reason), r.Error.Message
	case responsesWire:
		var code string
		_ = json.Unmarshal(r.Error.Code, &code)
		return code, r.Error.Message
	}
	return r.Error.Type, r.Error.Message
}

// Failing closed answers as the provider refuses a request: HTTP 422 in the
// protocol's error shape, x-should-retry: false, never a transport error.
// A stream refused before any of it reached the client is refused the same
// way; one whose text already went out ends with the protocol's error
// event.
func TestFailClosedAnswers422(t *testing.T) {
	t.Parallel()
	bad := fp.Reply(fp.Call("get_weather", `{"city": 42}`))
	for _, c := range wireCases(t) {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv := fp.New(bad, bad)
			defer srv.Close()
			tr := New(nil, ToolArgValidation(guard.WithMaxRetries(1), guard.WithFailClosed()))
			ex := do(t, tr, context.Background(), srv.URL+c.url, c.body)
			if ex.resp.StatusCode != http.StatusUnprocessableEntity || ex.resp.Header.Get("X-Should-Retry") != "false" {
				t.Fatalf("answer %d (x-should-retry %q), want 422 and false:\n%s", ex.resp.StatusCode, ex.resp.Header.Get("X-Should-Retry"), ex.body)
			}
			typ, msg := errorType(t, c.w, ex.body)
			if typ != "invalid_tool_calls" || !strings.Contains(msg, "/city") {
				t.Errorf("error %q %q, want invalid_tool_calls naming /city", typ, msg)
			}
			if n := len(srv.Requests()); n != 2 {
				t.Errorf("%d upstream requests, want 2", n)
			}
		})
	}
	t.Run("text streamed first", func(t *testing.T) {
		t.Parallel()
		withText := fp.Reply(fp.Text("Let me check."), fp.Call("get_weather", `{"city": 42}`))
		for _, c := range wireCases(t) {
			if !c.stream {
				continue
			}
			srv := fp.New(withText, withText)
			tr := New(nil, ToolArgValidation(guard.WithMaxRetries(1), guard.WithFailClosed()))
			ex := do(t, tr, context.Background(), srv.URL+c.url, c.body)
			srv.Close()
			if ex.resp.StatusCode != http.StatusOK {
				t.Fatalf("%s: status %d", c.name, ex.resp.StatusCode)
			}
			evs := events(t, ex.body)
			last := evs[len(evs)-1]
			if c.dir == "openai-responses" {
				last = evs[len(evs)-2] // error, then response.failed
			}
			if !strings.Contains(strings.ToLower(string(last.Data)), "invalid_tool_calls") || !strings.Contains(string(last.Data), "/city") {
				t.Errorf("%s: the stream ends with %s, want the guard's error event", c.name, last.Data)
			}
			if strings.Contains(string(ex.body), `get_weather","arguments`) || strings.Contains(string(ex.body), `"input_json_delta"`) {
				t.Errorf("%s: the client read a refused call:\n%s", c.name, ex.body)
			}
		}
	})
}

// The limits' exits at the wire: ExitEnd answers with a well-formed
// response of the protocol whose text names the limit, sync and streamed;
// ExitError with the 422.
func TestLimitExits(t *testing.T) {
	t.Parallel()
	two := fp.Reply(fp.Call("get_weather", `{"city": "Paris"}`), fp.Call("get_weather", `{"city": "Rome"}`))
	for _, c := range wireCases(t) {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv := fp.New(two, two)
			defer srv.Close()
			ctx := guard.WithRun(context.Background())
			end := do(t, New(nil, ToolCallLimit(guard.WithRunLimit(1), guard.WithExitBehavior(guard.ExitEnd))), ctx, srv.URL+c.url, c.body)
			got := clientRead(t, c, end)
			if calls := callsOf(t, c.w, got); len(calls) != 0 {
				t.Errorf("the client reads calls %+v, want none", calls)
			}
			if text := guardText(t, c, got); !strings.Contains(text, "Tool call limit reached") || !strings.Contains(text, "run limit") {
				t.Errorf("the client reads %q, want the limit named", text)
			}
			ex := do(t, New(nil, ToolCallLimit(guard.WithRunLimit(1), guard.WithExitBehavior(guard.ExitError))), ctx, srv.URL+c.url, c.body)
			if ex.resp.StatusCode != http.StatusUnprocessableEntity {
				t.Fatalf("ExitError: %d %s", ex.resp.StatusCode, ex.body)
			}
			if typ, _ := errorType(t, c.w, ex.body); typ != "tool_call_limit_exceeded" {
				t.Errorf("ExitError type %q", typ)
			}
		})
	}
}

// ModelCallLimit's stand-in before any upstream request: the client reads
// a whole answer (a whole stream, for a streaming request) that names the
// limit, and the provider is not called.
func TestModelCallLimitStandIn(t *testing.T) {
	t.Parallel()
	for _, c := range wireCases(t) {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv := fp.New(fp.Reply(fp.Text("hi")))
			defer srv.Close()
			tr := New(nil, ModelCallLimit(guard.WithRunLimit(1)))
			ctx := guard.WithRun(context.Background())
			clientRead(t, c, do(t, tr, ctx, srv.URL+c.url, c.body))
			got := clientRead(t, c, do(t, tr, ctx, srv.URL+c.url, c.body))
			if text := guardText(t, c, got); !strings.Contains(text, "limit") {
				t.Errorf("the client reads %q, want the limit named", text)
			}
			if n := len(srv.Requests()); n != 1 {
				t.Errorf("%d upstream requests, want 1", n)
			}
		})
	}
}

// ModelRetry at the wire: a 429 is retried after the wait its
// retry-after-ms asks for, a 529 after its Retry-After, a 503 as the policy
// says; when it gives up, the client receives the provider's last answer
// as it came.
func TestModelRetryAtTheWire(t *testing.T) {
	t.Parallel()
	for _, c := range wireCases(t) {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv := fp.New(fp.Error(429, "retry-after-ms", "1500"), fp.Error(529, "Retry-After", "2"), fp.Error(503), fp.Reply(fp.Text("Hello.")))
			defer srv.Close()
			var waits []time.Duration
			tr := New(nil, ModelRetry(guard.WithMaxRetries(3), guard.WithBackOff(func() backoff.BackOff { return &backoff.ZeroBackOff{} }),
				guard.WithSleep(func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil })))
			got := clientRead(t, c, do(t, tr, context.Background(), srv.URL+c.url, c.body))
			if text := guardText(t, c, got); text != "Hello." {
				t.Errorf("text %q", text)
			}
			if len(waits) != 3 || waits[0] != 1500*time.Millisecond || waits[1] != 2*time.Second || waits[2] != 0 {
				t.Errorf("waits %v, want [1.5s 2s 0s]: the 429's retry-after-ms, the 529's Retry-After, then the policy's", waits)
			}

			// Given up: the last 503 as the provider sent it.
			up := fp.New(fp.Error(503, "X-Request-Id", "req_3"), fp.Error(503, "X-Request-Id", "req_3"), fp.Error(503, "X-Request-Id", "req_3"))
			direct := fp.New(fp.Error(503, "X-Request-Id", "req_3"))
			defer up.Close()
			defer direct.Close()
			tr = New(nil, ModelRetry(guard.WithBackOff(func() backoff.BackOff { return &backoff.ZeroBackOff{} })))
			ex := do(t, tr, context.Background(), up.URL+c.url, c.body)
			want := do(t, http.DefaultTransport, context.Background(), direct.URL+c.url, c.body)
			if ex.resp.StatusCode != 503 || string(ex.body) != string(want.body) || ex.resp.Header.Get("X-Request-Id") != "req_3" ||
				ex.resp.Header.Get("Content-Type") != want.resp.Header.Get("Content-Type") {
				t.Errorf("given up: %d %v\n%s\nwant %d %v\n%s", ex.resp.StatusCode, ex.resp.Header, ex.body, want.resp.StatusCode, want.resp.Header, want.body)
			}
			if n := len(up.Requests()); n != 3 {
				t.Errorf("%d attempts, want 3", n)
			}
		})
	}
}

// A 4xx that is not worth retrying (a bad request) is not retried, and
// reaches the client as it came; x-should-retry: false stops a retry of a
// 5xx as it stops the SDKs'.
func TestModelRetryHonoursTheProvider(t *testing.T) {
	t.Parallel()
	c := wireCases(t)[0]
	srv := fp.New(fp.Error(400), fp.Error(500, "x-should-retry", "false"), fp.Reply(fp.Text("never")))
	defer srv.Close()
	tr := New(nil, ModelRetry(guard.WithBackOff(func() backoff.BackOff { return &backoff.ZeroBackOff{} })))
	if ex := do(t, tr, context.Background(), srv.URL+c.url, c.body); ex.resp.StatusCode != 400 {
		t.Errorf("400: got %d", ex.resp.StatusCode)
	}
	if ex := do(t, tr, context.Background(), srv.URL+c.url, c.body); ex.resp.StatusCode != 500 {
		t.Errorf("500 with x-should-retry false: got %d", ex.resp.StatusCode)
	}
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("%d requests, want 2 (no retry)", n)
	}
}
