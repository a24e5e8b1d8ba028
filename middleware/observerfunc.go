package middleware

import (
	"context"

	"github.com/tmc/langchaingo/llms"
)

// ObserverFunc adapts a function to an [Observer] that receives events
// only: its OnModelCall returns the context unchanged. A streaming UI uses
// one to learn when what it streamed for a call is superseded:
//
//	ctx = middleware.WithObserver(ctx, middleware.ObserverFunc(func(ctx context.Context, e middleware.Event) {
//		if e.Kind == middleware.EventReask || e.Kind == middleware.EventRetry {
//			ui.Reset() // the chunks streamed so far belong to a discarded attempt
//		}
//	}))
//
// The function is called on the caller's goroutine and must not block.
type ObserverFunc func(ctx context.Context, e Event)

// OnEvent calls f(ctx, e).
func (f ObserverFunc) OnEvent(ctx context.Context, e Event) { f(ctx, e) }

// OnModelCall returns ctx and no function.
func (f ObserverFunc) OnModelCall(ctx context.Context, _ *Request) (context.Context, func(*llms.ContentResponse, error)) {
	return ctx, nil
}
