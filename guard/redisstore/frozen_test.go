//go:build unix

package redisstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/guard/redisstore"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/fakemodel"
)

// TestFrozenServerHonoursDeadline: against a redis-server frozen with
// SIGSTOP (a hung server: it keeps its connections and answers nothing), a
// limiter's store call returns when the caller's deadline passes, although
// the client's own timeouts are an hour and go-redis ignores context
// deadlines (ContextTimeoutEnabled is off). Without the store's own wait,
// the call would return after the client's ReadTimeout. Once the server is
// thawed, the reservation the late script made is released again.
func TestFrozenServerHonoursDeadline(t *testing.T) {
	srv := startRedis(t)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr(), ReadTimeout: time.Hour, WriteTimeout: time.Hour, MaxRetries: -1})
	t.Cleanup(func() { _ = client.Close() })
	store := redisstore.New(client)
	key := guard.ThreadKey{Thread: "frozen", Kind: guard.CountModelCalls}
	if _, _, err := store.Reserve(context.Background(), key, 0, 10); err != nil { // connect, load the script
		t.Fatal(err)
	}
	if err := srv.Freeze(); err != nil {
		t.Fatal(err)
	}
	thawed := false
	thaw := func() {
		if !thawed {
			thawed = true
			if err := srv.Thaw(); err != nil {
				t.Error(err)
			}
		}
	}
	t.Cleanup(thaw)

	llm := middleware.Wrap(fakemodel.New(fakemodel.Text("never")),
		middleware.ModelCallLimit(guard.WithThreadLimit(10), guard.WithThreadStore(store)))
	ctx, cancel := context.WithTimeout(guard.WithThread(context.Background(), "frozen"), 200*time.Millisecond)
	defer cancel()
	type result struct {
		err  error
		took time.Duration
	}
	done := make(chan result, 1)
	go func() {
		start := time.Now()
		_, err := llm.GenerateContent(ctx, []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "hi")})
		done <- result{err, time.Since(start)}
	}()
	var r result
	select {
	case r = <-done:
	case <-time.After(time.Minute): // a guard against hanging for the client's hour, not a measurement
		thaw()
		t.Fatal("the model call did not return while the server was frozen: the caller's deadline was ignored")
	}
	t.Logf("frozen server, 200ms deadline: the call returned after %v: %v", r.took.Round(time.Millisecond), r.err)
	var se *guard.StoreError
	if !errors.Is(r.err, context.DeadlineExceeded) || !errors.As(r.err, &se) {
		t.Errorf("error = %v, want a *guard.StoreError wrapping context.DeadlineExceeded", r.err)
	}

	// Thawed, the server runs the late script; its reservation is undone.
	thaw()
	k := store.Key(key)
	for deadline := time.Now().Add(30 * time.Second); ; {
		n, err := client.Get(context.Background(), k).Int()
		if errors.Is(err, redis.Nil) || (err == nil && n == 0) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("count of %s = %d, %v after the server was thawed; want the late reservation released", k, n, err)
		}
	}
}
