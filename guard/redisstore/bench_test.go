package redisstore_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/guard/redisstore"
	"github.com/toolguard/toolguard/middleware"
)

// BenchmarkToolCallLimit is one model call through a ToolCallLimit with a
// thread limit, its count kept in Redis (a loopback redis-server) or in a
// MemoryThreadStore: what the shared store adds per call.
func BenchmarkToolCallLimit(b *testing.B) {
	redisStore := func(b *testing.B) guard.ThreadStore {
		return redisstore.New(newClient(b, startRedis(b).Addr()))
	}
	for _, tc := range []struct {
		name     string
		store    func(b *testing.B) guard.ThreadStore
		deadline bool // the call's context has a deadline: the store waits on it too
	}{
		{"store=memory", func(*testing.B) guard.ThreadStore { return guard.NewMemoryThreadStore(1000) }, false},
		{"store=redis", redisStore, false},
		{"store=redis,deadline", redisStore, true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			llm := middleware.Wrap(newSearchModel(0), middleware.ToolCallLimit(
				guard.WithThreadLimit(1<<40), guard.WithThreadStore(tc.store(b))))
			ctx := guard.WithThread(context.Background(), "bench")
			if tc.deadline {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, time.Hour)
				defer cancel()
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := llm.GenerateContent(ctx, question); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRedisStoreParallel: 64 goroutines make model calls through
// ToolCallLimits sharing one Redis-backed store and one thread (one hot
// key, the worst case); calls/s is the throughput of the whole.
func BenchmarkRedisStoreParallel(b *testing.B) {
	const goroutines = 64
	store := redisstore.New(newClient(b, startRedis(b).Addr()))
	llm := middleware.Wrap(newSearchModel(0), middleware.ToolCallLimit(
		guard.WithThreadLimit(1<<40), guard.WithThreadStore(store)))
	ctx := guard.WithThread(context.Background(), "bench")
	b.SetParallelism((goroutines + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := llm.GenerateContent(ctx, question); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
}
