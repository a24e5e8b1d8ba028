package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/toolguard/toolguard/guard"
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
// is draining (after SIGTERM, until it exits), and while the limit store
// does not answer within readyTimeout — the Redis of -redis a PING, every
// master of -redis-cluster one each (pingRedis; every probe pings:
// nothing is cached) — unless -store-fail-open, under which the proxy
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
		if err := s.pingRedis(r.Context(), readyTimeout, ""); err != nil {
			s.log.LogAttrs(r.Context(), slog.LevelWarn, "toolguard-proxy: not ready: redis does not answer",
				slog.String("redis", s.redisAddr), slog.String("error", err.Error()))
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(w, "not ready: the limit store (%s) does not answer\n", s.cfg.storeFlag())
			return
		}
	}
	io.WriteString(w, "ok\n")
}

// pingRedis asks the limit store whether it answers and returns its
// error, or ctx's once timeout has passed, whichever comes first. For
// -redis it sends the server a PING. For -redis-cluster, with thread ""
// it sends a PING to every master of the cluster's slot map, read afresh
// from the cluster (ForEachMaster), at once: every master serves the
// threads of its slots, so one that does not answer is a store that
// cannot count some threads; the error then names the masters that did
// not answer in time. With a thread, it PINGs only the master serving
// that thread's slot (from the map the client holds), the one its
// counts go to. The PINGs run on a goroutine of their own: go-redis does
// not end a read at the context's deadline (only at its ReadTimeout, 3s
// by default, or whatever the URL says) unless ContextTimeoutEnabled,
// which the store's client does not set, so a frozen server would hold
// the caller that long.
func (s *server) pingRedis(ctx context.Context, timeout time.Duration, thread string) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	done := make(chan error, 1)
	var pending masters // -redis-cluster's masters asked and not answered yet
	go func() {
		cc, ok := s.redis.(*redis.ClusterClient)
		switch {
		case !ok:
			done <- s.redis.Ping(ctx).Err()
		case thread == "":
			done <- cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
				addr := c.Options().Addr
				pending.add(addr)
				if err := c.Ping(ctx).Err(); err != nil {
					return fmt.Errorf("%s: %w", addr, err)
				}
				pending.done(addr)
				return nil
			})
		default:
			c, err := cc.MasterForKey(ctx, s.store.Key(guard.ThreadKey{Thread: thread}))
			if err == nil {
				pending.add(c.Options().Addr)
				if err = c.Ping(ctx).Err(); err != nil {
					err = fmt.Errorf("%s: %w", c.Options().Addr, err)
				}
			}
			done <- err
		}
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		if addrs := pending.list(); addrs != "" {
			return fmt.Errorf("no answer from %s: %w", addrs, ctx.Err())
		}
		return ctx.Err()
	}
}

// masters is a set of cluster masters' addresses, safe for concurrent
// use; its zero value is empty.
type masters struct {
	mu    sync.Mutex
	addrs map[string]bool
}

func (m *masters) add(addr string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.addrs == nil {
		m.addrs = map[string]bool{}
	}
	m.addrs[addr] = true
}

func (m *masters) done(addr string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.addrs, addr)
}

// list returns the addresses, sorted, comma-separated.
func (m *masters) list() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return strings.Join(slices.Sorted(maps.Keys(m.addrs)), ",")
}
