package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/toolguard/toolguard/guard/redisstore/redisserver"
	fp "github.com/toolguard/toolguard/httpguard/fakeprovider"
)

// startCluster starts a Redis Cluster of three masters of the test's own
// on loopback (args passed to every node), stopped when the test ends;
// without redis-server on the PATH it skips, or fails under
// TOOLGUARD_REQUIRE_REDIS=1.
func startCluster(t *testing.T, args ...string) *redisserver.Cluster {
	t.Helper()
	c, err := redisserver.StartCluster(t.TempDir(), 3, args...)
	if errors.Is(err, redisserver.ErrNotFound) {
		if os.Getenv("TOOLGUARD_REQUIRE_REDIS") == "1" {
			t.Fatalf("%v, and TOOLGUARD_REQUIRE_REDIS=1 requires the Redis tests to run", err)
		}
		t.Skipf("skipping the proxy replicas against a real Redis Cluster: %v (set TOOLGUARD_REQUIRE_REDIS=1 to make this a failure)", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop() })
	return c
}

// clusterClient returns a client of c, closed when the test ends.
func clusterClient(t *testing.T, c *redisserver.Cluster) *redis.ClusterClient {
	t.Helper()
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}

// Two proxy replicas on one Redis Cluster of three masters enforce one
// thread limit exactly: of 400 calls of one thread spread over both, 100
// pass and 300 are blocked, and the thread's count, on the master serving
// its slot, is 100. The model-call limit is shared alike: of 100 requests
// of another thread, 50 reach the upstream.
func TestTwoReplicasShareOneThreadLimitOnCluster(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	cc := clusterClient(t, c)
	for _, tc := range []struct {
		name, flag, thread, key string
		calls, limit            int
	}{
		{"-thread-limit", "-thread-limit", "chat-400", "toolguard:{chat-400}:tool:", 400, 100},
		{"-model-call-limit", "-model-call-limit", "chat-100", "toolguard:{chat-100}:model:", 100, 50},
	} {
		t.Run(tc.name, func(t *testing.T) {
			steps := make([]fp.Step, tc.calls)
			for i := range steps {
				steps[i] = fp.Reply(fp.Call("get_weather", `{"city": "Paris"}`))
			}
			up := fp.New(steps...)
			defer up.Close()
			args := []string{tc.flag, fmt.Sprint(tc.limit), "-limit-exit", "end", "-redis-cluster", c.URL()}
			replicas := []*proxy{startProxy(t, up.URL, args...), startProxy(t, up.URL, args...)}
			passed, blocked := spread(t, replicas, tc.calls, tc.thread)
			t.Logf("two replicas, one Redis Cluster of %d masters (-redis-cluster %s), %s %d: %d requests, %d passed, %d blocked",
				len(c.Nodes), c.URL(), tc.flag, tc.limit, tc.calls, passed, blocked)
			if passed != int64(tc.limit) || blocked != int64(tc.calls-tc.limit) {
				t.Errorf("%d passed and %d blocked, want %d and %d", passed, blocked, tc.limit, tc.calls-tc.limit)
			}
			// The thread-limit counts the calls in answers: every request
			// goes upstream. The model-call limit refuses before it.
			wantUp := tc.calls
			if tc.flag == "-model-call-limit" {
				wantUp = tc.limit
			}
			if n := len(up.Requests()); n != wantUp {
				t.Errorf("the upstream received %d requests, want %d", n, wantUp)
			}
			ctx := context.Background()
			node, err := cc.MasterForKey(ctx, tc.key)
			if err != nil {
				t.Fatal(err)
			}
			slot, _ := node.ClusterKeySlot(ctx, tc.key).Result()
			n, err := node.Get(ctx, tc.key).Int()
			t.Logf("%s (slot %d) on master %s: %d (%v)", tc.key, slot, node.Options().Addr, n, err)
			if err != nil || n != tc.limit {
				t.Errorf("the master of the thread's slot holds its count %d (%v), want %d", n, err, tc.limit)
			}
			for i, r := range replicas {
				if n := len(r.waitLog(t, "toolguard-proxy: request", tc.calls/2)); n != tc.calls/2 {
					t.Errorf("replica %d served %d requests, want %d", i, n, tc.calls/2)
				}
			}
		})
	}
}

