package guard

import "context"

// ObserverFunc adapts a function to an [Observer] that receives events
// only: its OnModelCall returns the context unchanged. A streaming UI uses
// one to learn when what it streamed for a call is superseded:
//
//	ctx = guard.WithObserver(ctx, guard.ObserverFunc(func(ctx context.Context, e guard.Event) {
//		if e.Kind == guard.EventReask || e.Kind == guard.EventRetry {
//			ui.Reset() // the chunks streamed so far belong to a discarded attempt
//		}
//	}))
//
// The function is called on the caller's goroutine and must not block.
type ObserverFunc func(ctx context.Context, e Event)

// OnEvent calls f(ctx, e).
func (f ObserverFunc) OnEvent(ctx context.Context, e Event) { f(ctx, e) }

// OnModelCall returns ctx and no function.
func (f ObserverFunc) OnModelCall(ctx context.Context, _ ModelCall) (context.Context, func(ModelResult)) {
	return ctx, nil
}
