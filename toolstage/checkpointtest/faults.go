package checkpointtest

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/toolstage"
)

// RunFaults runs the fault scenarios against the stores newCheckpointer
// returns, each on a new, empty store: the store under test is wrapped so
// that one of a Stage's reads or writes fails, or is applied with its
// reply lost, and the scenario checks what the Stage makes of it — a call
// that ran is never forgotten (its outcome is in the batch), an approved
// call never runs twice, an interrupt whose claim did not reach the store
// can still be resumed, and a save the store applied but did not confirm
// is read back as the Stage's own (each claim carries a random stamp). Subtests do not run in parallel with each
// other.
func RunFaults(t *testing.T, newCheckpointer func(t *testing.T) toolstage.Checkpointer) {
	t.Helper()
	for _, s := range []struct {
		name string
		run  func(*testing.T, toolstage.Checkpointer)
	}{
		{"FailedInterruptSave", failedInterruptSave},
		{"LostInterruptReply", lostInterruptReply},
		{"LostInterruptReplyStoreDown", lostInterruptReplyStoreDown},
		{"FailedResumeLoad", failedResumeLoad},
		{"FailedClaim", failedClaim},
		{"LostClaimReply", lostClaimReply},
		{"ConflictAfterOwnClaim", conflictAfterOwnClaim},
		{"LostClaimReplyStoreDown", lostClaimReplyStoreDown},
	} {
		t.Run(s.name, func(t *testing.T) { s.run(t, newCheckpointer(t)) })
	}
}

// faulty wraps cp with the faults of saves and loads (see
// Faulty).
func faulty(cp toolstage.Checkpointer, saves, loads map[int]Fault) toolstage.Checkpointer {
	return &Faulty{Checkpointer: cp, Saves: saves, Loads: loads}
}

// failedInterruptSave: the save of the interrupt fails (nothing is
// stored) after get_balance ran. Run returns the store's error and the
// batch: get_balance's outcome, and the transfer's as never started.
func failedInterruptSave(t *testing.T, cp toolstage.Checkpointer) {
	b := bank{t: t}
	ctx := guard.WithThread(context.Background(), "fault-interrupt-save")
	batch, err := b.stage(faulty(cp, map[int]Fault{1: Fail}, nil)).Run(ctx, batchCalls())
	if !errors.Is(err, ErrInjected) {
		t.Fatalf("Run() with the interrupt's save failing: error = %v, want the store's", err)
	}
	if batch == nil || batch.Interrupt != nil {
		t.Fatalf("Run() batch = %+v, want one without an interrupt", batch)
	}
	if got, want := outcomeIDs(batch), "call_1="+balanceResult+" call_2="; len(batch.Outcomes) != 2 || !strings.HasPrefix(got, want) {
		t.Errorf("Run() outcomes = %s, want get_balance's result, then the transfer's", got)
	}
	if len(batch.Outcomes) == 2 && !errors.Is(batch.Outcomes[1].Err, toolstage.ErrCallNotStarted) {
		t.Errorf("the transfer's outcome: error = %v, want ErrCallNotStarted", batch.Outcomes[1].Err)
	}
	if n, m := b.count("get_balance"), b.count("transfer_money"); n != 1 || m != 0 {
		t.Errorf("get_balance ran %d times and transfer_money %d, want 1 and 0", n, m)
	}
}

// lostInterruptReply: the interrupt's save is applied and its reply lost.
// The Stage reads its own write back: Run returns the interrupt, which a
// later Resume runs once.
func lostInterruptReply(t *testing.T, cp toolstage.Checkpointer) {
	b := bank{t: t}
	ctx := guard.WithThread(context.Background(), "fault-interrupt-reply")
	batch, err := b.stage(faulty(cp, map[int]Fault{1: LoseReply}, nil)).Run(ctx, batchCalls())
	if err != nil || batch.Interrupt == nil {
		t.Fatalf("Run() with the interrupt's reply lost after the write: error = %v, want the interrupt (the save was applied)", err)
	}
	if got := outcomeIDs(batch); got != "call_1="+balanceResult {
		t.Errorf("Run() outcomes = %s, want call_1=%s", got, balanceResult)
	}
	in := travel(t, batch.Interrupt)
	batch, err = b.stage(cp).Resume(ctx, in, accept(in)...)
	resumed(t, &b, batch, err)
}

// lostInterruptReplyStoreDown: the interrupt's save is applied, its reply
// lost, and the store cannot be read to tell. Run returns the store's
// error and the batch: get_balance's outcome, the transfer never started.
func lostInterruptReplyStoreDown(t *testing.T, cp toolstage.Checkpointer) {
	b := bank{t: t}
	ctx := guard.WithThread(context.Background(), "fault-interrupt-down")
	down := faulty(cp, map[int]Fault{1: LoseReply}, map[int]Fault{1: Fail})
	batch, err := b.stage(down).Run(ctx, batchCalls())
	if !errors.Is(err, ErrInjected) {
		t.Fatalf("Run() with the interrupt's reply lost and the store down: error = %v, want the store's", err)
	}
	if batch == nil || batch.Interrupt != nil || len(batch.Outcomes) != 2 || !errors.Is(batch.Outcomes[1].Err, toolstage.ErrCallNotStarted) {
		t.Fatalf("Run() batch = %s, want get_balance's result and the transfer never started, no interrupt", outcomeIDs(batch))
	}
	if n, m := b.count("get_balance"), b.count("transfer_money"); n != 1 || m != 0 {
		t.Errorf("get_balance ran %d times and transfer_money %d, want 1 and 0", n, m)
	}
}

