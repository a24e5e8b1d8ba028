package guard

import (
	"context"
	"log/slog"
	"reflect"
)

// ModelCall is what an adapter tells observers of a model call: a logical
// call through its stack ([CallObserver]), or one request about to reach
// the model ([Observer.OnModelCall]).
type ModelCall struct {
	// Model is the model the request asks for; "" when it names none.
	Model string
}

// ModelResult is the outcome of one request that reached the model, as an
// adapter reports it to [Observer.OnModelCall]'s function.
type ModelResult struct {
	// Err is the request's error; nil when the model answered.
	Err error
	// InputTokens and OutputTokens are the token counts the provider
	// reported; -1 when it reported none.
	InputTokens, OutputTokens int
	// FinishReasons are the response's stop reasons, as the provider
	// named them.
	FinishReasons []string
	// Output renders the response for an observer that records content
	// (otelguard's WithCaptureContent): the OpenTelemetry GenAI
	// conventions' output messages, as JSON, without any value the model
	// sent for an injected argument ([WithInjectedArgs]). It is nil when
	// the adapter cannot render it, and costs nothing until called.
	Output func() string
}

// Observer is told what happens inside a middleware stack during a model
// call: every [Event] the built-in middlewares report, and every request
// that reaches the model. Tracing (package otelguard), a streaming UI that
// must discard what a rejected attempt streamed, or a test installs one with
// [WithObserver]; the middlewares find it in the context, so an Observer
// needs no configuration of theirs and sees the calls of one request only.
//
// Methods are called on the caller's goroutine, concurrently when the
// stack is used concurrently, and must not block.
type Observer interface {
	// OnEvent receives each event a built-in middleware reports, before
	// the middleware acts on it: an EventReask arrives before the re-ask's
	// request is made, so before any of its streamed chunks.
	OnEvent(ctx context.Context, e Event)
	// OnModelCall is called by the adapter as a request is about to
	// reach the model. It returns the context to make the request with (a
	// span's, say) and a function the adapter calls with the outcome;
	// either may be returned as ctx and nil.
	OnModelCall(ctx context.Context, call ModelCall) (context.Context, func(ModelResult))
}

// CallObserver is an optional interface of an [Observer]: an observer that
// implements it is also told of each logical call through a stack it is
// installed in with [Observe] (otelguard's call span), before any of the
// call's requests.
type CallObserver interface {
	// OnCall is called as a logical call starts. It returns the context
	// to make the call with and a function called with the call's
	// outcome; either may be ctx and nil.
	OnCall(ctx context.Context, call ModelCall) (context.Context, func(error))
}

// observerKey is the context key of WithObserver.
type observerKey struct{}

// WithObserver returns a copy of ctx that makes the middlewares report to o
// as well as to the observers ctx already carries: each is told everything,
// the outermost (installed first) first. A nil o, or one ctx carries
// already (the same comparable value), returns ctx.
func WithObserver(ctx context.Context, o Observer) context.Context {
	if o == nil {
		return ctx
	}
	parent := ObserverFrom(ctx)
	if carries(parent, o) {
		return ctx
	}
	if parent != nil {
		o = observers{parent, o}
	}
	return context.WithValue(ctx, observerKey{}, o)
}

