package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/toolguard/toolguard/guard"
)

// storeUnavailableText is all a client reads of a limit store that cannot
// be reached: the store's own errors name its address and the key
// ("redisstore: reserve 1 in \"toolguard:{t}:tool:\": dial tcp
// 10.0.3.7:6379: connect: connection refused"), which only the log may
// hold.
const storeUnavailableText = "toolguard-proxy: the limit store cannot be reached"

// storeUnavailable is a limit store's error as the client may read it:
// a fixed text. Unwrap keeps the store's error for the log (errorAttrs)
// and for errors.Is.
type storeUnavailable struct{ err error }

func (e *storeUnavailable) Error() string { return storeUnavailableText }
func (e *storeUnavailable) Unwrap() error { return e.err }

// quietStore is the limits' thread store (-redis) whose errors are
// storeUnavailable: httpguard answers a limit that cannot reach its store
// with 503 limit_store_unavailable and the error's text, which then says
// nothing of the store's address or keys.
type quietStore struct{ guard.ThreadStore }

func (s quietStore) Reserve(ctx context.Context, key guard.ThreadKey, n, limit int) (int, bool, error) {
	count, ok, err := s.ThreadStore.Reserve(ctx, key, n, limit)
	if err != nil {
		err = &storeUnavailable{err}
	}
	return count, ok, err
}

func (s quietStore) Release(ctx context.Context, key guard.ThreadKey, n int) error {
	if err := s.ThreadStore.Release(ctx, key, n); err != nil {
		return &storeUnavailable{err}
	}
	return nil
}

// storeCheckTimeout bounds the store check made before a request goes
// upstream (checkStore).
const storeCheckTimeout = readyTimeout

// checkStore refuses, before it goes upstream, a request whose tool-call
// limit could not be counted: when -thread-limit counts in -redis, a
// request naming a thread (the only ones the store counts) makes the
// upstream request and only then reserves its calls, so with the store
// down the provider would be paid for an answer that is then refused. The
// store is asked first (a PING within storeCheckTimeout; for
// -redis-cluster, to the master serving the thread's slot); when it does
// not answer, the request is answered 503 limit_store_unavailable in its
// protocol's shape, reported as a store_error event, and nothing goes
// upstream. It is next itself when nothing needs checking: no -redis or
// -redis-cluster, no -thread-limit, -store-fail-open (calls then pass uncounted), or
// -model-call-limit, whose own reservation in the store comes before the
// upstream request.
func (s *server) checkStore(next http.Handler) http.Handler {
	if s.redis == nil || s.cfg.threadLimit == 0 || s.cfg.storeFailOpen || s.cfg.modelCallLimit > 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		thread := guard.ThreadFrom(r.Context())
		if r.Method != http.MethodPost || thread == "" {
			next.ServeHTTP(w, r)
			return
		}
		err := s.pingRedis(r.Context(), storeCheckTimeout, thread)
		if err == nil || r.Context().Err() != nil {
			next.ServeHTTP(w, r)
			return
		}
		err = fmt.Errorf("redis %s: PING: %w", s.redisAddr, err)
		ectx := guard.WithEvents(guard.WithObserver(r.Context(), s.observer), s.logEvent)
		guard.Report(ectx, guard.Event{Kind: guard.EventStoreError, Middleware: proxyStage, Err: &guard.StoreError{
			Middleware: proxyStage, Key: guard.ThreadKey{Thread: thread}, Err: &storeUnavailable{err},
		}})
		writeError(w, r, http.StatusServiceUnavailable, "limit_store_unavailable",
			storeUnavailableText+": the request was not sent upstream; retry later")
	})
}

// storeErrorAttrs describes a limit store's error for the log: the
// store's own error, address and key included, which the client never
// reads.
func storeErrorAttrs(se *guard.StoreError) []slog.Attr {
	var su *storeUnavailable
	if errors.As(se.Err, &su) {
		return []slog.Attr{slog.String("error", su.err.Error())}
	}
	return []slog.Attr{slog.String("error", se.Err.Error())}
}
