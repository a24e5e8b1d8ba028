package redisserver_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/toolguard/toolguard/guard/redisstore/redisserver"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// ping sends PING over a raw connection and returns the reply line.
func ping(addr string) (string, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return strings.TrimSpace(line), err
}

func TestStartStopRestart(t *testing.T) {
	s, err := redisserver.Start(t.TempDir())
	if errors.Is(err, redisserver.ErrNotFound) {
		if os.Getenv("TOOLGUARD_REQUIRE_REDIS") == "1" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	if got, err := ping(s.Addr()); got != "+PONG" {
		t.Fatalf("PING %s = %q, %v; want +PONG", s.Addr(), got, err)
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := ping(s.Addr()); err == nil {
		t.Fatalf("PING %s after Stop succeeded, want a refused connection", s.Addr())
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	if got, err := ping(s.Addr()); got != "+PONG" {
		t.Fatalf("PING %s after Restart = %q, %v; want +PONG", s.Addr(), got, err)
	}
}

// A cluster of three masters serves every slot, a third each (CLUSTER
// SHARDS): keys of many slots are written through a cluster client, each
// on the master of its slot, and the URL parses as go-redis's cluster
// URL of every node.
func TestStartCluster(t *testing.T) {
	c, err := redisserver.StartCluster(t.TempDir(), 3)
	if errors.Is(err, redisserver.ErrNotFound) {
		if os.Getenv("TOOLGUARD_REQUIRE_REDIS") == "1" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	opts, err := redis.ParseClusterURL(c.URL())
	if err != nil || !slices.Equal(opts.Addrs, c.Addrs()) {
		t.Fatalf("ParseClusterURL(%q) = %v, %v; want the addresses %v", c.URL(), opts, err, c.Addrs())
	}
	cc := redis.NewClusterClient(opts)
	defer cc.Close()
	ctx := context.Background()
	shards, err := cc.ClusterShards(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	owners := map[string]int{} // master address -> slots it serves
	for _, sh := range shards {
		if len(sh.Nodes) != 1 || sh.Nodes[0].Role != "master" {
			t.Errorf("CLUSTER SHARDS: a shard of nodes %+v, want one master", sh.Nodes)
			continue
		}
		for _, r := range sh.Slots {
			owners[net.JoinHostPort(sh.Nodes[0].IP, fmt.Sprint(sh.Nodes[0].Port))] += int(r.End - r.Start + 1)
		}
	}
	want := map[string]int{c.Addrs()[0]: 5461, c.Addrs()[1]: 5461, c.Addrs()[2]: 5462}
	if !maps.Equal(owners, want) {
		t.Errorf("CLUSTER SLOTS: slots per node %v, want %v", owners, want)
	}
	used := map[string]bool{}
	for i := range 30 {
		key := fmt.Sprintf("k%d", i)
		if err := cc.Set(ctx, key, i, 0).Err(); err != nil {
			t.Fatalf("SET %s: %v", key, err)
		}
		node, err := cc.MasterForKey(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if n, err := node.Exists(ctx, key).Result(); n != 1 || err != nil {
			t.Errorf("EXISTS %s on %s = %d, %v; want 1", key, node.Options().Addr, n, err)
		}
		used[node.Options().Addr] = true
	}
	if len(used) != 3 {
		t.Errorf("30 keys landed on %d nodes, want 3", len(used))
	}
}
