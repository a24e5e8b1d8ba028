package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"time"
)

// readyTimeout bounds the store check of one /readyz probe: shorter than
// the one-second timeout Kubernetes gives a probe by default, so that the
// probe reads the proxy's answer rather than its own timeout.
const readyTimeout = 500 * time.Millisecond

// healthz answers 200 "ok" while the process serves: liveness only. It
// checks nothing outside the process, so that an outage elsewhere (Redis,
// the upstream) never gets the process restarted.
func (s *server) healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	io.WriteString(w, "ok\n")
}

// readyz answers whether the proxy should be sent requests: 503 while it
// is draining (after SIGTERM, until it exits), and while the Redis of
// -redis does not answer a PING within readyTimeout (every probe pings:
// nothing is cached), unless -store-fail-open, under which the proxy
// serves without it; else 200 "ok". The body says which, without an
// address: the log has the store's error.
func (s *server) readyz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if s.draining.Load() {
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, "not ready: draining (shutting down)\n")
		return
	}
	if s.redis != nil && !s.cfg.storeFailOpen {
		if err := s.pingRedis(r.Context(), readyTimeout); err != nil {
			s.log.LogAttrs(r.Context(), slog.LevelWarn, "toolguard-proxy: not ready: redis does not answer",
				slog.String("redis", s.redis.Options().Addr), slog.String("error", err.Error()))
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, "not ready: the limit store (-redis) does not answer\n")
			return
		}
	}
	io.WriteString(w, "ok\n")
}

// pingRedis sends Redis a PING and returns its error, or ctx's once
// timeout has passed, whichever comes first. The PING runs on a goroutine
// of its own: go-redis does not end a read at the context's deadline
// (only at its ReadTimeout, 3s by default, or whatever the -redis URL
// says) unless ContextTimeoutEnabled, which the store's client does not
// set, so a frozen server would hold the caller that long.
func (s *server) pingRedis(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.redis.Ping(ctx).Err() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}