// threadOn returns a thread id whose counts live on the master addr
// (master) or on another one (!master).
func threadOn(t *testing.T, cc *redis.ClusterClient, addr string, master bool) string {
	t.Helper()
	for i := range 1000 {
		thread := fmt.Sprintf("thread-%d", i)
		node, err := cc.MasterForKey(context.Background(), "toolguard:{"+thread+"}:tool:")
		if err != nil {
			t.Fatal(err)
		}
		if (node.Options().Addr == addr) == master {
			return thread
		}
	}
	t.Fatalf("no thread on %s (%v) among 1000", addr, master)
	return ""
}

// With -redis-cluster, /readyz PINGs every master: it is 503 while one
// master is down, naming -redis-cluster and no address. A request whose
// thread's slot is on that master is refused before it goes upstream
// (503 limit_store_unavailable); one whose thread lives on a master that
// answers is served and counted there.
func TestRedisClusterMasterDown(t *testing.T) {
	t.Parallel()
	// A node timeout longer than the test: the live masters keep serving
	// their slots rather than declaring the cluster down.
	c := startCluster(t, "--cluster-node-timeout", "120000")
	cc := clusterClient(t, c)
	up := fp.New(fp.Reply(fp.Call("get_weather", `{"city": "Paris"}`)), fp.Reply(fp.Call("get_weather", `{"city": "Paris"}`)),
		fp.Reply(fp.Call("get_weather", `{"city": "Paris"}`)))
	defer up.Close()
	p := startProxy(t, up.URL, "-thread-limit", "5", "-redis-cluster", c.URL(), "-model-retries", "0", "-admin-listen", "127.0.0.1:0")
	down := c.Nodes[1]
	lost, kept := threadOn(t, cc, down.Addr(), true), threadOn(t, cc, down.Addr(), false)
	for _, thread := range []string{lost, kept} {
		if resp, body := post(t, p.URL+"/v1/chat/completions", chatBody, threadHeader, thread); resp.StatusCode != 200 {
			t.Fatalf("thread %s with the cluster up: status %d: %s", thread, resp.StatusCode, body)
		}
	}
	code, body := get(t, p.Admin+"/readyz")
	t.Logf("/readyz, every master up: %d %q", code, body)
	if code != 200 {
		t.Errorf("/readyz with the cluster up: %d %q, want 200", code, body)
	}

	if err := down.Stop(); err != nil {
		t.Fatal(err)
	}
	code, body = get(t, p.Admin+"/readyz")
	t.Logf("/readyz, master %s down: %d %q", down.Addr(), code, body)
	if code != http.StatusServiceUnavailable || body != "not ready: the limit store (-redis-cluster) does not answer\n" {
		t.Errorf("/readyz with a master down: %d %q, want 503 naming -redis-cluster", code, body)
	}

	resp, rbody := postWithin(t, time.Minute, p.URL+"/v1/chat/completions", chatBody, threadHeader, lost)
	t.Logf("thread %s, on the master that is down: %d %s", lost, resp.StatusCode, bytes.TrimSpace(rbody))
	if resp.StatusCode != http.StatusServiceUnavailable || openAIType(rbody) != "limit_store_unavailable" {
		t.Errorf("thread on the master that is down: status %d body %s; want 503 limit_store_unavailable", resp.StatusCode, rbody)
	}
	for _, leak := range append(c.Addrs(), "127.0.0.1", "redis", "toolguard:") {
		if strings.Contains(string(rbody), leak) {
			t.Errorf("the client reads %q: %s", leak, rbody)
		}
	}
	if n := len(up.Requests()); n != 2 {
		t.Errorf("the upstream received %d requests, want 2: the thread on the master that is down must not go upstream", n)
	}
	resp, rbody = postWithin(t, time.Minute, p.URL+"/v1/chat/completions", chatBody, threadHeader, kept)
	t.Logf("thread %s, on a master that answers: %d", kept, resp.StatusCode)
	if resp.StatusCode != 200 || len(decodeChat(t, rbody).Choices[0].Message.ToolCalls) != 1 {
		t.Errorf("thread on a master that answers: status %d body %s; want 200 and the call", resp.StatusCode, rbody)
	}
	if n, err := cc.Get(context.Background(), "toolguard:{"+kept+"}:tool:").Int(); n != 2 || err != nil {
		t.Errorf("thread %s's count = %d, %v; want 2", kept, n, err)
	}
	lines := p.waitLog(t, "toolguard-proxy: not ready: redis does not answer", 1)
	if len(lines) != 1 || lines[0]["redis"] != strings.Join(c.Addrs(), ",") {
		t.Errorf("not-ready log lines %v, want one naming the cluster", lines)
	} else {
		// The masters that did not answer in time, when the slot map
		// loaded in time (a seed that is down costs its dial retries).
		t.Logf("not-ready log line's error: %v", lines[0]["error"])
	}
}