// carries reports whether o is among the observers all combines.
func carries(all, o Observer) bool {
	v := reflect.ValueOf(o)
	if !v.Comparable() {
		return false
	}
	for _, have := range flatten(all, nil) {
		if h := reflect.ValueOf(have); h.Type() == v.Type() && h.Equal(v) {
			return true
		}
	}
	return false
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

func (o observers) OnModelCall(ctx context.Context, call ModelCall) (context.Context, func(ModelResult)) {
	ctx, outerDone := o.outer.OnModelCall(ctx, call)
	ctx, innerDone := o.inner.OnModelCall(ctx, call)
	return ctx, func(r ModelResult) {
		if innerDone != nil {
			innerDone(r)
		}
		if outerDone != nil {
			outerDone(r)
		}
	}
}

// ObserveModelCall tells the observers ctx carries that a request is about
// to reach the model: adapters call it from their innermost handler. It
// returns the context to make the request with and a function to call
// once with its outcome (a no-op without observers).
func ObserveModelCall(ctx context.Context, call ModelCall) (context.Context, func(ModelResult)) {
	o := ObserverFrom(ctx)
	if o == nil {
		return ctx, func(ModelResult) {}
	}
	ctx, done := o.OnModelCall(ctx, call)
	if done == nil {
		return ctx, func(ModelResult) {}
	}
	return ctx, done
}

// Observe returns a middleware that installs o in the context of every call
// it handles ([WithObserver]) and, when o is a [CallObserver], tells it of
// each call, with the model c reads from the request. Place it outermost,
// so that it observes everything the stack does.
func Observe[Req, Resp any](c Codec[Req, Resp], o Observer) Middleware[Req, Resp] {
	if o == nil {
		panic("guard: Observe(nil)")
	}
	co, _ := o.(CallObserver)
	return func(next Handler[Req, Resp]) Handler[Req, Resp] {
		return func(ctx context.Context, req Req) (Resp, error) {
			ctx = WithObserver(ctx, o)
			if co == nil {
				return next(ctx, req)
			}
			ctx, done := co.OnCall(ctx, ModelCall{Model: c.Request(ctx, req).Model})
			resp, err := next(ctx, req)
			if done != nil {
				done(err)
			}
			return resp, err
		}
	}
}

// eventsKey is the context key of [WithEvents].
type eventsKey struct{}

// WithEvents returns a copy of ctx whose events are passed to fn: those of
// every stage a call made with it goes through — the model stage's
// middlewares and an agent's tool stage ([Report]) alike — after the
// observers ctx carries. It is the one place to give a handler for both
// stages; package agent gives its WithEventHandler here for each run. A
// middleware given a handler of its own ([WithEventHandler]) reports to
// that one instead. fn replaces a handler ctx carries; a nil fn removes
// it. fn is called on the caller's goroutine, concurrently when the stack
// is, and must not block.
//
// Without any handler, neither in the context nor the middleware's own,
// the events that mean a protection did not hold are logged to
// slog.Default at Warn, so that nothing passes unchecked, refused or
// miswired in silence: [EventGiveUp] and [EventSchemaError] of a
// middleware failing open, [EventUnguarded] of a response passed unread,
// [EventStoreError] under [WithStoreFailOpen],
// [EventForgedArgument], [EventApprovalRefused] and [EventMisconfigured].
// With a handler, that handler decides ([LogEvents] logs them at Warn).
func WithEvents(ctx context.Context, fn func(ctx context.Context, e Event)) context.Context {
	if fn == nil && eventsFrom(ctx) == nil {
		return ctx
	}
	return context.WithValue(ctx, eventsKey{}, fn)
}

// eventsFrom returns the handler ctx carries ([WithEvents]), or nil.
func eventsFrom(ctx context.Context) func(context.Context, Event) {
	fn, _ := ctx.Value(eventsKey{}).(func(context.Context, Event))
	return fn
}

// Report reports e, an event of a stage outside this package (an agent's
// tool stage, an adapter's own), as the built-in middlewares report
// theirs: to the observers ctx carries and to its handler ([WithEvents]);
// without a handler, an event that means a protection did not hold
// (forged_argument, approval_refused, misconfigured) is logged to
// slog.Default at Warn.
func Report(ctx context.Context, e Event) {
	report(ctx, nil, e)
}

// loudKind reports whether events of kind k mean a protection did not
// hold whatever reported them: a forged value, a refused approval, a
// miswired stack.
func loudKind(k EventKind) bool {
	return k == EventForgedArgument || k == EventApprovalRefused || k == EventMisconfigured
}

// report tells the observers in ctx, then handler or, without one, the
// context's handler, about e. With neither handler, an event of a loud
// kind is logged.
func report(ctx context.Context, handler eventOption, e Event) {
	if o := ObserverFrom(ctx); o != nil {
		o.OnEvent(ctx, e)
	}
	if handler != nil {
		handler.emit(ctx, e)
		return
	}
	if fn := eventsFrom(ctx); fn != nil {
		fn(ctx, e)
		return
	}
	if loudKind(e.Kind) {
		logLoud(ctx, e)
	}
}

// reportLoud reports e, an event that means a protection did not hold (a
// call passed unchecked or uncounted), like report; with no event handler
// at all it also logs e to slog.Default() at Warn, so that failing open is
// never silent by default.
func reportLoud(ctx context.Context, handler eventOption, e Event) {
	report(ctx, handler, e)
	if handler == nil && eventsFrom(ctx) == nil && !loudKind(e.Kind) {
		logLoud(ctx, e)
	}
}

// logLoud logs e to slog.Default at Warn.
func logLoud(ctx context.Context, e Event) {
	slog.Default().LogAttrs(ctx, slog.LevelWarn, "toolguard: "+string(e.Kind), slog.Any("event", e),
		slog.String("hint", "guard.WithEvents or guard.WithEventHandler routes or silences these"))
}
