package redisstore_test

import (
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/guard/redisstore"
	"github.com/toolguard/toolguard/guard/storetest"
)

// TestConformance runs the ThreadStore conformance kit on the Redis store,
// against a real redis-server, each check under a key prefix of its own;
// the unreachable store's client points at a closed loopback port, and the
// server stalls (on unix) with SIGSTOP across stallFor, past the client's
// ReadTimeout.
func TestConformance(t *testing.T) {
	t.Parallel()
	srv := startRedis(t)
	client := stallClient(t, srv.Addr())
	storetest.Run(t, func(t *testing.T) guard.ThreadStore {
		return redisstore.New(client, redisstore.WithPrefix(t.Name()+":"))
	}, storetest.WithUnreachable(func(t *testing.T) guard.ThreadStore {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close() // nothing listens there now
		c := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: time.Second, MaxRetries: -1})
		t.Cleanup(func() { _ = c.Close() })
		return redisstore.New(c)
	}), storeStall(srv))
}
