package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"go.opentelemetry.io/otel/metric"
)

// instrument records a request's metrics with attribute sets built once,
// passed as options slices built once too: a request it counts allocates
// no more than the request's own bookkeeping (the recorder, the request
// info, the context), whatever its method and status.
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
	// WithContext makes, the recorder: 4; building the sets per request
	// took 9 more, and the variadic options slices of the three
	// measurements 3 more.
	if allocs > 4 {
		t.Errorf("instrument allocates %.0f times per request, want at most 4", allocs)
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
	} else if got, kept := a.done(post, 200), o.([]metric.RecordOption); len(got) != 1 || &got[0] != &kept[0] {
		t.Errorf("done(POST, 200) = %v, want the kept options", got)
	}
}
