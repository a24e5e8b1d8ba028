package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkInstrument measures what instrument adds to a request: its
// metrics and, at -log-level info, the access log line (written to
// io.Discard, so the write itself is not timed).
func BenchmarkInstrument(b *testing.B) {
	for _, level := range []string{"info", "warn"} {
		b.Run("log-level="+level, func(b *testing.B) {
			cfg, err := parseConfig([]string{"-upstream", "http://127.0.0.1:1", "-log-level", level}, noEnv, io.Discard, io.Discard)
			if err != nil {
				b.Fatal(err)
			}
			s, err := newServer(context.Background(), cfg, io.Discard)
			if err != nil {
				b.Fatal(err)
			}
			defer s.close(context.Background())
			h := s.instrument(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("X-Request-Id", "req_123")
				w.WriteHeader(http.StatusOK)
			}))
			w := httptest.NewRecorder()
			r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", nil)
			b.ReportAllocs()
			for b.Loop() {
				h.ServeHTTP(w, r)
			}
		})
	}
}
