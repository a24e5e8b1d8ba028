package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// instrument records a request's metrics with attribute sets built once:
// a request it counts allocates no more than the request's own bookkeeping
// (the recorder, the request info, the context), whatever its method and
// status.
func TestInstrumentReusesAttributeSets(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector inflates allocations")
	}
	cfg, err := parseConfig([]string{"-upstream", "http://127.0.0.1:1", "-log-level", "warn"}, noEnv, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	s, err := newServer(context.Background(), cfg, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close(context.Background())
	h := s.instrument(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) }))
	w := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", nil)
	h.ServeHTTP(w, r) // the sets of POST and 418 are built here, once
	allocs := testing.AllocsPerRun(200, func() { h.ServeHTTP(w, r) })
	t.Logf("instrument allocates %.0f times per request", allocs)
	// The request info, the context holding it, the request copy
	// WithContext makes, the recorder, the deferred closure, the log's
	// attributes: 8 at most; building the sets per request took 9 more.
	if allocs > 8 {
		t.Errorf("instrument allocates %.0f times per request, want at most 8", allocs)
	}
}

// The sets of statuses are kept up to maxStatusSets; past it each is
// built per request, and holds the same attributes.
func TestRequestAttrsBounded(t *testing.T) {
	var a requestAttrs
	post := requestMethod(http.MethodPost)
	for status := 100; status < 100+maxStatusSets+50; status++ {
		o := a.done(post, status)
		if o == nil {
			t.Fatalf("done(POST, %d) = nil", status)
		}
	}
	if n := a.statuses.Load(); n != maxStatusSets {
		t.Errorf("after %d statuses the cache holds %d sets, want %d", maxStatusSets+50, n, maxStatusSets)
	}
	n := 0
	a.byStatus.Range(func(_, _ any) bool { n++; return true })
	if n != maxStatusSets {
		t.Errorf("byStatus holds %d entries, want %d", n, maxStatusSets)
	}
	if o, ok := a.byStatus.Load(statusKey{http.MethodPost, 200}); !ok || o == nil {
		t.Errorf("the set of POST 200 is not kept")
	} else if got := a.done(post, 200); got != o {
		t.Errorf("done(POST, 200) = %v, want the kept option", got)
	}
}
