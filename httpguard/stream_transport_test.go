package httpguard

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/toolguard/toolguard/guard"
	fp "github.com/toolguard/toolguard/httpguard/fakeprovider"
	"go.uber.org/goleak"
)

// sse answers with the raw server-sent events given.
func sse(events ...string) fp.Step {
	return fp.Handle(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, ev := range events {
			fmt.Fprintf(w, "%s\n\n", ev)
			w.(http.Flusher).Flush()
		}
	})
}

func chatChunkEvent(delta string) string {
	return `data: {"id":"chatcmpl-up","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":` + delta + `,"finish_reason":null}]}`
}

// An upstream stream that fails after a held tool-call part reached
// nothing of the client: ModelRetry makes the request again, and the
// client reads one well-formed stream, the retried one's.
func TestStreamRetriedWhenNothingReachedTheClient(t *testing.T) {
	t.Parallel()
	srv := fp.New(
		sse(chatChunkEvent(`{"role":"assistant","content":""}`),
			chatChunkEvent(`{"tool_calls":[{"index":0,"id":"call_x","type":"function","function":{"name":"get_weather","arguments":"{\"ci"}}]}`),
			`data: {"error":{"message":"The server had an error while processing your request.","type":"server_error"}}`),
		fp.Reply(fp.Text("Let me check."), fp.Call("get_weather", `{"city": "Paris"}`)))
	defer srv.Close()
	c := wireCases(t)[1] // openai-chat/stream
	tr := New(nil, ToolArgValidation(), ModelRetry(guard.WithBackOff(func() backoff.BackOff { return &backoff.ZeroBackOff{} })))
	ex := do(t, tr, context.Background(), srv.URL+c.url, c.body)
	got := clientRead(t, c, ex)
	calls := callsOf(t, c.w, got)
	if len(calls) != 1 || !sameJSON(calls[0].Args, []byte(`{"city":"Paris"}`)) || guardText(t, c, got) != "Let me check." {
		t.Errorf("the client reads %+v %q:\n%s", calls, guardText(t, c, got), ex.body)
	}
	if strings.Contains(string(ex.body), "call_x") || strings.Contains(string(ex.body), "server_error") {
		t.Errorf("the client read the failed stream:\n%s", ex.body)
	}
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("%d upstream requests, want 2", n)
	}
}

// An upstream stream that fails after its text reached the client is not
// retried: the client reads the text and the provider's error event as it
// came.
func TestStreamNotRetriedAfterText(t *testing.T) {
	t.Parallel()
	errEvent := `data: {"error":{"message":"The server had an error while processing your request.","type":"server_error"}}`
	srv := fp.New(sse(chatChunkEvent(`{"role":"assistant","content":""}`), chatChunkEvent(`{"content":"Let me"}`), errEvent),
		fp.Reply(fp.Text("never")))
	defer srv.Close()
	c := wireCases(t)[1]
	tr := New(nil, ToolArgValidation(), ModelRetry(guard.WithBackOff(func() backoff.BackOff { return &backoff.ZeroBackOff{} })))
	ex := do(t, tr, context.Background(), srv.URL+c.url, c.body)
	evs := events(t, ex.body)
	if len(evs) != 3 || !strings.Contains(string(evs[1].Data), "Let me") || "data: "+string(evs[2].Data) != errEvent {
		t.Errorf("the client reads\n%s\nwant the text, then the upstream's error event", ex.body)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("%d upstream requests, want 1", n)
	}
}

// A client that closes a stream's body part-way stops the call: the
// upstream request is cancelled and no goroutine is left behind.
func TestStreamClientCloses(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	cancelled := make(chan struct{})
	srv := fp.New(fp.Handle(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "%s\n\n%s\n\n", chatChunkEvent(`{"role":"assistant","content":""}`), chatChunkEvent(`{"content":"Once upon a time"}`))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		close(cancelled)
	}))
	defer srv.Close()
	c := wireCases(t)[1]
	req, _ := http.NewRequest(http.MethodPost, srv.URL+c.url, bytes.NewReader(c.body))
	resp, err := (&http.Client{Transport: New(nil, ToolArgValidation())}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	if _, err := io.ReadAtLeast(resp.Body, buf, 10); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	select {
	case <-cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("the upstream request was not cancelled after the client closed the body")
	}
	srv.Close()
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()
}

