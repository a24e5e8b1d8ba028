// Faulty, Fault and ErrInjected inject faults into chosen calls of a
// toolstage.Checkpointer, as testing/iotest's readers do for an io.Reader:
// a call that fails, a save applied and its reply lost, a save applied and
// reported as a conflict. RunFaults runs them over a store; the tests of
// code that uses a Checkpointer (a host loop of its own) use them to hold
// it to what a store's faults may do.
package checkpointtest

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/toolguard/toolguard/toolstage"
)

// ErrInjected is the error [Faulty] returns for the faults it injects.
var ErrInjected = errors.New("checkpointtest: injected store fault")

// Fault is what [Faulty] does to one call of its store.
type Fault int

const (
	// Fail fails the call: nothing is applied and the call returns
	// ErrInjected (a store that cannot be reached).
	Fail Fault = iota + 1
	// LoseReply applies a Save and then returns ErrInjected, as if the
	// reply had been lost after the write. For a Load it is Fail.
	LoseReply
	// ConflictAfterWrite applies a Save and then reports a conflict
	// (false, nil): what a store client sees that retried a save whose
	// first attempt was applied and whose reply was lost. For a Load it is
	// Fail.
	ConflictAfterWrite
)

// String names the fault.
func (f Fault) String() string {
	switch f {
	case Fail:
		return "Fail"
	case LoseReply:
		return "LoseReply"
	case ConflictAfterWrite:
		return "ConflictAfterWrite"
	}
	return fmt.Sprintf("Fault(%d)", int(f))
}

// Faulty is a [toolstage.Checkpointer] that injects faults into chosen
// calls of the one it wraps: Saves[n] is what happens to the n-th call of
// Save, Loads[n] to the n-th call of Load (both counted from 1, across
// threads); the other calls go through. Set the maps before the first
// call. It is safe for concurrent use.
type Faulty struct {
	toolstage.Checkpointer
	Saves map[int]Fault
	Loads map[int]Fault

	mu           sync.Mutex
	saves, loads int
}

// Save implements [toolstage.Checkpointer].
func (f *Faulty) Save(ctx context.Context, thread string, version int64, state []byte) (bool, error) {
	f.mu.Lock()
	f.saves++
	fault := f.Saves[f.saves]
	f.mu.Unlock()
	switch fault {
	case Fail:
		return false, fmt.Errorf("save %q from version %d: %w", thread, version, ErrInjected)
	case LoseReply:
		if _, err := f.Checkpointer.Save(ctx, thread, version, state); err != nil {
			return false, err
		}
		return false, fmt.Errorf("save %q from version %d: reply lost after the write: %w", thread, version, ErrInjected)
	case ConflictAfterWrite:
		if _, err := f.Checkpointer.Save(ctx, thread, version, state); err != nil {
			return false, err
		}
		return false, nil
	}
	return f.Checkpointer.Save(ctx, thread, version, state)
}

// Load implements [toolstage.Checkpointer].
func (f *Faulty) Load(ctx context.Context, thread string) ([]byte, int64, error) {
	f.mu.Lock()
	f.loads++
	fault := f.Loads[f.loads]
	f.mu.Unlock()
	if fault != 0 {
		return nil, 0, fmt.Errorf("load %q: %w", thread, ErrInjected)
	}
	return f.Checkpointer.Load(ctx, thread)
}
