package agent_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/agent"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/middleware/fakemodel"
	"github.com/toolguard/toolguard/toolstage"
	"github.com/toolguard/toolguard/toolstage/checkpointtest"
)

// A save whose reply is lost, or that the store reports as a conflict
// although it was applied, is found by reloading: the run goes on as if
// the save had been confirmed, at every save of a run.
func TestOwnWriteFound(t *testing.T) {
	t.Parallel()
	for _, fault := range []checkpointtest.Fault{checkpointtest.LoseReply, checkpointtest.ConflictAfterWrite} {
		for save := 1; save <= 3; save++ { // the turn, the batch, the finished run
			t.Run(fmt.Sprintf("%v at save %d", fault, save), func(t *testing.T) {
				t.Parallel()
				var b bank
				cp := &checkpointtest.Faulty{Checkpointer: new(toolstage.MemoryCheckpointer), Saves: map[int]checkpointtest.Fault{save: fault}}
				model := fakemodel.New(fakemodel.ToolCalls(fakemodel.Call("get_balance", `{}`)), fakemodel.Text("1000."), fakemodel.Text("Still 1000."))
				a := agent.New(model, toolstage.New(b.tools()), agent.WithCheckpointer(cp))
				ctx := guard.WithThread(context.Background(), "own")
				if res, err := a.Run(ctx, "balance?"); err != nil || res.Output != "1000." {
					t.Fatalf("Run() = %v, %v; want 1000., nil", res, err)
				}
				res, err := a.Run(ctx, "again?")
				if err != nil || len(toolMessages(res.Messages)) != 1 || b.count("get_balance") != 1 {
					t.Errorf("the next Run() = %q, %v; get_balance ran %d times; want the thread's transcript, nil, 1", render(res.Messages), err, b.count("get_balance"))
				}
			})
		}
	}
}

// Two runs on one thread whose saves are byte for byte alike but for
// their stamps: the loser's reload does not mistake the winner's save for
// its own, whatever the store reports.
func TestOwnWriteNotMistaken(t *testing.T) {
	t.Parallel()
	var b bank
	mem := new(toolstage.MemoryCheckpointer)
	ctx := guard.WithThread(context.Background(), "twins")
	// The winner saves the turn first (version 1); then the loser, from
	// version 0, whose store reports an error as if its reply were lost.
	model := func() llms.Model {
		return fakemodel.New(fakemodel.ToolCalls(fakemodel.Call("get_balance", `{}`)), fakemodel.Text("1000."))
	}
	arrived, release := make(chan struct{}), make(chan struct{})
	gate := toolstage.ToolFunc(func(next toolstage.ToolHandler) toolstage.ToolHandler {
		return func(ctx context.Context, call *toolstage.ToolCall) (*toolstage.ToolResult, error) {
			close(arrived) // the winner's turn is saved
			<-release
			return next(ctx, call)
		}
	})
	winner := agent.New(model(), toolstage.New(b.tools(), toolstage.WithToolMiddleware(gate)), agent.WithCheckpointer(mem))
	loser := agent.New(model(), toolstage.New(b.tools()), agent.WithCheckpointer(&staleSave{Checkpointer: mem}))
	done := make(chan error, 1)
	go func() { _, err := winner.Run(ctx, "balance?"); done <- err }()
	<-arrived
	if _, err := loser.Run(ctx, "balance?"); !errors.Is(err, agent.ErrCheckpointConflict) {
		t.Errorf("the loser's Run() error = %v, want ErrCheckpointConflict", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Errorf("the winner's Run() error = %v", err)
	}
	if n := b.count("get_balance"); n != 1 {
		t.Errorf("get_balance ran %d times, want 1: the loser must not take the winner's save for its own", n)
	}
}

// staleSave is a store whose first Load says the thread is new (version
// 0, as it was when the loser loaded it) and whose saves that fail to
// apply report an error, as a reply lost would.
type staleSave struct {
	toolstage.Checkpointer
	loads atomic.Int32
}

func (s *staleSave) Load(ctx context.Context, thread string) ([]byte, int64, error) {
	if s.loads.Add(1) == 1 {
		return nil, 0, nil // the run opens on the version before the winner's save
	}
	return s.Checkpointer.Load(ctx, thread)
}

func (s *staleSave) Save(ctx context.Context, thread string, version int64, state []byte) (bool, error) {
	ok, err := s.Checkpointer.Save(ctx, thread, version, state)
	if err == nil && !ok {
		return false, errors.New("reply lost")
	}
	return ok, err
}

// ctxStore is a store that honours its context as a network store does
// (a call with a done context fails), and ends the run's context during
// its save number at: after applying it when applied is set, before when
// not.
type ctxStore struct {
	toolstage.Checkpointer
	at      int
	applied bool
	cancel  context.CancelFunc
	saves   atomic.Int32
}

func (s *ctxStore) Load(ctx context.Context, thread string) ([]byte, int64, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	return s.Checkpointer.Load(ctx, thread)
}

func (s *ctxStore) Save(ctx context.Context, thread string, version int64, state []byte) (bool, error) {
	if int(s.saves.Add(1)) == s.at {
		if s.applied {
			if _, err := s.Checkpointer.Save(ctx, thread, version, state); err != nil {
				return false, err
			}
		}
		s.cancel()
	}
	if err := ctx.Err(); err != nil {
		return false, err
	}
	return s.Checkpointer.Save(ctx, thread, version, state)
}

// The context ends while the run saves: after its batch finished (the
// batch's save fails), or as it saves the turn whose calls are about to
// run (applied, its reply lost to the cancel). Resume shows the model what
// happened: the payment's result, or that the payment never started —
// never an unknown outcome for either.
func TestCancelDuringSave(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		at       int
		applied  bool
		payments int32
		want     string
	}{
		{"batch saved", 2, false, 1, "paid, ref P-1"},
		{"turn saved, reply lost", 1, true, 0, "The run stopped before this call started, so it did not run."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var payments atomic.Int32
			pay := toolstage.NewSchemaTool("transfer_money", "Pay.", nil, func(context.Context, map[string]any) (string, error) {
				payments.Add(1)
				return "paid, ref P-1", nil
			})
			model := fakemodel.New(fakemodel.ToolCalls(fakemodel.Call("transfer_money", `{}`)), fakemodel.Text("Done."))
			ctx, cancel := context.WithCancel(guard.WithThread(context.Background(), "cancel-save"))
			defer cancel()
			mem := new(toolstage.MemoryCheckpointer)
			store := &ctxStore{Checkpointer: mem, at: tc.at, applied: tc.applied, cancel: cancel}
			if _, err := agent.New(model, toolstage.New([]toolstage.Tool{pay}), agent.WithCheckpointer(store)).Run(ctx, "pay"); !errors.Is(err, context.Canceled) {
				t.Fatalf("Run() error = %v, want context.Canceled", err)
			}
			res, err := agent.New(model, toolstage.New([]toolstage.Tool{pay}), agent.WithCheckpointer(mem)).Resume(guard.WithThread(context.Background(), "cancel-save"), nil)
			if err != nil {
				t.Fatalf("Resume(nil) error = %v", err)
			}
			if got := toolMessages(res.Messages); len(got) != 1 || got[0] != tc.want {
				t.Errorf("the resumed run shows the model %q, want [%q]", got, tc.want)
			}
			if payments.Load() != tc.payments {
				t.Errorf("transfer_money ran %d times, want %d", payments.Load(), tc.payments)
			}
		})
	}
}
