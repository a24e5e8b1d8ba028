package otelguard

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/toolguard/toolguard/guard"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of otelguard's tracer and meter.
const ScopeName = "github.com/toolguard/toolguard/guard/otelguard"

// CallSpanName is the name of the span of one logical call through the
// stack (one GenerateContent of a wrapped langchaingo model, one request a
// client sends through httpguard).
const CallSpanName = "toolguard.generate_content"

// chatName is the name of a request's span without a model.
const chatName = "chat"

// New returns an observer that makes everything a stack it is installed in
// does visible to OpenTelemetry. An adapter installs it outermost:
//
//	middleware.Wrap(model, middleware.Observe(otelguard.New()), middleware.ToolCallLimit(...),
//		middleware.ToolArgValidation(...), middleware.ModelRetry(...))
//
// Each logical call gets a [CallSpanName] span carrying the toolguard
// events of the call as span events; each request that reaches the model
// gets a "chat {model}" span under it (see the package doc for the
// attributes and metrics). It is a [guard.Observer], a [guard.CallObserver]
// and a [guard.RunObserver], so an agent.Agent given it (through
// middleware.Observe and agent.WithMiddleware) adds an invoke_agent span per
// run and an execute_tool span per tool call. Options are
// [WithTracerProvider], [WithMeterProvider], [WithCaptureContent] and
// [WithProviderName]; without them the global providers are used, no
// content is recorded and no provider is named. It is safe for concurrent
// use.
func New(opts ...Option) *Observer {
	var cfg config
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	if cfg.tp == nil {
		cfg.tp = otel.GetTracerProvider()
	}
	if cfg.mp == nil {
		cfg.mp = otel.GetMeterProvider()
	}
	o := &Observer{
		tracer:   cfg.tp.Tracer(ScopeName),
		capture:  cfg.capture,
		provider: cfg.provider,
		client:   trace.WithSpanKind(trace.SpanKindClient),
		internal: trace.WithSpanKind(trace.SpanKindInternal),
	}
	o.metrics = newMetrics(cfg.mp.Meter(ScopeName), cfg.provider)
	return o
}

// Observer is the [guard.Observer], [guard.CallObserver] and
// [guard.RunObserver] [New] returns.
type Observer struct {
	tracer           trace.Tracer
	metrics          metrics
	capture          bool
	provider         string                // gen_ai.provider.name, or ""
	client, internal trace.SpanStartOption // the span kinds, made once
}

var (
	_ guard.Observer     = (*Observer)(nil)
	_ guard.CallObserver = (*Observer)(nil)
	_ guard.RunObserver  = (*Observer)(nil)
)

// callKey is the context key of a logical call in progress.
type callKey struct{}

// call is one logical call's state.
type call struct {
	obs      *Observer
	span     trace.Span
	requests atomic.Int64
}

// callOf returns the logical call of o in ctx, or nil.
func (o *Observer) callOf(ctx context.Context) *call {
	if c, ok := ctx.Value(callKey{}).(*call); ok && c.obs == o {
		return c
	}
	return nil
}

// OnCall starts the [CallSpanName] span of a logical call; the returned
// function ends it.
func (o *Observer) OnCall(ctx context.Context, mc guard.ModelCall) (context.Context, func(error)) {
	opts := []trace.SpanStartOption{o.internal}
	if mc.Model != "" {
		opts = append(opts, trace.WithAttributes(semconv.GenAIRequestModel(mc.Model)))
	}
	ctx, span := o.tracer.Start(ctx, CallSpanName, opts...)
	c := &call{obs: o, span: span}
	ctx = context.WithValue(ctx, callKey{}, c)
	return ctx, func(err error) {
		if span.IsRecording() {
			span.SetAttributes(keyRequests.Int64(c.requests.Load()))
			if err != nil {
				o.fail(span, err)
			}
		}
		span.End()
	}
}

// fail marks span failed with err: error.type and an error status, and the
// error's text only with WithCaptureContent.
func (o *Observer) fail(span trace.Span, err error) {
	typ := errorType(err)
	span.SetAttributes(semconv.ErrorTypeKey.String(typ))
	if o.capture {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		return
	}
	span.SetStatus(codes.Error, typ)
}

// OnModelCall starts a "chat {model}" span for a request that reaches the
// model; the returned function ends it and records the request's metrics.
func (o *Observer) OnModelCall(ctx context.Context, mc guard.ModelCall) (context.Context, func(guard.ModelResult)) {
	if c := o.callOf(ctx); c != nil {
		c.requests.Add(1)
	}
	model := mc.Model
	name := chatName
	attrs := []attribute.KeyValue{semconv.GenAIOperationNameChat}
	if o.provider != "" {
		attrs = append(attrs, semconv.GenAIProviderNameKey.String(o.provider))
	}
	if model != "" {
		name += " " + model
		attrs = append(attrs, semconv.GenAIRequestModel(model))
	}
	ctx, span := o.tracer.Start(ctx, name, o.client, trace.WithAttributes(attrs...))
	start := time.Now()
	return ctx, func(r guard.ModelResult) {
		o.endChat(ctx, span, model, start, r)
	}
}

// endChat ends a chat span with the request's outcome and records its
// duration and token usage.
func (o *Observer) endChat(ctx context.Context, span trace.Span, model string, start time.Time, r guard.ModelResult) {
	elapsed := time.Since(start)
	u := usage{-1, -1}
	if r.Err == nil {
		u = usage{int64(r.InputTokens), int64(r.OutputTokens)}
	}
	if span.IsRecording() {
		if r.Err != nil {
			o.fail(span, r.Err)
		} else {
			if u.input >= 0 {
				span.SetAttributes(semconv.GenAIUsageInputTokens(int(u.input)))
			}
			if u.output >= 0 {
				span.SetAttributes(semconv.GenAIUsageOutputTokens(int(u.output)))
			}
			if len(r.FinishReasons) > 0 {
				span.SetAttributes(semconv.GenAIResponseFinishReasons(r.FinishReasons...))
			}
			if o.capture && r.Output != nil {
				span.SetAttributes(keyOutputMessages.String(r.Output()))
			}
		}
	}
	span.End()
	o.metrics.request(ctx, model, elapsed, u, r.Err)
}

// usage holds the tokens a response reports; a field is -1 when not reported.
type usage struct{ input, output int64 }

// keyOutputMessages is the GenAI attribute holding what the model answered,
// recorded only with WithCaptureContent.
const keyOutputMessages = attribute.Key("gen_ai.output.messages")
