package redisstore_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/guard/redisstore"
)

// TestCluster runs the store and the checkpointer through a
// redis.ClusterClient against a one-node Redis Cluster that serves every
// slot: Redis refuses a script whose keys span slots even on one node (a
// count or a checkpoint and its request's record), and every key of a
// thread hashes to one slot (CLUSTER KEYSLOT, computed by the server).
func TestCluster(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	srv := startRedis(t, "--cluster-enabled", "yes", "--cluster-config-file", filepath.Join(dir, "nodes.conf"))
	ctx := context.Background()
	admin := newClient(t, srv.Addr())
	if err := admin.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", 0, 16383).Err(); err != nil {
		t.Fatalf("CLUSTER ADDSLOTSRANGE: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(admin.ClusterInfo(ctx).Val(), "cluster_state:ok") {
		if time.Now().After(deadline) {
			t.Fatalf("cluster not ok after 10s: %s", admin.ClusterInfo(ctx).Val())
		}
		time.Sleep(10 * time.Millisecond)
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{srv.Addr()}, DialTimeout: time.Second, ReadTimeout: time.Second})
	t.Cleanup(func() { _ = cc.Close() })
	s := redisstore.New(cc)
	cp := redisstore.NewCheckpointer(cc)

	for _, thread := range []string{"chat-42", "a}b{c", "{x}", ""} {
		keys := []guard.ThreadKey{
			{Thread: thread},
			{Thread: thread, Tool: "search"},
			{Thread: thread, Tool: "weather"},
			{Thread: thread, Kind: guard.CountModelCalls},
		}
		var slots []int64
		for _, k := range keys {
			slot, err := admin.ClusterKeySlot(ctx, s.Key(k)).Result()
			if err != nil {
				t.Fatal(err)
			}
			slots = append(slots, slot)
			if count, ok, err := s.Reserve(ctx, k, 1, 1); count != 0 || !ok || err != nil {
				t.Errorf("cluster Reserve(%+v) = %d, %v, %v; want 0, true, nil", k, count, ok, err)
			}
			if _, ok, _ := s.Reserve(ctx, k, 1, 1); ok {
				t.Errorf("cluster Reserve(%+v) passed a full limit", k)
			}
			if err := s.Release(ctx, k, 1); err != nil {
				t.Errorf("cluster Release(%+v) = %v", k, err)
			}
		}
		// A save's compare-and-set and its request's record share the
		// thread's slot too.
		if ok, err := cp.Save(ctx, thread, 0, []byte("state")); !ok || err != nil {
			t.Errorf("cluster Save(%q, 0) = %v, %v; want true, nil", thread, ok, err)
		}
		if state, v, err := cp.Load(ctx, thread); string(state) != "state" || v != 1 || err != nil {
			t.Errorf("cluster Load(%q) = %q, %d, %v; want \"state\", 1, nil", thread, state, v, err)
		}
		for _, slot := range slots[1:] {
			if slot != slots[0] {
				t.Errorf("thread %q: keys in slots %v, want one slot", thread, slots)
				break
			}
		}
	}
}
