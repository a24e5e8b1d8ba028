package toolstage_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/toolguard/toolguard/guard/redisstore"
	"github.com/toolguard/toolguard/guard/redisstore/redisserver"
	"github.com/toolguard/toolguard/toolstage"
)

// raceRounds is how many times the racing-resumes scenario plays.
const raceRounds = 64

// checkpointerScenarios proves WithCheckpointer's promise on the stores
// newCP makes (each call a store of its own, or one with a prefix of its
// own): two Stage values sharing one resume each other's interrupts, at
// most once across both.
func checkpointerScenarios(t *testing.T, newCP func(t *testing.T) toolstage.Checkpointer) {
	// The interrupt holds no state (the store keeps it) and travels as
	// JSON; a Stage without the store refuses it; it is resumed on the
	// other Stage, every call's outcome in call order; a second Resume, on
	// either Stage, is refused and runs nothing.
	t.Run("shared by two stages", func(t *testing.T) {
		cp := newCP(t)
		var k bank
		first, second := k.stage(toolstage.WithCheckpointer(cp)), k.stage(toolstage.WithCheckpointer(cp))
		ctx := context.Background()
		in := pause(t, ctx, first)
		if len(in.State) != 0 {
			t.Errorf("Interrupt.State = %s, want it empty: the store keeps it", in.State)
		}
		raw, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		var back toolstage.Interrupt
		if err := json.Unmarshal(raw, &back); err != nil {
			t.Fatal(err)
		}
		// A Stage without the store has no state to resume it from.
		if _, err := k.stage().Resume(ctx, &back, decide(back.Pending[0], toolstage.Accept)); !errors.Is(err, toolstage.ErrInterruptRefused) {
			t.Errorf("Resume() on a Stage without the store: error = %v, want ErrInterruptRefused", err)
		}
		b, err := second.Resume(ctx, &back, decide(back.Pending[0], toolstage.Accept))
		if err != nil {
			t.Fatalf("Resume() on the second Stage: error = %v", err)
		}
		logOutcomes(t, "resumed on the second Stage", b.Outcomes)
		if got := ids(b.Outcomes); !slices.Equal(got, []string{"call_1", "call_2", "call_3"}) || !slices.Equal(indexes(b.Outcomes), []int{0, 1, 2}) {
			t.Errorf("Resume() outcomes %q (Index %v), want all three in call order", got, indexes(b.Outcomes))
		}
		for name, s := range map[string]*toolstage.Stage{"first": first, "second": second} {
			if _, err := s.Resume(ctx, in, decide(in.Pending[0], toolstage.Accept)); !errors.Is(err, toolstage.ErrInterruptRefused) {
				t.Errorf("a second Resume() on the %s Stage: error = %v, want ErrInterruptRefused", name, err)
			}
		}
		if got := k.ran(); got != [3]int32{1, 1, 1} {
			t.Errorf("runs (balance, payment, rate) = %v, want [1 1 1]", got)
		}
	})
	// Two Resumes of one interrupt racing on two Stage values: exactly one
	// runs the payment, the other is refused.
	t.Run("racing resumes", func(t *testing.T) {
		cp := newCP(t)
		for round := range raceRounds {
			var k bank
			stages := []*toolstage.Stage{k.stage(toolstage.WithCheckpointer(cp)), k.stage(toolstage.WithCheckpointer(cp))}
			ctx := context.Background()
			in := pause(t, ctx, stages[0])
			start := make(chan struct{})
			errs := make([]error, len(stages))
			var wg sync.WaitGroup
			for i, s := range stages {
				wg.Go(func() {
					<-start
					_, errs[i] = s.Resume(ctx, in, decide(in.Pending[0], toolstage.Accept))
				})
			}
			close(start)
			wg.Wait()
			won, refused := 0, 0
			for _, err := range errs {
				switch {
				case err == nil:
					won++
				case errors.Is(err, toolstage.ErrInterruptRefused):
					refused++
				default:
					t.Errorf("round %d: Resume() error = %v, want nil or ErrInterruptRefused", round, err)
				}
			}
			if won != 1 || refused != 1 || k.payments.Load() != 1 {
				t.Fatalf("round %d: %d Resumes ran, %d were refused (%v), the payment ran %d times; want 1, 1, 1", round, won, refused, errs, k.payments.Load())
			}
		}
	})
	// The race's narrowest order, forced: both Stages decide (each reads
	// the unclaimed state) before either claims; then only one claim holds
	// and only its calls run, the other refused.
	t.Run("both decided before either claims", func(t *testing.T) {
		cp := newCP(t)
		var k bank
		first, second := k.stage(toolstage.WithCheckpointer(cp)), k.stage(toolstage.WithCheckpointer(cp))
		ctx := context.Background()
		in := pause(t, ctx, first)
		var decided []*toolstage.Decided
		for _, s := range []*toolstage.Stage{first, second} {
			d, err := s.Decide(ctx, in, decide(in.Pending[0], toolstage.Accept))
			if err != nil {
				t.Fatalf("Decide() error = %v", err)
			}
			decided = append(decided, d)
		}
		b, err := decided[1].Run(ctx)
		if err != nil || len(b.Outcomes) != 3 {
			t.Fatalf("the second Stage's Run() = %+v, %v; want all three outcomes", b, err)
		}
		if _, err := decided[0].Run(ctx); !errors.Is(err, toolstage.ErrInterruptRefused) {
			t.Errorf("the first Stage's Run() error = %v, want ErrInterruptRefused: the other claimed it", err)
		}
		if got := k.ran(); got != [3]int32{1, 1, 1} {
			t.Errorf("runs (balance, payment, rate) = %v, want [1 1 1]", got)
		}
	})
}

// Two Stage values sharing a MemoryCheckpointer, as two handlers of one
// process may.
func TestMemoryCheckpointerSharedByTwoStages(t *testing.T) {
	t.Parallel()
	checkpointerScenarios(t, func(*testing.T) toolstage.Checkpointer { return new(toolstage.MemoryCheckpointer) })
}

// requireRedis turns a missing redis-server from a skip into a failure,
// as in guard/redisstore.
const requireRedis = "TOOLGUARD_REQUIRE_REDIS"

// Two Stage values sharing redisstore's Checkpointer on a real
// redis-server, as two replicas do.
func TestRedisCheckpointerSharedByTwoStages(t *testing.T) {
	srv, err := redisserver.Start(t.TempDir())
	if errors.Is(err, redisserver.ErrNotFound) {
		if os.Getenv(requireRedis) == "1" {
			t.Fatalf("%v, and %s=1 requires the Redis tests to run", err, requireRedis)
		}
		t.Skipf("skipping the tests against a real Redis: %v (set %s=1 to make this a failure)", err, requireRedis)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	client := redis.NewClient(&redis.Options{Addr: srv.Addr(), DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second})
	t.Cleanup(func() { _ = client.Close() })
	t.Logf("redis-server on %s", srv.Addr())
	n := 0
	checkpointerScenarios(t, func(*testing.T) toolstage.Checkpointer {
		n++ // each scenario its own prefix: an empty store
		return redisstore.NewCheckpointer(client, redisstore.WithPrefix(fmt.Sprintf("toolstage%d:", n)))
	})
}
