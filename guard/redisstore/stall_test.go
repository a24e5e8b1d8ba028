//go:build unix

package redisstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/guard/redisstore"
	"github.com/toolguard/toolguard/guard/redisstore/redisserver"
	"github.com/toolguard/toolguard/guard/storetest"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/fakemodel"
	"github.com/toolguard/toolguard/toolstage/checkpointtest"
)

// stall freezes srv now and thaws it after d, in the background. The
// returned channel is closed once it is thawed; the test's cleanup waits
// for that.
func stall(tb testing.TB, srv *redisserver.Server, d time.Duration) <-chan struct{} {
	tb.Helper()
	if err := srv.Freeze(); err != nil {
		tb.Fatal(err)
	}
	thawed := make(chan struct{})
	time.AfterFunc(d, func() {
		defer close(thawed)
		if err := srv.Thaw(); err != nil {
			tb.Error(err)
		}
	})
	tb.Cleanup(func() { <-thawed })
	return thawed
}

// storeStall and checkpointStall are the conformance kits' WithStall for
// srvs (one server, or every node of a cluster): SIGSTOP, then SIGCONT,
// across stallFor.
func storeStall(srvs ...*redisserver.Server) storetest.Option {
	return storetest.WithStall(freezer(srvs), stallFor)
}

func checkpointStall(srvs ...*redisserver.Server) checkpointtest.Option {
	return checkpointtest.WithStall(freezer(srvs), stallFor)
}

func freezer(srvs []*redisserver.Server) func(t *testing.T) (thaw func()) {
	return func(t *testing.T) func() {
		for _, srv := range srvs {
			if err := srv.Freeze(); err != nil {
				t.Fatal(err)
			}
		}
		return func() {
			for _, srv := range srvs {
				if err := srv.Thaw(); err != nil {
					t.Error(err)
				}
			}
		}
	}
}

// rawCount reads key's count straight from the server.
func rawCount(tb testing.TB, client *redis.Client, store *redisstore.Store, key guard.ThreadKey) int {
	tb.Helper()
	n, err := client.Get(context.Background(), store.Key(key)).Int()
	if errors.Is(err, redis.Nil) {
		return 0
	}
	if err != nil {
		tb.Fatalf("GET %s: %v", store.Key(key), err)
	}
	return n
}

// A Reserve in flight across a stall adds its calls once: the client's
// retry of the script must not add them again.
func TestStallReserveRunsOnce(t *testing.T) {
	t.Parallel()
	srv := startRedis(t)
	client := stallClient(t, srv.Addr())
	store := redisstore.New(client)
	key := guard.ThreadKey{Thread: "stall-reserve", Kind: guard.CountModelCalls}
	ctx := context.Background()
	if _, _, err := store.Reserve(ctx, key, 0, 10); err != nil { // connect, load the script
		t.Fatal(err)
	}

	stall(t, srv, stallFor)
	before, ok, err := store.Reserve(ctx, key, 1, 10)
	t.Logf("Reserve(1) across a %v stall (ReadTimeout %v) = %d, %v, %v", stallFor, stallReadTimeout, before, ok, err)
	if err != nil || !ok || before != 0 {
		t.Errorf("Reserve(1) across the stall = %d, %v, %v; want 0, true, nil", before, ok, err)
	}
	if got := rawCount(t, client, store, key); got != 1 {
		t.Errorf("count after one Reserve(1) across the stall = %d, want 1", got)
	}
}

// A Release in flight across a stall subtracts its calls once.
func TestStallReleaseRunsOnce(t *testing.T) {
	t.Parallel()
	srv := startRedis(t)
	client := stallClient(t, srv.Addr())
	store := redisstore.New(client)
	key := guard.ThreadKey{Thread: "stall-release"}
	ctx := context.Background()
	if _, ok, err := store.Reserve(ctx, key, 4, 10); err != nil || !ok {
		t.Fatalf("Reserve(4) = %v, %v", ok, err)
	}
	if err := store.Release(ctx, key, 0); err != nil { // load the script
		t.Fatal(err)
	}

	stall(t, srv, stallFor)
	err := store.Release(ctx, key, 1)
	got := rawCount(t, client, store, key)
	t.Logf("Release(1) from 4 across a %v stall (ReadTimeout %v) = %v; count after: %d", stallFor, stallReadTimeout, err, got)
	if err != nil {
		t.Fatalf("Release(1) across the stall = %v, want nil", err)
	}
	if got != 3 {
		t.Errorf("count after one Release(1) from 4 across the stall = %d, want 3", got)
	}
}

// A Save in flight across a stall reports its own write as saved: the
// client's retry of the compare-and-set must not find the version it just
// wrote and call it a conflict. Load then reads the write back.
func TestStallSaveNoFalseConflict(t *testing.T) {
	t.Parallel()
	srv := startRedis(t)
	cp := redisstore.NewCheckpointer(stallClient(t, srv.Addr()))
	ctx := context.Background()
	if ok, err := cp.Save(ctx, "stall-save", 0, []byte("v1")); !ok || err != nil {
		t.Fatalf("Save(0) = %v, %v", ok, err)
	}

	stall(t, srv, stallFor)
	saved, err := cp.Save(ctx, "stall-save", 1, []byte("v2"))
	state, v, lerr := cp.Load(ctx, "stall-save")
	t.Logf("Save(version 1) across a %v stall (ReadTimeout %v) = %v, %v; Load after: %q, version %d, %v",
		stallFor, stallReadTimeout, saved, err, state, v, lerr)
	if lerr != nil {
		t.Fatal(lerr)
	}
	if string(state) != "v2" || v != 2 {
		t.Fatalf("Load after the save = %q, version %d; want \"v2\", 2", state, v)
	}
	if err == nil && !saved {
		t.Errorf("Save(version 1) across the stall = false (a conflict), but its own write is stored: a false conflict")
	}
}