// -redis-cluster is refused at start with a line naming it: beside
// -redis, with a URL go-redis cannot read (never repeating its
// password), and without a limit whose counts it would keep.
func TestBadRedisCluster(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-thread-limit", "3", "-redis", "redis://127.0.0.1:6379", "-redis-cluster", "redis://127.0.0.1:7000"},
			"-redis and -redis-cluster: give one"},
		{[]string{"-thread-limit", "3", "-redis-cluster", "http://127.0.0.1:7000"}, "-redis-cluster: redis: invalid URL scheme: http"},
		{[]string{"-thread-limit", "3", "-redis-cluster", "redis://:hunter2@127.0.0.1:7000?bogus=1"}, "-redis-cluster: redis: unexpected option: bogus"},
		{[]string{"-thread-limit", "3", "-redis-cluster", "redis://:hunter2@127.0.0.1:port"}, `-redis-cluster: not a URL: invalid port ":port" after host`},
		{[]string{"-thread-limit", "3", "-redis-cluster", "redis://127.0.0.1:7000?addr=nope"}, "-redis-cluster: redis: unable to parse addr param: nope"},
		{[]string{"-redis-cluster", "redis://127.0.0.1:7000"}, "-redis-cluster keeps thread counts: it needs -thread-limit, -model-call-limit, -mcp-session-limit or -mcp-thread-limit"},
		{[]string{"-thread-limit", "3", "-store-fail-open"}, "-store-fail-open needs -redis or -redis-cluster"},
	} {
		var stdout, stderr bytes.Buffer
		args := append([]string{"-upstream", "https://x"}, tc.args...)
		err := run(context.Background(), args, noEnv, &stdout, &stderr)
		line, _, _ := strings.Cut(stderr.String(), "\n")
		if !errors.Is(err, errUsage) || !strings.HasPrefix(line, "toolguard-proxy: "+tc.want) {
			t.Errorf("run(%q) = %v, first line %q; want errUsage and %q", args, err, line, "toolguard-proxy: "+tc.want)
		}
		if strings.Contains(stderr.String(), "hunter2") {
			t.Errorf("run(%q) wrote the password:\n%s", args, stderr.String())
		}
	}
	// Set in the environment, the flags are named by their variables.
	var stderr bytes.Buffer
	env := envOf(map[string]string{"TOOLGUARD_REDIS": "redis://127.0.0.1:6379", "TOOLGUARD_REDIS_CLUSTER": "redis://127.0.0.1:7000"}, nil)
	// parseConfig, not run: a proxy that took the flags would serve.
	_, err := parseConfig([]string{"-upstream", "https://x", "-thread-limit", "3"}, env, &stderr, &stderr)
	if want := "toolguard-proxy: TOOLGUARD_REDIS and TOOLGUARD_REDIS_CLUSTER: give one"; !errors.Is(err, errUsage) || !strings.HasPrefix(stderr.String(), want) {
		t.Errorf("parseConfig with both variables = %v, wrote\n%s\nwant errUsage and %q", err, stderr.String(), want)
	}

	// A good URL is taken: every node, go-redis's options.
	cfg, err := parseConfig([]string{"-upstream", "https://x", "-thread-limit", "3", "-redis-cluster",
		"redis://127.0.0.1:7000?addr=127.0.0.1:7001&addr=127.0.0.1:7002&read_timeout=2s"}, noEnv, &bytes.Buffer{}, &bytes.Buffer{})
	if err != nil || cfg.redisCluster == nil || strings.Join(cfg.redisCluster.Addrs, " ") != "127.0.0.1:7000 127.0.0.1:7001 127.0.0.1:7002" ||
		cfg.redisCluster.ReadTimeout != 2*time.Second {
		t.Errorf("parseConfig(-redis-cluster …) = %+v, %v; want the three nodes and a 2s read timeout", cfg.redisCluster, err)
	}
}

// A -redis URL net/url cannot parse is refused without repeating the
// URL, whose password net/url's error would quote.
func TestBadRedisURLHidesPassword(t *testing.T) {
	t.Parallel()
	var stderr bytes.Buffer
	err := run(context.Background(), []string{"-upstream", "https://x", "-thread-limit", "3", "-redis", "redis://:hunter2@127.0.0.1:port/0"}, noEnv, &stderr, &stderr)
	t.Logf("run = %v", err)
	if err == nil || !strings.Contains(err.Error(), "-redis") || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("run with -redis redis://:hunter2@127.0.0.1:port/0 = %v, want an error naming -redis and not the password", err)
	}
}
