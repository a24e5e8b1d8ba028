package toolstage

import (
	"bytes"
	"context"
	"slices"
	"sync"
)

// Checkpointer keeps states by key, each one opaque value and its
// version, a counter the store increments on each save: a [Stage] keeps
// there each [Interrupt]'s state and its claim ([WithCheckpointer]), and
// toolguard's agent its threads' transcripts (one state per thread id,
// [guard.WithThread]). The contract is plain data (strings, bytes,
// integers), so a store needs nothing from this package: redisstore's
// Checkpointer satisfies it without importing toolstage.
//
// Implementations must be safe for concurrent use, and Save must be
// atomic: of two saves made from the same version, one succeeds and the
// other reports saved == false. That is how two replicas resuming the same
// interrupt, or two runs on one thread, never both run its calls. Test an
// implementation with toolstage/checkpointtest.
type Checkpointer interface {
	// Load returns the latest state saved for thread and its version; a
	// thread never saved has state nil and version 0. The returned bytes
	// are the caller's.
	Load(ctx context.Context, thread string) (state []byte, version int64, err error)
	// Save stores state as thread's version version+1 if the thread's
	// saved version is still version (0: never saved), and reports whether
	// it did. It must not keep state after it returns (copy it). An error
	// means the state may or may not have been saved: after an error, or a
	// false, the caller loads the thread and takes a state byte for byte
	// its own (each carries a random stamp) at version+1 as saved.
	Save(ctx context.Context, thread string, version int64, state []byte) (saved bool, err error)
}

// MemoryCheckpointer is an in-process [Checkpointer]: a map from thread id
// to its latest state. It keeps every thread it is given until
// [MemoryCheckpointer.Forget]; its state dies with the process, so
// replicas, or a run that must survive a crash, need a shared one (such as
// redisstore's). The zero value is ready to use; it is safe for concurrent
// use and must not be copied after first use.
type MemoryCheckpointer struct {
	mu      sync.Mutex
	threads map[string]memoryCheckpoint
}

type memoryCheckpoint struct {
	state   []byte
	version int64
}

// Load implements [Checkpointer]. It never fails.
func (m *MemoryCheckpointer) Load(_ context.Context, thread string) ([]byte, int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.threads[thread]
	if !ok {
		return nil, 0, nil
	}
	return slices.Clone(c.state), c.version, nil
}

// Save implements [Checkpointer]. It never fails.
func (m *MemoryCheckpointer) Save(_ context.Context, thread string, version int64, state []byte) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.threads == nil {
		m.threads = make(map[string]memoryCheckpoint)
	}
	if m.threads[thread].version != version {
		return false, nil
	}
	m.threads[thread] = memoryCheckpoint{state: slices.Clone(state), version: version + 1}
	return true, nil
}

// Forget drops thread's state: its next run starts a new conversation.
func (m *MemoryCheckpointer) Forget(thread string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.threads, thread)
}

// saveOwn saves state as thread's version version+1 in cp, as the
// [Checkpointer] contract asks of a caller: when the store reports a
// conflict or an error, the save may have been applied all the same (its
// reply lost after the write, or a client's retry finding its own write),
// so the thread is loaded, and the save counts as made if the store holds
// these very bytes at version+1. state must be this caller's alone (a
// random id or stamp in it) for that to prove the write its own. It
// returns the Save's error when the store cannot be read back to tell, or
// holds another state: that save may still land later, so the caller must
// act as if it may have been applied. A conflict that cannot be read back
// returns the Load's error.
func saveOwn(ctx context.Context, cp Checkpointer, thread string, version int64, state []byte) (bool, error) {
	saved, err := cp.Save(ctx, thread, version, state)
	if err == nil && saved {
		return true, nil
	}
	got, v, lerr := cp.Load(ctx, thread)
	if lerr == nil && v == version+1 && bytes.Equal(got, state) {
		return true, nil
	}
	if err == nil && lerr != nil {
		err = lerr
	}
	return false, err
}