// errProvider is a model call that fails.
var errProvider = errors.New("provider: 503")

// modelCalls calls llm on thread until ModelCallLimit blocks a call (or
// 10 calls), and returns how many were answered by the model. Each call's
// context has no deadline, so the client's retries run their course.
func modelCalls(t *testing.T, llm llms.Model, thread string) (answered int) {
	t.Helper()
	ctx := guard.WithThread(context.Background(), thread)
	for range 10 {
		_, err := llm.GenerateContent(ctx, []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "hi")})
		var le *guard.LimitExceededError
		switch {
		case err == nil:
			answered++
		case errors.As(err, &le):
			return answered
		case errors.Is(err, errProvider):
		default:
			t.Fatalf("model call: %v", err)
		}
	}
	t.Fatalf("ModelCallLimit blocked none of 10 calls")
	return answered
}

// ModelCallLimit with a thread limit of 3 lets exactly 3 model calls
// through when the first call's reservation is in flight across a stall.
func TestStallModelCallLimitReserve(t *testing.T) {
	t.Parallel()
	srv := startRedis(t)
	store := redisstore.New(stallClient(t, srv.Addr()))
	if _, _, err := store.Reserve(context.Background(), guard.ThreadKey{Thread: "warm-up"}, 0, 1); err != nil {
		t.Fatal(err)
	}
	model := fakemodel.New()
	for range 10 {
		model.Append(fakemodel.Text("answer"))
	}
	llm := middleware.Wrap(model, middleware.ModelCallLimit(guard.WithThreadLimit(3),
		guard.WithThreadStore(store), guard.WithExitBehavior(guard.ExitError)))

	stall(t, srv, stallFor) // the first call's reservation waits across it
	answered := modelCalls(t, llm, "stall-mcl-reserve")
	t.Logf("thread limit 3, first reservation across a %v stall: %d model calls answered, %d requests reached the model",
		stallFor, answered, len(model.Requests()))
	if answered != 3 {
		t.Errorf("ModelCallLimit(WithThreadLimit(3)) let %d model calls through, want exactly 3", answered)
	}
}

// ModelCallLimit with a thread limit of 3 lets exactly 3 model calls
// through when the release of a failed call is in flight across a stall:
// the model fails, and the server freezes, between the reservation and
// the release.
func TestStallModelCallLimitRelease(t *testing.T) {
	t.Parallel()
	srv := startRedis(t)
	store := redisstore.New(stallClient(t, srv.Addr()))
	if err := store.Release(context.Background(), guard.ThreadKey{Thread: "warm-up"}, 0); err != nil {
		t.Fatal(err)
	}
	model := fakemodel.New(
		fakemodel.Text("answer 1"),
		fakemodel.Func(func(context.Context, []llms.MessageContent, llms.CallOptions) (*llms.ContentResponse, error) {
			stall(t, srv, stallFor) // the release of this failed call waits across it
			return nil, errProvider
		}),
	)
	for range 10 {
		model.Append(fakemodel.Text("answer"))
	}
	llm := middleware.Wrap(model, middleware.ModelCallLimit(guard.WithThreadLimit(3),
		guard.WithThreadStore(store), guard.WithExitBehavior(guard.ExitError)))

	answered := modelCalls(t, llm, "stall-mcl-release")
	t.Logf("thread limit 3, the failed call's release across a %v stall: %d model calls answered, %d requests reached the model",
		stallFor, answered, len(model.Requests()))
	if answered != 3 {
		t.Errorf("ModelCallLimit(WithThreadLimit(3)) let %d model calls through, want exactly 3", answered)
	}
}

// A Reserve whose caller stops waiting during a stall returns an error,
// and leaves no count behind: the script still runs when the server wakes
// (the client sent it, maybe twice), and the store takes its calls back,
// or keeps it from adding them.
func TestStallAbandonedReserveTakenBack(t *testing.T) {
	t.Parallel()
	srv := startRedis(t)
	client := stallClient(t, srv.Addr())
	store := redisstore.New(client)
	key := guard.ThreadKey{Thread: "stall-abandon"}
	if _, _, err := store.Reserve(context.Background(), key, 0, 10); err != nil {
		t.Fatal(err)
	}

	thawed := stall(t, srv, stallFor)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, ok, err := store.Reserve(ctx, key, 1, 10)
	if !errors.Is(err, context.DeadlineExceeded) || ok {
		t.Fatalf("Reserve with a 100ms deadline across the stall = %v, %v; want false and the deadline's error", ok, err)
	}
	<-thawed
	// The request's record says when the store has dealt with it: "x" (it
	// never ran, and never will) or "... abandoned" (its calls were taken
	// back). Wait for that, then read the count.
	settled := func() bool {
		recs, err := client.Keys(context.Background(), "toolguard:{stall-abandon}:req:*").Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range recs {
			if v := client.Get(context.Background(), k).Val(); v == "x" || strings.HasSuffix(v, " abandoned") {
				return true
			}
		}
		return false
	}
	for deadline := time.Now().Add(10 * time.Second); !settled(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			recs := client.Keys(context.Background(), "toolguard:{stall-abandon}:*").Val()
			for _, k := range recs {
				t.Logf("%s = %q", k, client.Get(context.Background(), k).Val())
			}
			t.Fatalf("10s after the thaw the abandoned request is not settled; count = %d, want 0", rawCount(t, client, store, key))
		}
	}
	if got := rawCount(t, client, store, key); got != 0 {
		t.Errorf("count = %d after the abandoned Reserve(1) settled, want 0", got)
	}
}
