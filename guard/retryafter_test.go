package guard_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/retry"
)

// httpReply is one scripted HTTP answer of a loopback provider.
type httpReply struct {
	status int // 0: close the connection without answering
	header map[string]string
	body   string
}

// scriptedServer answers each request with the next reply and counts them.
func scriptedServer(t *testing.T, replies ...httpReply) (*httptest.Server, func() int) {
	t.Helper()
	var mu sync.Mutex
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		defer mu.Unlock()
		if n >= len(replies) {
			http.Error(w, `{"error":{"message":"script exhausted"}}`, http.StatusBadRequest)
			return
		}
		rep := replies[n]
		n++
		if rep.status == 0 { // drop the connection: a transport error, no response
			if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
				conn.Close()
			}
			return
		}
		for k, v := range rep.header {
			w.Header().Set(k, v)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rep.status)
		_, _ = io.WriteString(w, rep.body)
	}))
	t.Cleanup(srv.Close)
	return srv, func() int { mu.Lock(); defer mu.Unlock(); return n }
}

// The bodies carry no hint: only the headers say how long to wait.
const (
	openAI429 = `{"error":{"message":"Rate limit reached for requests","type":"requests","code":"rate_limit_exceeded"}}`
	openAIOK  = `{"choices":[{"message":{"role":"assistant","content":"Sunny."}}]}`
)

// httpStep is a model step that posts to srv with hc, as a provider client
// does, on the attempt's context: a status other than 200 is an error that
// names it (the body's text, no hint), a 200 the answer "Sunny.".
func httpStep(srv *httptest.Server, hc *http.Client) step {
	return func(ctx context.Context, _ *script, _ *tReq) (*tResp, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/v1/chat/completions", nil)
		if err != nil {
			return nil, err
		}
		res, err := hc.Do(req)
		if err != nil {
			return nil, err
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		if res.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("API returned unexpected status code: %d: %s", res.StatusCode, body)
		}
		return &tResp{Text: "Sunny."}, nil
	}
}

// recordWaits returns a ModelRetry sleep that records each wait and returns
// at once.
func recordWaits() (guard.RetryOption, func() []time.Duration) {
	var s sleepRecorder
	return guard.WithSleep(s.sleep), s.recorded
}

// TestRetryAfterHeaderPastDeadline: when the header (recorded by
// retry.HTTPClient) asks for a wait that would end after the caller's
// deadline, ModelRetry gives up at once rather than sleep in vain.
// (Package middleware sends the header through langchaingo's real clients.)
func TestRetryAfterHeaderPastDeadline(t *testing.T) {
	t.Parallel()
	srv, requests := scriptedServer(t,
		httpReply{status: http.StatusTooManyRequests, header: map[string]string{"Retry-After": "30"}, body: openAI429},
		httpReply{status: http.StatusOK, body: openAIOK})
	sleep, waits := recordWaits()
	hc := retry.HTTPClient(srv.Client())
	guarded := wrap(newScript(httpStep(srv, hc), httpStep(srv, hc)), modelRetry(sleep))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := guarded(ctx, &tReq{Msgs: []msg{{Role: roleUser, Text: "Weather?"}}})
	var re *retry.Error
	if !errors.As(err, &re) || re.Attempts != 1 {
		t.Fatalf("call = %v, want a *retry.Error after 1 attempt", err)
	}
	if w := waits(); len(w) != 0 || requests() != 1 {
		t.Errorf("ModelRetry waited %v and made %d requests, want no wait and 1 request", w, requests())
	}
}

// TestRetryAfterHeaderPerAttempt: each attempt gets its own hint, so a
// header of the first failure does not stretch the wait after the second,
// a dropped connection that records nothing.
func TestRetryAfterHeaderPerAttempt(t *testing.T) {
	t.Parallel()
	srv, requests := scriptedServer(t,
		httpReply{status: http.StatusTooManyRequests, header: map[string]string{"Retry-After": "7"}, body: openAI429},
		httpReply{status: 0},
		httpReply{status: http.StatusOK, body: openAIOK})
	sleep, waits := recordWaits()
	hc := retry.HTTPClient(srv.Client())
	guarded := wrap(newScript(httpStep(srv, hc), httpStep(srv, hc), httpStep(srv, hc)), modelRetry(sleep))
	if _, err := guarded(context.Background(), &tReq{Msgs: []msg{{Role: roleUser, Text: "Weather?"}}}); err != nil {
		t.Fatalf("call = %v, want the answer after two retries", err)
	}
	w := waits()
	if len(w) != 2 || requests() != 3 {
		t.Fatalf("waits %v over %d requests, want 2 waits over 3 requests", w, requests())
	}
	if w[0] != 7*time.Second {
		t.Errorf("first wait = %v, want the header's 7s", w[0])
	}
	if w[1] < 1500*time.Millisecond || w[1] > 2500*time.Millisecond {
		t.Errorf("second wait = %v, want the backoff's 2s ±25%%, not the first attempt's header", w[1])
	}
}
