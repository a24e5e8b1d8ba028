package agent_test

import (
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/toolguard/toolguard/agent"
	"github.com/toolguard/toolguard/agent/checkpointtest"
	"github.com/toolguard/toolguard/internal/support/redisserver"
	"github.com/toolguard/toolguard/middleware/redisstore"
)

// The fault scenarios on redisstore's Checkpointer against a real
// redis-server: the agent's handling of a stop, a panic, a cancel, a
// failed save and a lost reply holds on the shared store too.
func TestFaultsRedisCheckpointer(t *testing.T) {
	srv, err := redisserver.Start(t.TempDir())
	if errors.Is(err, redisserver.ErrNotFound) {
		if os.Getenv("TOOLGUARD_REQUIRE_REDIS") == "1" {
			t.Fatalf("%v, and TOOLGUARD_REQUIRE_REDIS=1 requires the Redis tests to run", err)
		}
		t.Skipf("skipping the fault scenarios on a real Redis: %v (set TOOLGUARD_REQUIRE_REDIS=1 to make this a failure)", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	client := redis.NewClient(&redis.Options{Addr: srv.Addr(), DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second})
	t.Cleanup(func() { _ = client.Close() })
	n := 0
	checkpointtest.RunFaults(t, func(*testing.T) agent.Checkpointer {
		n++ // each scenario its own prefix: an empty store
		return redisstore.NewCheckpointer(client, redisstore.WithPrefix(fmt.Sprintf("faults%d:", n)))
	})
}
