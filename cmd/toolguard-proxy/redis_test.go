package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/guard/redisstore/redisserver"
	"github.com/toolguard/toolguard/httpguard"
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

// While Redis is down a client reads a generic 503 in its protocol's
// shape: no address, port or key in the body or a header; the log has
// the store's error. A request the limit would count in the store is
// refused before it goes upstream: the tool-call limit's thread by the
// proxy's check, the model-call limit by its own reservation. A request
// naming no thread is counted in its transcript and passes.
func TestRedisDownLeaksNothing(t *testing.T) {
	t.Parallel()
	anthropicBody := `{"model":"claude-sonnet-4-5","max_tokens":64,"messages":[{"role":"user","content":"Weather in Paris?"}],"tools":[{"name":"get_weather","input_schema":{"type":"object","properties":{"city":{"type":"string"}}}}]}`
	for _, tc := range []struct {
		name, path, body string
		args             []string
		errType          func([]byte) string
		want             string
		frozen           bool // SIGSTOP, not stopped: it keeps its port and answers nothing
	}{
		{"thread limit, openai", "/v1/chat/completions", chatBody, []string{"-thread-limit", "5"}, openAIType, "limit_store_unavailable", false},
		{"thread limit, openai stream", "/v1/chat/completions", streamBody, []string{"-thread-limit", "5"}, openAIType, "limit_store_unavailable", false},
		{"thread limit, anthropic", "/v1/messages", anthropicBody, []string{"-thread-limit", "5"}, anthropicType, "limit_store_unavailable", false},
		{"model-call limit, openai", "/v1/chat/completions", chatBody, []string{"-model-call-limit", "5"}, openAIType, "limit_store_unavailable", false},
		{"both limits, openai", "/v1/chat/completions", chatBody, []string{"-model-call-limit", "5", "-thread-limit", "5"}, openAIType, "limit_store_unavailable", false},
		{"thread limit, openai, frozen", "/v1/chat/completions", chatBody, []string{"-thread-limit", "5"}, openAIType, "limit_store_unavailable", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := startRedis(t)
			up := fp.New(fp.Reply(fp.Call("get_weather", `{"city": "Paris"}`)), fp.Reply(fp.Call("get_weather", `{"city": "Paris"}`)))
			defer up.Close()
			// A read timeout longer than the client's: a check that waited
			// for it on a frozen server would not be answered.
			args := append([]string{"-redis", "redis://" + srv.Addr() + "/0?read_timeout=5m", "-model-retries", "0"}, tc.args...)
			p := startProxy(t, up.URL, args...)
			if resp, body := post(t, p.URL+tc.path, tc.body, threadHeader, "thread-43"); resp.StatusCode != 200 {
				t.Fatalf("with Redis up: status %d: %s", resp.StatusCode, body)
			}
			outage := "stopped"
			if tc.frozen {
				outage = "frozen"
				if err := srv.Freeze(); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = srv.Thaw() })
			} else if err := srv.Stop(); err != nil {
				t.Fatal(err)
			}
			resp, body := postWithin(t, time.Minute, p.URL+tc.path, tc.body, threadHeader, "thread-43")
			t.Logf("with Redis %s, the client reads: %d %s", outage, resp.StatusCode, bytes.TrimSpace(body))
			if resp.StatusCode != http.StatusServiceUnavailable || tc.errType(body) != tc.want {
				t.Errorf("status %d body %s; want 503 %s", resp.StatusCode, body, tc.want)
			}
			_, port, _ := net.SplitHostPort(srv.Addr())
			seen := string(body)
			for k, vs := range resp.Header {
				seen += "\n" + k + ": " + strings.Join(vs, ", ")
			}
			for _, leak := range []string{srv.Addr(), "127.0.0.1", ":" + port, "dial tcp", "toolguard:", "{thread", "redisstore", "thread-43"} {
				if strings.Contains(seen, leak) {
					t.Errorf("the client reads %q:\n%s", leak, seen)
				}
			}
			if n := len(up.Requests()); n != 1 {
				t.Errorf("the upstream received %d requests, want 1: the one made with Redis down must not go upstream", n)
			}
			lines := p.waitLog(t, "toolguard: store_error", 1)
			if len(lines) != 1 || lines[0]["level"] != "WARN" || !strings.Contains(lines[0]["error"].(string), srv.Addr()) {
				t.Errorf("store error logged as %v; want one Warn line with the store's error, address included", lines)
			}

			// A request naming no thread is counted in its transcript.
			if resp, body := post(t, p.URL+tc.path, tc.body); resp.StatusCode != 200 {
				t.Errorf("with Redis down, a request naming no thread: status %d: %s", resp.StatusCode, body)
			}
		})
	}
}

