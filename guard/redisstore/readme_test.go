package redisstore_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/guard/redisstore"
)

// TestReadmeClaims: what the README's "Running on several replicas" says
// about the store is what the code and its tests do.
func TestReadmeClaims(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := strings.Join(strings.Fields(string(raw)), " ")
	c := redis.NewClient(&redis.Options{}) // never dialled
	defer c.Close()
	s := redisstore.New(c)
	for _, claim := range []string{
		fmt.Sprintf("%d concurrent calls over %d replicas against a thread limit of %d let exactly %d out (`TestConcurrentReplicasExactCount`)",
			concurrentCalls, concurrentReplicas, concurrentLimit, concurrentLimit),
		"Keys are `" + s.Key(guard.ThreadKey{Thread: "<thread>", Tool: "<tool>"}) + "`",
		"and `" + s.Key(guard.ThreadKey{Thread: "<thread>", Kind: guard.CountModelCalls}) + "`",
		fmt.Sprintf("Counts expire %d h after their last change", int(redisstore.DefaultTTL/time.Hour)),
		"`guard.WithStoreFailOpen()`",
		"`TOOLGUARD_REQUIRE_REDIS=1`",
	} {
		if !strings.Contains(readme, claim) {
			t.Errorf("README.md does not say %q", claim)
		}
	}
}