// failedResumeLoad: the Load with which Resume reads the interrupt's
// state fails. Nothing runs; a later Resume runs the transfer once.
func failedResumeLoad(t *testing.T, cp toolstage.Checkpointer) {
	b := bank{t: t}
	ctx := guard.WithThread(context.Background(), "fault-resume-load")
	in := pause(t, ctx, &b, cp)
	if _, err := b.stage(faulty(cp, nil, map[int]Fault{1: Fail})).Resume(ctx, in, accept(in)...); !errors.Is(err, ErrInjected) {
		t.Fatalf("Resume() with the store unreadable: error = %v, want the store's", err)
	}
	if n := b.count("transfer_money"); n != 0 {
		t.Fatalf("transfer_money ran %d times after a Resume that could not read the store, want 0", n)
	}
	batch, err := b.stage(cp).Resume(ctx, in, accept(in)...)
	resumed(t, &b, batch, err)
}

// failedClaim: the Save with which Resume claims the interrupt fails
// (nothing is stored). Nothing runs; a later Resume runs the transfer
// once.
func failedClaim(t *testing.T, cp toolstage.Checkpointer) {
	b := bank{t: t}
	ctx := guard.WithThread(context.Background(), "fault-claim")
	in := pause(t, ctx, &b, cp)
	if _, err := b.stage(faulty(cp, map[int]Fault{1: Fail}, nil)).Resume(ctx, in, accept(in)...); !errors.Is(err, ErrInjected) {
		t.Fatalf("Resume() with the claim failing: error = %v, want the store's", err)
	}
	if n := b.count("transfer_money"); n != 0 {
		t.Fatalf("transfer_money ran %d times after a failed claim, want 0", n)
	}
	batch, err := b.stage(cp).Resume(ctx, in, accept(in)...)
	resumed(t, &b, batch, err)
}

// lostClaimReply: the claim is stored and its reply lost. The Stage reads
// its own claim back and runs the transfer, once; a replay is refused.
func lostClaimReply(t *testing.T, cp toolstage.Checkpointer) {
	ownClaim(t, cp, "fault-claim-reply", LoseReply)
}

// conflictAfterOwnClaim: the claim is stored and the store reports a
// conflict (a client's retry of it found it). The Stage reads its own
// claim back and runs the transfer, once, not refusing as if another
// resume came first; a replay is refused.
func conflictAfterOwnClaim(t *testing.T, cp toolstage.Checkpointer) {
	ownClaim(t, cp, "fault-claim-conflict", ConflictAfterWrite)
}

// ownClaim resumes an interrupt on cp with fault on the claim's save, and
// checks that the Stage took its claim for its own.
func ownClaim(t *testing.T, cp toolstage.Checkpointer, thread string, fault Fault) {
	b := bank{t: t}
	ctx := guard.WithThread(context.Background(), thread)
	in := pause(t, ctx, &b, cp)
	batch, err := b.stage(faulty(cp, map[int]Fault{1: fault}, nil)).Resume(ctx, in, accept(in)...)
	resumed(t, &b, batch, err)
	if _, err := b.stage(cp).Resume(ctx, travel(t, in), accept(in)...); !errors.Is(err, toolstage.ErrInterruptRefused) {
		t.Errorf("a replayed Resume() after the %v claim: error = %v, want ErrInterruptRefused", fault, err)
	}
	ranOnce(t, &b)
}

// lostClaimReplyStoreDown: the claim is stored, its reply lost, and the
// store cannot be read again, so the Stage cannot tell the claim is its
// own. Nothing runs, then or later: the claim is in the store, and an
// interrupt is resumed at most once.
func lostClaimReplyStoreDown(t *testing.T, cp toolstage.Checkpointer) {
	b := bank{t: t}
	ctx := guard.WithThread(context.Background(), "fault-claim-down")
	in := pause(t, ctx, &b, cp)
	// Load 1 reads the state; load 2 would be the Stage's look for its own
	// claim.
	down := faulty(cp, map[int]Fault{1: LoseReply}, map[int]Fault{2: Fail})
	if _, err := b.stage(down).Resume(ctx, in, accept(in)...); !errors.Is(err, ErrInjected) {
		t.Fatalf("Resume() with the claim's reply lost and the store down: error = %v, want the store's", err)
	}
	if _, err := b.stage(cp).Resume(ctx, in, accept(in)...); !errors.Is(err, toolstage.ErrInterruptRefused) {
		t.Errorf("Resume() once the store is back: error = %v, want ErrInterruptRefused (the lost claim is stored)", err)
	}
	if n := b.count("transfer_money"); n != 0 {
		t.Errorf("transfer_money ran %d times, want 0: no resume could know the claim its own", n)
	}
}
