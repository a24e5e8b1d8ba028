package toolstage

import (
	"errors"
	"fmt"
)

// ToolPanicError is the error of a tool call whose tool stage panicked —
// the tool, a tool middleware or an injector — and of the run it ended
// (errors.As). The panic is recovered on the call's goroutine: the
// process goes on, the batch's other running calls finish, calls not yet
// started never start, and [Stage.Run] returns this error with the batch. What the call did before it panicked is
// unknown: the model reads that its outcome is unknown and must be checked
// before it is called again. A panic is never retried ([ToolRetry] does
// not see it). A panic on a goroutine the tool starts itself is beyond
// recovery: it crashes the process, as in any Go program.
type ToolPanicError struct {
	// Tool is the tool's name as sent to the model; CallID the call's id.
	Tool, CallID string
	// Value is what was passed to panic.
	Value any
	// Stack is the panicking goroutine's stack (runtime/debug.Stack).
	Stack []byte
}

// Error names the tool and the value it panicked with.
func (e *ToolPanicError) Error() string {
	return fmt.Sprintf("toolstage: tool %q panicked: %v", e.Tool, e.Value)
}

// Unwrap returns Value when it is an error (a runtime.Error, say), else
// nil.
func (e *ToolPanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// ErrCallNotStarted is the Outcome.Err of a call of a batch that ended
// inside ([ErrStopRun], a [*ToolPanicError], a cancelled context, an
// abandoned run) before the call started: it did not run, and the model
// reads so. It wraps [ErrNotRun].
var ErrCallNotStarted = fmt.Errorf("%w: the run ended before the call started", ErrNotRun)

// ErrCallInterrupted is the error of a call that had started, or may
// have, when its run was cut off (the process died or the context was
// cancelled mid-batch) or abandoned. A call whose tool returned an error
// wrapping the context's once it ended (a bank call given up on, say) is
// cut off too, never a call that failed. Resuming never runs it again —
// its outcome is unknown — and the model reads that it must check before
// calling again.
var ErrCallInterrupted = errors.New("toolstage: the run stopped while the call was running; its outcome is unknown")
