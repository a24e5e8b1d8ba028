package guard_test

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/guard/storetest"
)

func TestMemoryThreadStore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	key := func(s string) guard.ThreadKey { return guard.ThreadKey{Thread: s} }
	reserve := func(s *guard.MemoryThreadStore, k string, n, limit int) string {
		count, ok, err := s.Reserve(ctx, key(k), n, limit)
		return fmt.Sprint(count, ok, err)
	}

	t.Run("reserve is check and add", func(t *testing.T) {
		t.Parallel()
		s := guard.NewMemoryThreadStore(10)
		for i, want := range []string{"0 true <nil>", "2 true <nil>", "3 false <nil>"} {
			n := []int{2, 1, 1}[i]
			if got := reserve(s, "a", n, 3); got != want {
				t.Errorf("Reserve #%d(n=%d, limit=3) = %s, want %s", i+1, n, got, want)
			}
		}
		s.Release(ctx, key("a"), 1)
		if got := s.Count(key("a")); got != 2 {
			t.Errorf("Count after Release(1) = %d, want 2", got)
		}
		s.Release(ctx, key("a"), 5)
		if got, n := s.Count(key("a")), s.Len(); got != 0 || n != 0 {
			t.Errorf("after releasing everything: Count = %d, Len = %d; want 0, 0", got, n)
		}
	})
	t.Run("bounded, least recently used goes first", func(t *testing.T) {
		t.Parallel()
		s := guard.NewMemoryThreadStore(2)
		reserve(s, "a", 1, 9)
		reserve(s, "b", 1, 9)
		reserve(s, "a", 1, 9) // a is now the most recently used
		reserve(s, "c", 1, 9) // evicts b
		got := map[string]int{"a": s.Count(key("a")), "b": s.Count(key("b")), "c": s.Count(key("c"))}
		if want := map[string]int{"a": 2, "b": 0, "c": 1}; !reflect.DeepEqual(got, want) || s.Len() != 2 {
			t.Errorf("counts = %v (Len %d), want %v (Len 2)", got, s.Len(), want)
		}
	})
	t.Run("zero value", func(t *testing.T) {
		t.Parallel()
		var s guard.MemoryThreadStore
		if got := reserve(&s, "a", 1, 1); got != "0 true <nil>" {
			t.Errorf("zero value Reserve = %s, want 0 true <nil>", got)
		}
	})
	t.Run("concurrent reservations never pass the limit", func(t *testing.T) {
		t.Parallel()
		s := guard.NewMemoryThreadStore(10)
		var wg sync.WaitGroup
		var passed atomic.Int32
		for range 100 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, ok, _ := s.Reserve(ctx, key("a"), 1, 1); ok {
					passed.Add(1)
				}
			}()
		}
		wg.Wait()
		if n := passed.Load(); n != 1 {
			t.Errorf("%d concurrent reservations passed a limit of 1, want 1", n)
		}
	})
}

// TestMemoryThreadStoreConformance runs the ThreadStore conformance kit on
// the in-memory store (it never fails, so there is no unreachable case).
func TestMemoryThreadStoreConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(*testing.T) guard.ThreadStore { return guard.NewMemoryThreadStore(100) })
}
