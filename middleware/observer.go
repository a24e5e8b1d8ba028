package middleware

import (
	"context"
	"log/slog"

	"github.com/tmc/langchaingo/llms"
)

// Observer is told what happens inside a middleware stack during a model
// call: every [Event] the built-in middlewares report, and every request
// that reaches the model. Tracing (package otelguard), a streaming UI that
// must discard what a rejected attempt streamed, or a test installs one with
// [WithObserver]; the middlewares find it in the context, so an Observer
// needs no configuration of theirs and sees the calls of one request only.
//
// Methods are called on the caller's goroutine, concurrently when the
// wrapped model is used concurrently, and must not block.
type Observer interface {
	// OnEvent receives each event a built-in middleware reports, before
	// the middleware acts on it: an EventReask arrives before the re-ask's
	// request is made, so before any of its streamed chunks.
	OnEvent(ctx context.Context, e Event)
	// OnModelCall is called by [Wrap] as a request is about to reach the
	// model. It returns the context to make the request with (a span's,
	// say) and a function that Wrap calls with the outcome; either may be
	// returned as ctx and nil.
	OnModelCall(ctx context.Context, req *Request) (context.Context, func(*llms.ContentResponse, error))
}

// observerKey is the context key of WithObserver.
type observerKey struct{}

// WithObserver returns a copy of ctx that makes the middlewares report to o
// as well as to the observers ctx already carries: each is told everything,
// the outermost (installed first) first. A nil o returns ctx.
func WithObserver(ctx context.Context, o Observer) context.Context {
	if o == nil {
		return ctx
	}
	if parent := ObserverFrom(ctx); parent != nil {
		o = observers{parent, o}
	}
	return context.WithValue(ctx, observerKey{}, o)
}

// ObserverFrom returns the observers ctx carries, combined into one, or nil.
func ObserverFrom(ctx context.Context) Observer {
	o, _ := ctx.Value(observerKey{}).(Observer)
	return o
}

// observers tells outer, then inner.
type observers struct{ outer, inner Observer }

func (o observers) OnEvent(ctx context.Context, e Event) {
	o.outer.OnEvent(ctx, e)
	o.inner.OnEvent(ctx, e)
}

func (o observers) OnModelCall(ctx context.Context, req *Request) (context.Context, func(*llms.ContentResponse, error)) {
	ctx, outerDone := o.outer.OnModelCall(ctx, req)
	ctx, innerDone := o.inner.OnModelCall(ctx, req)
	return ctx, func(resp *llms.ContentResponse, err error) {
		if innerDone != nil {
			innerDone(resp, err)
		}
		if outerDone != nil {
			outerDone(resp, err)
		}
	}
}

// report tells the observers in ctx, then handler, about e.
func report(ctx context.Context, handler eventOption, e Event) {
	if o := ObserverFrom(ctx); o != nil {
		o.OnEvent(ctx, e)
	}
	handler.emit(ctx, e)
}

// reportLoud reports e, an event that means a protection did not hold (a
// call passed unchecked or uncounted, or the stack is wired wrong), like
// report; with no event handler set it also logs e to slog.Default() at
// Warn, so that failing open is never silent by default.
func reportLoud(ctx context.Context, handler eventOption, e Event) {
	report(ctx, handler, e)
	if handler == nil {
		slog.Default().LogAttrs(ctx, slog.LevelWarn, "toolguard: "+string(e.Kind), slog.Any("event", e),
			slog.String("hint", "middleware.WithEventHandler routes or silences these"))
	}
}
