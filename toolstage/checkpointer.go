package toolstage

import (
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
