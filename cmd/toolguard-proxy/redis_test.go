package main

import (
	"context"
	"errors"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/toolguard/toolguard/guard/redisstore/redisserver"
	fp "github.com/toolguard/toolguard/httpguard/fakeprovider"
)

// startRedis starts a redis-server of the test's own; without one on the
// PATH it skips, or fails under TOOLGUARD_REQUIRE_REDIS=1.
func startRedis(t *testing.T) *redisserver.Server {
	t.Helper()
	s, err := redisserver.Start(t.TempDir())
	if errors.Is(err, redisserver.ErrNotFound) {
		if os.Getenv("TOOLGUARD_REQUIRE_REDIS") == "1" {
			t.Fatalf("%v, and TOOLGUARD_REQUIRE_REDIS=1 requires the Redis tests to run", err)
		}
		t.Skipf("skipping the proxy replicas against a real Redis: %v (set TOOLGUARD_REQUIRE_REDIS=1 to make this a failure)", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop() })
	return s
}

// spread sends n requests of one thread, concurrently, alternating between
// the replicas, and returns how many answers carried a tool call (the
// others say the limit was reached).
func spread(t *testing.T, replicas []*proxy, n int, thread string) (passed, blocked int64) {
	t.Helper()
	var wg sync.WaitGroup
	var p, b atomic.Int64
	work := make(chan int)
	for range 32 {
		wg.Go(func() {
			for i := range work {
				resp, body := post(t, replicas[i%len(replicas)].URL+"/v1/chat/completions", chatBody, threadHeader, thread)
				if resp.StatusCode != http.StatusOK {
					t.Errorf("request %d: status %d: %s", i, resp.StatusCode, body)
					continue
				}
				m := decodeChat(t, body).Choices[0].Message
				switch {
				case len(m.ToolCalls) == 1:
					p.Add(1)
				case m.Content != nil && strings.Contains(*m.Content, "limit"):
					b.Add(1)
				default:
					t.Errorf("request %d: neither a call nor a limit: %s", i, body)
				}
			}
		})
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	return p.Load(), b.Load()
}

// Two proxy replicas sharing one redis-server enforce one thread limit
// exactly: of 400 calls of one thread spread over both, 100 pass. Without
// -redis each replica counts its own thread, and twice as many pass.
func TestTwoReplicasShareOneThreadLimit(t *testing.T) {
	t.Parallel()
	srv := startRedis(t)
	const calls, limit = 400, 100
	steps := make([]fp.Step, calls)
	for i := range steps {
		steps[i] = fp.Reply(fp.Call("get_weather", `{"city": "Paris"}`))
	}

	t.Run("shared through -redis", func(t *testing.T) {
		up := fp.New(steps...)
		defer up.Close()
		args := []string{"-thread-limit", "100", "-limit-exit", "end", "-redis", "redis://" + srv.Addr() + "/0"}
		replicas := []*proxy{startProxy(t, up.URL, args...), startProxy(t, up.URL, args...)}
		passed, blocked := spread(t, replicas, calls, "chat-400")
		t.Logf("two replicas, one redis-server, thread limit %d: %d calls, %d passed, %d blocked", limit, calls, passed, blocked)
		if passed != limit || blocked != calls-limit {
			t.Errorf("%d passed and %d blocked, want %d and %d", passed, blocked, limit, calls-limit)
		}
		rc := redis.NewClient(&redis.Options{Addr: srv.Addr()})
		defer rc.Close()
		if n, err := rc.Get(context.Background(), "toolguard:{chat-400}:tool:").Int(); err != nil || n != limit {
			t.Errorf("Redis holds the thread's count %d (%v), want %d", n, err, limit)
		}
		for i, r := range replicas {
			if n := len(r.waitLog(t, "toolguard-proxy: request", calls/2)); n != calls/2 {
				t.Errorf("replica %d served %d requests, want %d", i, n, calls/2)
			}
		}
	})

	t.Run("without -redis each replica counts its own", func(t *testing.T) {
		up := fp.New(steps...)
		defer up.Close()
		args := []string{"-thread-limit", "100", "-limit-exit", "end"}
		replicas := []*proxy{startProxy(t, up.URL, args...), startProxy(t, up.URL, args...)}
		passed, _ := spread(t, replicas, calls, "chat-400")
		t.Logf("two replicas, no redis, thread limit %d: %d calls, %d passed", limit, calls, passed)
		if passed != 2*limit {
			t.Errorf("%d passed, want %d (each replica's own limit)", passed, 2*limit)
		}
	})
}

// When Redis cannot be reached, a limited request fails closed: 503 in the
// protocol's error shape, and nothing leaves unlimited.
func TestRedisDownFailsClosed(t *testing.T) {
	t.Parallel()
	srv := startRedis(t)
	up := fp.New(fp.Reply(fp.Call("get_weather", `{"city": "Paris"}`)), fp.Reply(fp.Call("get_weather", `{"city": "Paris"}`)))
	defer up.Close()
	p := startProxy(t, up.URL, "-thread-limit", "5", "-redis", "redis://"+srv.Addr()+"/0", "-model-retries", "0")
	if resp, body := post(t, p.URL+"/v1/chat/completions", chatBody, threadHeader, "t"); resp.StatusCode != 200 {
		t.Fatalf("with Redis up: status %d: %s", resp.StatusCode, body)
	}
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	resp, body := post(t, p.URL+"/v1/chat/completions", chatBody, threadHeader, "t")
	if resp.StatusCode != http.StatusServiceUnavailable || openAIType(body) != "limit_store_unavailable" {
		t.Errorf("with Redis down: status %d body %s; want 503 limit_store_unavailable", resp.StatusCode, body)
	}
	lines := p.waitLog(t, "toolguard: store_error", 1)
	if len(lines) == 0 || lines[0]["level"] != "WARN" {
		t.Errorf("store error logged as %v, want one Warn line", lines)
	}
}