// Bodies past MaxBody cannot be guarded. A request past it passes through
// untouched, reported at Warn (its answer's calls are not guarded). An
// answer past it is refused under fail closed (502 response_unguardable,
// x-should-retry: false) and passes untouched under fail open, with an
// unguarded event every time (logged at Warn without a handler).
func TestBodiesPastTheBound(t *testing.T) {
	log := captureLog(t)
	pad := strings.Repeat("x", MaxBody)
	var got []byte
	bigAnswer := `{"id":"chatcmpl-big","object":"chat.completion","created":1,"model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"` + pad +
		`","tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\": 42}"}}]},"finish_reason":"tool_calls"}]}`
	// fakeprovider refuses bodies past 8 MiB: a plain server instead.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, bigAnswer)
	}))
	defer srv.Close()
	open := New(nil, ToolArgValidation())
	big := []byte(`{"model":"gpt-4o","messages":[{"role":"user","content":"` + pad + `"}],"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}]}`)
	ex := do(t, open, context.Background(), srv.URL+"/v1/chat/completions", big)
	if !bytes.Equal(got, big) {
		t.Errorf("the provider got %d bytes, want the client's %d", len(got), len(big))
	}
	if ex.resp.StatusCode != 200 || string(ex.body) != bigAnswer {
		t.Errorf("the client got %d, %d bytes, want the answer untouched", ex.resp.StatusCode, len(ex.body))
	}
	c := wireCases(t)[0]
	for i := range 2 {
		ex = do(t, open, context.Background(), srv.URL+c.url, c.body)
		if ex.resp.StatusCode != 200 || string(ex.body) != bigAnswer {
			t.Errorf("a large answer failing open (%d): %d, %d bytes, want it untouched", i+1, ex.resp.StatusCode, len(ex.body))
		}
	}
	out := log.String()
	if !strings.Contains(out, "request body is larger than MaxBody") || strings.Count(out, "response body is larger than MaxBody") != 2 || !strings.Contains(out, "toolguard: unguarded") {
		t.Errorf("log, want the large request once and an unguarded event per large answer:\n%s", out)
	}
	closed := New(nil, ToolArgValidation(guard.WithFailClosed()))
	ex = do(t, closed, context.Background(), srv.URL+c.url, c.body)
	if ex.resp.StatusCode != http.StatusBadGateway || ex.resp.Header.Get("X-Should-Retry") != "false" ||
		!strings.Contains(string(ex.body), responseUnguardable) || !strings.Contains(string(ex.body), "larger than MaxBody") {
		t.Errorf("a large answer failing closed: %d %q %s, want 502 response_unguardable naming the bound, x-should-retry: false",
			ex.resp.StatusCode, ex.resp.Header.Get("X-Should-Retry"), ex.body)
	}
}

// A stream whose held part passes MaxBody before anything reached the
// client cannot be guarded (an event past the bound: Gemini's one call
// chunk; events that add up past it: the others' argument fragments). The
// client gets an HTTP error response it reads as the provider's, not a
// transport error its SDK would retry as a dropped connection: 502 in the
// protocol's error shape, type response_too_large, x-should-retry: false;
// ModelRetry does not repeat it.
func TestStreamPastTheBoundBeforeCommit(t *testing.T) {
	t.Parallel()
	big := `{"city":"` + strings.Repeat("x", MaxBody+1) + `"}`
	for _, c := range wireCases(t) {
		if !c.stream {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv := fp.New(fp.Reply(fp.Call("get_weather", big)), fp.Reply(fp.Text("never")))
			defer srv.Close()
			tr := New(nil, ToolArgValidation(), ModelRetry(guard.WithBackOff(func() backoff.BackOff { return &backoff.ZeroBackOff{} })))
			req, _ := http.NewRequest(http.MethodPost, srv.URL+c.url, bytes.NewReader(c.body))
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatalf("RoundTrip returned the error %v, want an HTTP error response", err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			typ, _ := errorType(t, c.w, b)
			if resp.StatusCode != http.StatusBadGateway || resp.Header.Get("X-Should-Retry") != "false" || typ != "response_too_large" {
				t.Errorf("the client got %d (x-should-retry %q), type %q: %.300s; want 502, false, response_too_large", resp.StatusCode, resp.Header.Get("X-Should-Retry"), typ, b)
			}
			if n := len(srv.Requests()); n != 1 {
				t.Errorf("%d upstream requests, want 1", n)
			}
		})
	}
}

// Once text reached the client, the same stream ends with an error event
// of type response_too_large (the error event's shape per protocol is
// TestFailClosedAnswers422's).
func TestStreamPastTheBoundAfterCommit(t *testing.T) {
	t.Parallel()
	big := `{"city":"` + strings.Repeat("x", MaxBody+1) + `"}`
	c := wireCases(t)[1] // openai-chat/stream
	srv := fp.New(fp.Reply(fp.Text("Let me check."), fp.Call("get_weather", big)))
	defer srv.Close()
	ex := do(t, New(nil, ToolArgValidation()), context.Background(), srv.URL+c.url, c.body)
	evs := events(t, ex.body)
	last := evs[len(evs)-1]
	if ex.resp.StatusCode != http.StatusOK || !strings.Contains(string(last.Data), `"type":"response_too_large"`) ||
		!strings.Contains(string(ex.body), "Let m") {
		t.Errorf("status %d; the stream ends with %.300s, want the text, then an error event of type response_too_large", ex.resp.StatusCode, last.Data)
	}
}
