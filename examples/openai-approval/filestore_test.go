package main

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/toolguard/toolguard/toolstage"
	"github.com/toolguard/toolguard/toolstage/checkpointtest"
)

// TestFileCheckpointer holds the example's store to the Checkpointer
// contract, with the conformance test every store's author runs.
func TestFileCheckpointer(t *testing.T) {
	checkpointtest.Run(t, func(t *testing.T) toolstage.Checkpointer {
		return &FileCheckpointer{Dir: t.TempDir()}
	})
}

// TestFileCheckpointerOneSaveWins: stores on one directory share nothing
// but the files, as two processes do. Of the saves made at once from the
// same version, exactly one is taken, whichever store made it; a save from
// a version not (or no longer) the highest is refused.
func TestFileCheckpointerOneSaveWins(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	stores := []*FileCheckpointer{{Dir: dir}, {Dir: dir}}
	for version := int64(0); version < 3; version++ {
		start := make(chan struct{})
		results := make([]bool, 8)
		var wg sync.WaitGroup
		for i := range results {
			wg.Go(func() {
				<-start
				saved, err := stores[i%len(stores)].Save(ctx, "k", version, fmt.Appendf(nil, "v%d by %d", version+1, i))
				if err != nil {
					t.Error(err)
				}
				results[i] = saved
			})
		}
		close(start)
		wg.Wait()
		winner := -1
		for i, saved := range results {
			if saved && winner >= 0 {
				t.Fatalf("version %d: saves %d and %d both succeeded", version, winner, i)
			}
			if saved {
				winner = i
			}
		}
		if winner < 0 {
			t.Fatalf("version %d: no save succeeded", version)
		}
		for _, s := range stores {
			state, v, err := s.Load(ctx, "k")
			if want := fmt.Sprintf("v%d by %d", version+1, winner); err != nil || v != version+1 || string(state) != want {
				t.Errorf("Load = %q, %d, %v; want %q, %d", state, v, err, want, version+1)
			}
		}
	}
	for _, version := range []int64{1, 2, 5, -1} {
		if saved, err := stores[0].Save(ctx, "k", version, []byte("late")); saved || err != nil {
			t.Errorf("Save(version %d) with version 3 saved = %v, %v; want false, nil", version, saved, err)
		}
	}
}
