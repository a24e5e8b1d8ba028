package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/guard/redisstore"
	"github.com/toolguard/toolguard/guard/redisstore/redisserver"
	"github.com/toolguard/toolguard/guard/storetest"
	"github.com/toolguard/toolguard/toolstage"
	"github.com/toolguard/toolguard/toolstage/checkpointtest"
)

// startCluster starts a Redis Cluster of three masters of the test's own
// on loopback, stopped when the test ends; without redis-server on the
// PATH it skips, or fails under requireEnv=1.
func startCluster(tb testing.TB) *redisserver.Cluster {
	tb.Helper()
	c, err := redisserver.StartCluster(tb.TempDir(), 3)
	if errors.Is(err, redisserver.ErrNotFound) {
		if os.Getenv(requireEnv) == "1" {
			tb.Fatalf("%v, and %s=1 requires the Redis tests to run", err, requireEnv)
		}
		tb.Skipf("skipping the tests against a real Redis Cluster: %v (set %s=1 to make this a failure)", err, requireEnv)
	}
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = c.Stop() })
	return c
}

// TestCluster holds the store and the checkpointer to their contracts
// through a redis.ClusterClient on a real Redis Cluster of three masters
// on loopback: the ThreadStore conformance kit (storetest.Run, with an
// unreachable cluster and the whole cluster stalled past the client's
// ReadTimeout) and the Checkpointer kit (checkpointtest.Run, stalled
// too). Every key the store writes is in its thread's slot, as the
// servers compute it (CLUSTER KEYSLOT), and threads are spread over the
// three masters, each count on the master that serves its slot.
func TestCluster(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	cc := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: c.Addrs(), ReadTimeout: stallReadTimeout, WriteTimeout: stallReadTimeout,
	})
	t.Cleanup(func() { _ = cc.Close() })
	ctx := context.Background()

	t.Run("ThreadStore", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) guard.ThreadStore {
			return redisstore.New(cc, redisstore.WithPrefix(t.Name()+":"))
		}, storetest.WithUnreachable(func(t *testing.T) guard.ThreadStore {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			addr := l.Addr().String()
			l.Close() // nothing listens there now
			u := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{addr}, DialTimeout: time.Second, MaxRetries: -1})
			t.Cleanup(func() { _ = u.Close() })
			return redisstore.New(u)
		}), storeStall(c.Nodes...))
	})

	t.Run("Checkpointer", func(t *testing.T) {
		n := 0
		checkpointtest.Run(t, func(t *testing.T) toolstage.Checkpointer {
			n++ // each subtest its own prefix: an empty store
			return redisstore.NewCheckpointer(cc, redisstore.WithPrefix(fmt.Sprintf("cp%d:", n)))
		}, checkpointStall(c.Nodes...))
	})

	t.Run("slots", func(t *testing.T) {
		s := redisstore.New(cc)
		cp := redisstore.NewCheckpointer(cc)
		masters := map[string]int{} // address -> threads whose slot it serves
		for i := range 30 {
			thread := fmt.Sprintf("chat-%d", i)
			keys := []string{cp.Key(thread)}
			for _, k := range []guard.ThreadKey{{Thread: thread}, {Thread: thread, Tool: "search"}, {Thread: thread, Kind: guard.CountModelCalls}} {
				if _, ok, err := s.Reserve(ctx, k, 2, 5); !ok || err != nil {
					t.Fatalf("Reserve(%+v) = %v, %v", k, ok, err)
				}
				keys = append(keys, s.Key(k))
			}
			node, err := cc.MasterForKey(ctx, keys[0])
			if err != nil {
				t.Fatal(err)
			}
			masters[node.Options().Addr]++
			for _, k := range keys {
				slot, err := node.ClusterKeySlot(ctx, k).Result()
				if err != nil {
					t.Fatal(err)
				}
				if int(slot) != keySlot(keys[0]) || keySlot(k) != int(slot) {
					t.Errorf("CLUSTER KEYSLOT %s = %d, keySlot = %d; want the thread's slot %d", k, slot, keySlot(k), keySlot(keys[0]))
				}
			}
			// The count is on the master of its slot, read there
			// directly (a node answers MOVED for a key it does not serve).
			if n, err := node.Get(ctx, keys[1]).Int(); n != 2 || err != nil {
				t.Errorf("GET %s on %s = %d, %v; want 2", keys[1], node.Options().Addr, n, err)
			}
		}
		t.Logf("30 threads over the masters: %v", masters)
		if len(masters) != len(c.Nodes) {
			t.Errorf("30 threads on %d masters, want all %d", len(masters), len(c.Nodes))
		}
	})
}
