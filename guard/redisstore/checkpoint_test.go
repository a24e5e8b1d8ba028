package redisstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/toolguard/toolguard/guard/redisstore"
	"github.com/toolguard/toolguard/toolstage"
	"github.com/toolguard/toolguard/toolstage/checkpointtest"
)

// The Checkpointer keeps the contract of toolstage.Checkpointer against a real
// redis-server, and a Stage's interrupt kept in it is resumed exactly once
// by other Stage values; on unix, the server also stalls with SIGSTOP
// across stallFor, past the client's ReadTimeout.
func TestCheckpointer(t *testing.T) {
	srv := startRedis(t)
	c := stallClient(t, srv.Addr())
	n := 0
	checkpointtest.Run(t, func(t *testing.T) toolstage.Checkpointer {
		n++ // each subtest its own prefix: an empty store
		return redisstore.NewCheckpointer(c, redisstore.WithPrefix(fmt.Sprintf("cp%d:", n)))
	}, checkpointStall(srv))
}

// The kit's fault scenarios (checkpointtest.RunFaults: a failed or lost
// save or load at each of a Stage's reads and writes) hold on the Redis
// Checkpointer: no call that ran is forgotten, no approved call runs twice.
func TestCheckpointerFaults(t *testing.T) {
	srv := startRedis(t)
	c := newClient(t, srv.Addr())
	n := 0
	checkpointtest.RunFaults(t, func(*testing.T) toolstage.Checkpointer {
		n++ // each scenario its own prefix: an empty store
		return redisstore.NewCheckpointer(c, redisstore.WithPrefix(fmt.Sprintf("faults%d:", n)))
	})
}

func TestCheckpointerKeyAndTTL(t *testing.T) {
	srv := startRedis(t)
	client := newClient(t, srv.Addr())
	cp := redisstore.NewCheckpointer(client, redisstore.WithTTL(time.Hour))
	if got, want := cp.Key("chat:42}"), "toolguard:{chat%3A42%7D}:checkpoint"; got != want {
		t.Errorf("Key = %q, want %q", got, want)
	}
	ctx := context.Background()
	if ok, err := cp.Save(ctx, "chat:42}", 0, []byte("s")); !ok || err != nil {
		t.Fatalf("Save = %v, %v", ok, err)
	}
	ttl, err := client.PTTL(ctx, cp.Key("chat:42}")).Result()
	if err != nil || ttl <= 0 || ttl > time.Hour {
		t.Errorf("PTTL = %v, %v; want within an hour", ttl, err)
	}
}

func TestCheckpointerServerDown(t *testing.T) {
	srv := startRedis(t)
	client := newClient(t, srv.Addr())
	cp := redisstore.NewCheckpointer(client)
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, _, err := cp.Load(ctx, "t"); err == nil {
		t.Error("Load with the server down: no error")
	}
	if _, err := cp.Save(ctx, "t", 0, []byte("s")); err == nil {
		t.Error("Save with the server down: no error")
	}
}
