package redisstore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/guard/redisstore"
)

func TestKeyLayout(t *testing.T) {
	t.Parallel()
	c := redis.NewClient(&redis.Options{}) // never dialled
	defer c.Close()
	s := redisstore.New(c)
	for _, tc := range []struct {
		key  guard.ThreadKey
		want string
	}{
		{guard.ThreadKey{Thread: "chat-42"}, "toolguard:{chat-42}:tool:"},
		{guard.ThreadKey{Thread: "chat-42", Tool: "search"}, "toolguard:{chat-42}:tool:search"},
		{guard.ThreadKey{Thread: "chat-42", Kind: guard.CountModelCalls}, "toolguard:{chat-42}:model:"},
		{guard.ThreadKey{Thread: "a}b{c"}, "toolguard:{a%7Db%7Bc}:tool:"},
		{guard.ThreadKey{Thread: "x}:model:"}, "toolguard:{x%7D%3Amodel%3A}:tool:"},
		{guard.ThreadKey{Thread: "100%"}, "toolguard:{100%25}:tool:"},
		{guard.ThreadKey{Thread: "t", Tool: "a:b}"}, "toolguard:{t}:tool:a:b}"},
		{guard.ThreadKey{Thread: "t", Kind: "tool"}, "toolguard:{t}:xtool:"},
		{guard.ThreadKey{Thread: ""}, "toolguard:{%}:tool:"}, // {} would be no hash tag
		{guard.ThreadKey{Thread: "%"}, "toolguard:{%25}:tool:"},
	} {
		if got := s.Key(tc.key); got != tc.want {
			t.Errorf("Key(%+v) = %q, want %q", tc.key, got, tc.want)
		}
	}
}

func TestOptionsPanic(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		f    func()
		want string
	}{
		{"prefix with a brace", func() { redisstore.WithPrefix("a{b") }, `redisstore: WithPrefix("a{b")`},
		{"zero TTL", func() { redisstore.WithTTL(0) }, "redisstore: WithTTL(0s)"},
		{"nil client", func() { redisstore.New(nil) }, "redisstore: New(nil)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			defer func() {
				if msg, _ := recover().(string); !strings.HasPrefix(msg, tc.want) {
					t.Errorf("%s panicked with %q, want a message starting %q", tc.name, msg, tc.want)
				}
			}()
			tc.f()
		})
	}
}

// TestReserveRelease runs the scripts against a real server: check and
// add, refuse over the limit, the count before, and no count below 0.
func TestReserveRelease(t *testing.T) {
	t.Parallel()
	srv := startRedis(t)
	c := newClient(t, srv.Addr())
	s := redisstore.New(c)
	ctx := context.Background()
	key := guard.ThreadKey{Thread: "t", Tool: "search"}
	type step struct {
		op              string // "reserve" or "release"
		n, limit        int
		wantCount       int
		wantOK          bool
		wantStoredAfter int
	}
	for i, st := range []step{
		{"reserve", 2, 3, 0, true, 2},
		{"reserve", 2, 3, 2, false, 2},
		{"reserve", 1, 3, 2, true, 3},
		{"reserve", 0, 3, 3, true, 3},
		{"release", 1, 0, 0, false, 2},
		{"release", 5, 0, 0, false, 0},
		{"release", 1, 0, 0, false, 0},
		{"reserve", 3, 3, 0, true, 3},
	} {
		switch st.op {
		case "reserve":
			count, ok, err := s.Reserve(ctx, key, st.n, st.limit)
			if err != nil || count != st.wantCount || ok != st.wantOK {
				t.Fatalf("step %d: Reserve(%d, %d) = %d, %v, %v; want %d, %v, nil", i, st.n, st.limit, count, ok, err, st.wantCount, st.wantOK)
			}
		case "release":
			if err := s.Release(ctx, key, st.n); err != nil {
				t.Fatalf("step %d: Release(%d) = %v", i, st.n, err)
			}
		}
		got, err := c.Get(ctx, s.Key(key)).Int()
		if err == redis.Nil {
			got, err = 0, nil
		}
		if err != nil || got != st.wantStoredAfter {
			t.Fatalf("step %d (%s %d): GET = %d, %v; want %d", i, st.op, st.n, got, err, st.wantStoredAfter)
		}
	}
}

// TestTTL: a count lives WithTTL after its last change, and each change
// renews it.
func TestTTL(t *testing.T) {
	t.Parallel()
	srv := startRedis(t)
	c := newClient(t, srv.Addr())
	ctx := context.Background()
	key := guard.ThreadKey{Thread: "t"}

	long := redisstore.New(c, redisstore.WithTTL(time.Hour))
	if _, _, err := long.Reserve(ctx, key, 1, 10); err != nil {
		t.Fatal(err)
	}
	k := long.Key(key)
	if ttl := c.PTTL(ctx, k).Val(); ttl <= 59*time.Minute || ttl > time.Hour {
		t.Fatalf("PTTL after Reserve = %v, want about 1h", ttl)
	}
	for _, change := range []func() error{
		func() error { _, _, err := long.Reserve(ctx, key, 1, 10); return err },
		func() error { return long.Release(ctx, key, 1) },
	} {
		c.PExpire(ctx, k, time.Minute) // as if an hour less a minute had passed
		if err := change(); err != nil {
			t.Fatal(err)
		}
		if ttl := c.PTTL(ctx, k).Val(); ttl <= 59*time.Minute {
			t.Fatalf("PTTL after a change = %v, want it renewed to about 1h", ttl)
		}
	}

	short := redisstore.New(c, redisstore.WithPrefix("short:"), redisstore.WithTTL(50*time.Millisecond))
	if _, _, err := short.Reserve(ctx, key, 2, 2); err != nil {
		t.Fatal(err)
	}
	// Poll until Redis expires the key, with a deadline, not a fixed sleep.
	deadline := time.Now().Add(10 * time.Second)
	for c.Exists(ctx, short.Key(key)).Val() == 1 {
		if time.Now().After(deadline) {
			t.Fatalf("%s still exists 10s after a TTL of 50ms", short.Key(key))
		}
		time.Sleep(5 * time.Millisecond)
	}
	if count, ok, err := short.Reserve(ctx, key, 2, 2); count != 0 || !ok || err != nil {
		t.Errorf("Reserve after expiry = %d, %v, %v; want 0, true, nil", count, ok, err)
	}
}
