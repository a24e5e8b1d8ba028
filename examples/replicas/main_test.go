package main

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
)

// TestReplicas pins what the example shows: the shared limits stop the
// conversation at 3 searches and 5 model calls across both replicas, Redis
// holds those counts, and stores in memory let 6 searches out.
func TestReplicas(t *testing.T) {
	// The example's own startRedis, so that the directory, test included,
	// can be copied out of this repository.
	addr, stop, err := startRedis(context.Background(), t.TempDir())
	if errors.Is(err, errNoRedis) {
		if os.Getenv("TOOLGUARD_REQUIRE_REDIS") == "1" {
			t.Fatal(err)
		}
		t.Skipf("skipping: %v (set TOOLGUARD_REQUIRE_REDIS=1 to make this a failure)", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	var out strings.Builder
	if err := run(context.Background(), &out, addr); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	want := []string{
		"turn 1 -> replica A: search runs (1 so far, limit 3)",
		"turn 2 -> replica B: search runs (2 so far, limit 3)",
		"turn 3 -> replica A: search runs (3 so far, limit 3)",
		"turn 4 -> replica B: Tool call limit reached: thread limit exceeded (3/3 calls).",
		"turn 5 -> replica A: Tool call limit reached: thread limit exceeded (3/3 calls).",
		"turn 6 -> replica B: Model call limit reached: thread limit exceeded (5/5 calls).",
		"3 searches ran. Redis holds:",
		"toolguard-example:{chat-1}:model: = 5",
		"toolguard-example:{chat-1}:tool: = 3",
		"turn 6 -> replica B: search runs (6 so far, limit 3)",
		"6 searches ran: each replica counted alone.",
	}
	at := 0
	for _, w := range want {
		i := strings.Index(got[at:], w)
		if i < 0 {
			t.Fatalf("output lacks %q (in order):\n%s", w, got)
		}
		at += i + len(w)
	}
}

// Without redis-server the example says what it needs and succeeds, so CI
// can run every example anywhere.
func TestReplicasWithoutRedis(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	var out strings.Builder
	if err := start(context.Background(), &out); err != nil {
		t.Fatalf("start without redis-server = %v, want nil", err)
	}
	if got := out.String(); !strings.Contains(got, "needs redis-server on the PATH") {
		t.Errorf("start printed %q, want it to say it needs redis-server", got)
	}
}
