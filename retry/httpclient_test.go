package retry_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/toolguard/toolguard/retry"
)

// hintServer answers every request with the status and Retry-After the
// query asks for: /?status=429&after=3.
func hintServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a := r.URL.Query().Get("after"); a != "" {
			w.Header().Set("Retry-After", a)
		}
		status, _ := strconv.Atoi(r.URL.Query().Get("status"))
		w.WriteHeader(status)
		_, _ = io.WriteString(w, "body")
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestHTTPClientRecordsHint(t *testing.T) {
	t.Parallel()
	srv := hintServer(t)
	client := retry.HTTPClient(srv.Client())
	tests := []struct {
		name   string
		query  []string // requests made in one attempt, in order
		want   time.Duration
		wantOK bool
	}{
		{"429", []string{"status=429&after=3"}, 3 * time.Second, true},
		{"503", []string{"status=503&after=2"}, 2 * time.Second, true},
		{"529 overloaded", []string{"status=529&after=4"}, 4 * time.Second, true},
		{"400 is not worth retrying", []string{"status=400&after=3"}, 0, false},
		{"501 is not worth retrying", []string{"status=501&after=3"}, 0, false},
		{"200 ignored", []string{"status=200&after=3"}, 0, false},
		{"429 without header", []string{"status=429"}, 0, false},
		{"the last failed response wins", []string{"status=429&after=3", "status=503&after=5"}, 5 * time.Second, true},
		{"a failed response without header clears", []string{"status=429&after=3", "status=503"}, 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, hint := retry.WithHeaderHint(context.Background())
			for _, q := range tc.query {
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/?"+q, nil)
				if err != nil {
					t.Fatal(err)
				}
				resp, err := client.Do(req)
				if err != nil {
					t.Fatalf("Do(%q) = %v, want the response passed on", q, err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if string(body) != "body" {
					t.Errorf("Do(%q) body = %q, want %q: the response must be passed on unchanged", q, body, "body")
				}
			}
			got, ok := hint.After()
			if got != tc.want || ok != tc.wantOK {
				t.Errorf("After() after %v = %v, %v, want %v, %v", tc.query, got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

func TestHTTPClientWithoutHintInContext(t *testing.T) {
	t.Parallel()
	srv := hintServer(t)
	resp, err := retry.HTTPClient(srv.Client()).Get(srv.URL + "/?status=429&after=3")
	if err != nil {
		t.Fatalf("Get = %v, want the 429 response", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("status = %d, want 429", resp.StatusCode)
	}
}

func TestHTTPClientCopiesBase(t *testing.T) {
	t.Parallel()
	base := &http.Client{Timeout: 7 * time.Second}
	c := retry.HTTPClient(base)
	if base.Transport != nil {
		t.Errorf("HTTPClient modified its base: Transport = %T", base.Transport)
	}
	if c.Timeout != base.Timeout {
		t.Errorf("HTTPClient(base).Timeout = %v, want the base's %v", c.Timeout, base.Timeout)
	}
	if again := retry.HTTPClient(c); again.Transport != c.Transport {
		t.Errorf("HTTPClient(HTTPClient(base)) wrapped the transport twice")
	}
	if retry.HTTPClient(nil) == nil || retry.HTTPClient(nil).Transport == nil {
		t.Errorf("HTTPClient(nil) = a client without transport, want a default client that records hints")
	}
}

// TestHTTPClientPassesTransportErrors: a failing transport's error reaches
// the caller unchanged.
func TestHTTPClientPassesTransportErrors(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	c := retry.HTTPClient(&http.Client{Transport: roundTripFunc(func(*http.Request) (*http.Response, error) { return nil, boom })})
	_, err := c.Get("http://127.0.0.1:1/")
	if !errors.Is(err, boom) {
		t.Errorf("Get = %v, want the transport's error", err)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestHeaderHintAnnotate(t *testing.T) {
	t.Parallel()
	srv := hintServer(t)
	record := func(after string) *retry.HeaderHint {
		ctx, hint := retry.WithHeaderHint(context.Background())
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/?status=429&after="+after, nil)
		resp, err := retry.HTTPClient(srv.Client()).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return hint
	}
	err429 := errors.New("API returned unexpected status code: 429")
	tests := []struct {
		name   string
		hint   *retry.HeaderHint
		err    error
		want   time.Duration
		wantOK bool
	}{
		{"header only", record("3"), err429, 3 * time.Second, true},
		{"body hint longer than header", record("3"), fmt.Errorf("429: Please try again in 7s"), 7 * time.Second, true},
		{"header longer than body hint", record("9"), fmt.Errorf("429: Please try again in 7s"), 9 * time.Second, true},
		{"no header: the error's own hint", new(retry.HeaderHint), fmt.Errorf("429: Please try again in 7s"), 7 * time.Second, true},
		{"nothing", new(retry.HeaderHint), err429, 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			annotated := tc.hint.Annotate(tc.err)
			if annotated.Error() != tc.err.Error() || !errors.Is(annotated, tc.err) {
				t.Errorf("Annotate(%q) = %q, want the same text, unwrapping to it", tc.err, annotated)
			}
			got, ok := retry.After(annotated)
			if got != tc.want || ok != tc.wantOK {
				t.Errorf("After(Annotate(%q)) = %v, %v, want %v, %v", tc.err, got, ok, tc.want, tc.wantOK)
			}
		})
	}
	if got := new(retry.HeaderHint).Annotate(nil); got != nil {
		t.Errorf("Annotate(nil) = %v, want nil", got)
	}
}
