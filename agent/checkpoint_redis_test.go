package agent_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/toolguard/toolguard/guard/redisstore"
	"github.com/toolguard/toolguard/guard/redisstore/redisserver"
	"github.com/toolguard/toolguard/toolstage"
)

// The agent's fault scenarios (RunFaults: a stop, a panic, a cancel, a
// failed save and a lost reply after a paying call) hold on redisstore's
// Checkpointer against a real redis-server too: each pays once.
func TestCheckpointerAgentFaultsRedis(t *testing.T) {
	c := redisClient(t)
	n := 0
	RunFaults(t, func(*testing.T) toolstage.Checkpointer {
		n++ // each scenario its own prefix: an empty store
		return redisstore.NewCheckpointer(c, redisstore.WithPrefix(fmt.Sprintf("agentfaults%d:", n)))
	})
}

// The crash-resume scenario on Redis: a run cut off and resumed by new
// Agent values runs each tool exactly once, with the calls run per tool in
// the test's log.
func TestCheckpointerResumeAfterCrashRedis(t *testing.T) {
	c := redisClient(t)
	cp := redisstore.NewCheckpointer(c, redisstore.WithPrefix("crash:"))
	counts := ResumeAfterCrash(t, cp)
	t.Logf("redis-server %s: calls run per tool: %s", c.Options().Addr, counts)
	state, v, err := cp.Load(context.Background(), "checkpointtest-crash")
	if err != nil || state == nil || v < 5 {
		t.Errorf("Load after the run = %d bytes, version %d, %v; want the final state", len(state), v, err)
	}
}

// redisClient starts a redis-server of the test's own and returns a client
// of it with short timeouts, both stopped when the test ends; without
// redis-server on the PATH it skips, or fails under
// TOOLGUARD_REQUIRE_REDIS=1.
func redisClient(t *testing.T) *redis.Client {
	t.Helper()
	s, err := redisserver.Start(t.TempDir())
	if errors.Is(err, redisserver.ErrNotFound) {
		if os.Getenv("TOOLGUARD_REQUIRE_REDIS") == "1" {
			t.Fatalf("%v, and TOOLGUARD_REQUIRE_REDIS=1 requires the Redis tests to run", err)
		}
		t.Skipf("skipping the tests against a real Redis: %v (set TOOLGUARD_REQUIRE_REDIS=1 to make this a failure)", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop() })
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), DialTimeout: time.Second, ReadTimeout: time.Second,
		WriteTimeout: time.Second, MaxRetries: 1, PoolSize: 64})
	t.Cleanup(func() { _ = c.Close() })
	return c
}
