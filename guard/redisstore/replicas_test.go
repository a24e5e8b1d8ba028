package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/guard/redisstore"
	"github.com/toolguard/toolguard/middleware"
)

// replica is one process of a deployment: its own client, store, model and
// wrapped model, sharing nothing with the others but the Redis server.
type replica struct {
	model *searchModel
	llm   llms.Model
	store *redisstore.Store
}

func newReplica(tb testing.TB, addr string, capacity int, limiters func(*redisstore.Store) []middleware.Middleware) *replica {
	store := redisstore.New(newClient(tb, addr))
	m := newSearchModel(capacity)
	return &replica{model: m, llm: middleware.Wrap(m, limiters(store)...), store: store}
}

// outcome classifies a call's result: "passed" (the tool call left),
// "blocked" (a *LimitExceededError or a text answer) or the error.
func outcome(resp *llms.ContentResponse, err error) string {
	var le *guard.LimitExceededError
	switch {
	case errors.As(err, &le):
		return "blocked"
	case err != nil:
		return err.Error()
	case len(resp.Choices[0].ToolCalls) == 1:
		return "passed"
	}
	return "blocked"
}

// Two replicas serve alternate turns of one thread: the thread limit holds
// across them, where two in-memory stores would each allow it.
func TestTwoReplicasShareAThreadLimit(t *testing.T) {
	t.Parallel()
	srv := startRedis(t)
	limit := func(s *redisstore.Store) []middleware.Middleware {
		return []middleware.Middleware{middleware.ToolCallLimit(guard.WithThreadLimit(3), guard.WithThreadStore(s),
			guard.WithExitBehavior(guard.ExitError))}
	}
	a, b := newReplica(t, srv.Addr(), 10, limit), newReplica(t, srv.Addr(), 10, limit)
	ctx := guard.WithThread(context.Background(), "chat-7")
	var got []string
	for i := range 6 {
		r := []*replica{a, b}[i%2]
		got = append(got, outcome(r.llm.GenerateContent(guard.WithRun(ctx), question)))
	}
	want := []string{"passed", "passed", "passed", "blocked", "blocked", "blocked"}
	if !slices.Equal(got, want) {
		t.Errorf("alternate calls on two replicas = %q, want %q", got, want)
	}
	if n, err := newClient(t, srv.Addr()).Get(context.Background(), a.store.Key(guard.ThreadKey{Thread: "chat-7"})).Int(); n != 3 || err != nil {
		t.Errorf("the thread's count in Redis = %d, %v; want 3", n, err)
	}
}

// The concurrency test's sizes, quoted by the package doc.
const concurrentCalls, concurrentReplicas, concurrentLimit = 400, 4, 150