// With -store-fail-open a limited request passes while Redis is down,
// uncounted, with a store_error event (counted, logged at Warn), and
// /readyz stays 200: the proxy serves without Redis.
func TestRedisDownStoreFailOpen(t *testing.T) {
	t.Parallel()
	srv := startRedis(t)
	up := fp.New(fp.Reply(fp.Call("get_weather", `{"city": "Paris"}`)), fp.Reply(fp.Call("get_weather", `{"city": "Paris"}`)))
	defer up.Close()
	p := startProxy(t, up.URL, "-thread-limit", "5", "-model-call-limit", "5", "-redis", "redis://"+srv.Addr()+"/0",
		"-store-fail-open", "-admin-listen", "127.0.0.1:0")
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	resp, body := post(t, p.URL+"/v1/chat/completions", chatBody, threadHeader, "thread-43")
	if resp.StatusCode != http.StatusOK || len(decodeChat(t, body).Choices[0].Message.ToolCalls) != 1 {
		t.Errorf("with Redis down and -store-fail-open: status %d: %s; want 200 and the call", resp.StatusCode, body)
	}
	lines := p.waitLog(t, "toolguard: store_error", 2)
	var by []string
	for _, l := range lines {
		t.Logf("log: %v", l)
		if l["level"] == "WARN" {
			by = append(by, l["middleware"].(string))
		}
	}
	if !slices.Equal(by, []string{"ModelCallLimit", "ToolCallLimit"}) {
		t.Errorf("store_error Warn lines from %q, want ModelCallLimit then ToolCallLimit", by)
	}
	if code, body := get(t, p.Admin+"/readyz"); code != 200 {
		t.Errorf("/readyz with -store-fail-open and Redis down: %d %q, want 200", code, body)
	}
	metrics := scrape(t, p.Admin+"/metrics")
	for _, mw := range []string{"ModelCallLimit", "ToolCallLimit"} {
		want := `toolguard_events_total{` + otelguardScope + `,toolguard_event_kind="store_error",toolguard_middleware="` + mw + `"} 1`
		if !slices.Contains(metrics, want) {
			t.Errorf("/metrics has no line\n%s", want)
		}
	}
}

// failingStore is a thread store whose every call fails with err.
type failingStore struct{ err error }

func (s failingStore) Reserve(context.Context, guard.ThreadKey, int, int) (int, bool, error) {
	return 0, false, s.err
}
func (s failingStore) Release(context.Context, guard.ThreadKey, int) error { return s.err }

// The tool-call limit reserves after the upstream answered (it counts the
// calls in the answer), so a store that fails then is met past the
// proxy's check: the answer is refused with 503, and the client's body
// holds the fixed text of quietStore, not the store's error.
func TestToolCallLimitStoreErrorIsQuiet(t *testing.T) {
	t.Parallel()
	up := fp.New(fp.Reply(fp.Call("get_weather", `{"city": "Paris"}`)))
	defer up.Close()
	cfg, err := parseConfig([]string{"-upstream", up.URL, "-thread-limit", "5"}, noEnv, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	leak := `redisstore: reserve 1 in "toolguard:{t}:tool:": dial tcp 10.0.3.7:6379: connect: connection refused`
	store := quietStore{failingStore{errors.New(leak)}}
	var logged []guard.Event
	tr := httpguard.New(http.DefaultTransport, cfg.middlewares(guard.ObserverFunc(func(context.Context, guard.Event) {}), store, func(_ context.Context, e guard.Event) { logged = append(logged, e) })...)
	req, _ := http.NewRequestWithContext(guard.WithThread(context.Background(), "t"), http.MethodPost, up.URL+"/v1/chat/completions", strings.NewReader(chatBody))
	req.Header.Set("Content-Type", "application/json")
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	t.Logf("the client reads: %d %s", resp.StatusCode, body)
	if resp.StatusCode != http.StatusServiceUnavailable || openAIType(body) != "limit_store_unavailable" {
		t.Errorf("status %d body %s; want 503 limit_store_unavailable", resp.StatusCode, body)
	}
	for _, s := range []string{"10.0.3.7", "toolguard:", "dial tcp", "redisstore"} {
		if bytes.Contains(body, []byte(s)) {
			t.Errorf("the client reads %q: %s", s, body)
		}
	}
	if n := len(up.Requests()); n != 1 {
		t.Errorf("the upstream received %d requests, want 1 (the limit counts the answer)", n)
	}
	var se *guard.StoreError
	if len(logged) == 0 || !errors.As(logged[len(logged)-1].Err, &se) || storeErrorAttrs(se)[0].Value.String() != leak {
		t.Errorf("events %v; want a store_error whose logged error is the store's own", logged)
	}
}
