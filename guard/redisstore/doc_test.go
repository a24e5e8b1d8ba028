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

// TestDocClaims: what the package doc says about the store is what the
// code and its tests do.
func TestDocClaims(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	readme := strings.Join(strings.Fields(strings.ReplaceAll(string(raw), "//", "")), " ")
	c := redis.NewClient(&redis.Options{}) // never dialled
	defer c.Close()
	s := redisstore.New(c)
	for _, claim := range []string{
		fmt.Sprintf("%d concurrent calls over %d replicas against a thread limit of %d let exactly %d out (TestConcurrentReplicasExactCount)",
			concurrentCalls, concurrentReplicas, concurrentLimit, concurrentLimit),
		s.Key(guard.ThreadKey{Thread: "chat-42", Tool: "search"}) + " its calls of search",
		s.Key(guard.ThreadKey{Thread: "chat-42", Kind: guard.CountModelCalls}) + " its model calls",
		fmt.Sprintf("Counts expire %d h after their last change", int(redisstore.DefaultTTL/time.Hour)),
		"guard.WithStoreFailOpen()",
		"TOOLGUARD_REQUIRE_REDIS=1",
		"TestScriptKeysOneSlot",
		"(redisserver.StartCluster)",
	} {
		if !strings.Contains(readme, claim) {
			t.Errorf("doc.go does not say %q", claim)
		}
	}
}