// Hundreds of concurrent calls over several replicas hit one thread: exactly
// the limit passes, and Redis holds exactly that count.
func TestConcurrentReplicasExactCount(t *testing.T) {
	t.Parallel()
	const calls, replicas, limit = concurrentCalls, concurrentReplicas, concurrentLimit
	srv := startRedis(t)
	var rs []*replica
	for range replicas {
		rs = append(rs, newReplica(t, srv.Addr(), calls, func(s *redisstore.Store) []middleware.Middleware {
			return []middleware.Middleware{middleware.ToolCallLimit(guard.WithThreadLimit(limit), guard.WithThreadStore(s),
				guard.WithExitBehavior(guard.ExitError))}
		}))
	}
	ctx := guard.WithThread(context.Background(), "hot-thread")
	var passed, blocked atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan string, calls)
	for i := range calls {
		wg.Go(func() {
			switch o := outcome(rs[i%replicas].llm.GenerateContent(guard.WithRun(ctx), question)); o {
			case "passed":
				passed.Add(1)
			case "blocked":
				blocked.Add(1)
			default:
				errs <- o
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatalf("a call failed: %s", e)
	}
	t.Logf("calls=%d replicas=%d limit=%d passed=%d blocked=%d", calls, replicas, limit, passed.Load(), blocked.Load())
	if passed.Load() != limit || blocked.Load() != calls-limit {
		t.Errorf("passed %d, blocked %d; want %d, %d", passed.Load(), blocked.Load(), limit, calls-limit)
	}
	if n, err := newClient(t, srv.Addr()).Get(context.Background(), rs[0].store.Key(guard.ThreadKey{Thread: "hot-thread"})).Int(); n != limit || err != nil {
		t.Errorf("the thread's count in Redis = %d, %v; want %d", n, err, limit)
	}
}

// A ModelCallLimit and a ToolCallLimit on one store count apart, under the
// prefix only.
func TestModelAndToolLimitsOnOneStore(t *testing.T) {
	t.Parallel()
	srv := startRedis(t)
	c := newClient(t, srv.Addr())
	store := redisstore.New(c, redisstore.WithPrefix("app1:"))
	m := newSearchModel(10)
	llm := middleware.Wrap(m,
		middleware.ModelCallLimit(guard.WithThreadLimit(4), guard.WithThreadStore(store)),
		middleware.ToolCallLimit(guard.WithToolName("search"), guard.WithThreadLimit(2), guard.WithThreadStore(store), guard.WithExitBehavior(guard.ExitEnd)),
	)
	ctx := context.Background()
	var got []string
	for _, thread := range []string{"t1", "t1", "t1", "t1", "t1", "odd}:{id"} {
		resp, err := llm.GenerateContent(guard.WithThread(ctx, thread), question)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Choices[0].ToolCalls) > 0 {
			got = append(got, "passed")
		} else {
			got = append(got, resp.Choices[0].Content)
		}
	}
	want := []string{"passed", "passed",
		"Tool call limit reached: 'search' thread limit exceeded (2/2 calls).",
		"Tool call limit reached: 'search' thread limit exceeded (2/2 calls).",
		"Model call limit reached: thread limit exceeded (4/4 calls).",
		"passed"}
	if !slices.Equal(got, want) {
		t.Errorf("answers = %q, want %q", got, want)
	}
	if m.seen() != 5 {
		t.Errorf("the model saw %d requests, want 5", m.seen())
	}
	// SCAN the whole keyspace: only the store's keys, each under the prefix:
	// the counts above, and the records of the requests that made them,
	// which expire within ReplayWindow.
	counts := map[string]string{}
	records := 0
	iter := c.Scan(ctx, 0, "*", 100).Iterator()
	for iter.Next(ctx) {
		k := iter.Val()
		if strings.Contains(k, "}:req:") {
			records++
			if ttl := c.PTTL(ctx, k).Val(); ttl <= 0 || ttl > redisstore.ReplayWindow {
				t.Errorf("request record %s expires in %v, want within ReplayWindow (%v)", k, ttl, redisstore.ReplayWindow)
			}
			continue
		}
		counts[k] = c.Get(ctx, k).Val()
	}
	if records == 0 {
		t.Error("no request records in Redis, want one per reservation")
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	wantCounts := map[string]string{
		"app1:{t1}:model:":                  "4",
		"app1:{t1}:tool:search":             "2",
		"app1:{odd%7D%3A%7Bid}:model:":      "1",
		"app1:{odd%7D%3A%7Bid}:tool:search": "1",
	}
	if fmt.Sprint(counts) != fmt.Sprint(wantCounts) {
		t.Errorf("keys in Redis = %v, want %v", counts, wantCounts)
	}
	for k := range counts {
		if !strings.HasPrefix(k, "app1:") {
			t.Errorf("key %q is not under the prefix app1:", k)
		}
	}
}

// redis-server dies mid-run: the limiters fail the call with a clear error
// (no panic, no hang past the client's timeouts), or let it through with
// WithStoreFailOpen; once it is back on the same port, calls recover
// without a new client.
func TestServerStopsMidRun(t *testing.T) {
	t.Parallel()
	srv := startRedis(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), DialTimeout: 200 * time.Millisecond, ReadTimeout: 200 * time.Millisecond, WriteTimeout: 200 * time.Millisecond, MaxRetries: 1})
	t.Cleanup(func() { _ = c.Close() })
	store := redisstore.New(c)
	var events []guard.Event
	var mu sync.Mutex
	record := guard.WithEventHandler(func(_ context.Context, e guard.Event) {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, e)
	})
	closed := middleware.Wrap(newSearchModel(10),
		middleware.ModelCallLimit(guard.WithThreadLimit(100), guard.WithThreadStore(store)),
		middleware.ToolCallLimit(guard.WithThreadLimit(100), guard.WithThreadStore(store)))
	open := middleware.Wrap(newSearchModel(10),
		middleware.ModelCallLimit(guard.WithThreadLimit(100), guard.WithThreadStore(store), guard.WithStoreFailOpen(), record),
		middleware.ToolCallLimit(guard.WithThreadLimit(100), guard.WithThreadStore(store), guard.WithStoreFailOpen(), record))
	ctx := guard.WithThread(context.Background(), "t")

	if o := outcome(closed.GenerateContent(ctx, question)); o != "passed" {
		t.Fatalf("before the stop: %s, want passed", o)
	}
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err := closed.GenerateContent(ctx, question)
	t.Logf("with the server down, the call failed after %v: %v", time.Since(start).Round(time.Millisecond), err)
	var se *guard.StoreError
	if !errors.As(err, &se) || se.Middleware != "ModelCallLimit" || !strings.Contains(err.Error(), "redisstore: reserve 1 in \"toolguard:{t}:model:\"") {
		t.Errorf("with the server down: %v, want a *StoreError from ModelCallLimit naming the key", err)
	}
	if o := outcome(open.GenerateContent(ctx, question)); o != "passed" {
		t.Errorf("with the server down, failing open: %s, want passed", o)
	}
	mu.Lock()
	var kinds []string
	for _, e := range events {
		kinds = append(kinds, e.Middleware+":"+string(e.Kind))
	}
	mu.Unlock()
	if want := []string{"ModelCallLimit:store_error", "ToolCallLimit:store_error"}; !slices.Equal(kinds, want) {
		t.Errorf("events failing open = %q, want %q", kinds, want)
	}

	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	// go-redis redials a dead server in the background, about once a
	// second: calls recover within a few seconds, on the same client.
	deadline := time.Now().Add(15 * time.Second)
	for {
		last := outcome(closed.GenerateContent(ctx, question))
		if last == "passed" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("15s after the restart: %s, want passed", last)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n, err := c.Get(context.Background(), store.Key(guard.ThreadKey{Thread: "t"})).Int(); n != 1 || err != nil {
		t.Errorf("the count after the restart = %d, %v; want 1 (the restarted server kept nothing)", n, err)
	}
}
