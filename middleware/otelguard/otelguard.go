package otelguard

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/middleware"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of otelguard's tracer and meter.
const ScopeName = "github.com/toolguard/toolguard/middleware/otelguard"

// CallSpanName is the name of the span of one logical call through the
// stack (one GenerateContent of the wrapped model).
const CallSpanName = "toolguard.generate_content"

// chatName is the name of a request's span without a model.
const chatName = "chat"

// Middleware returns a middleware that makes everything the stack inside it
// does visible to OpenTelemetry. Place it outermost:
//
//	middleware.Wrap(model, otelguard.Middleware(), middleware.ToolCallLimit(...),
//		middleware.ToolArgValidation(...), middleware.ModelRetry(...))
//
// Each call gets a [CallSpanName] span carrying the toolguard events of the
// call as span events; each request that reaches the model gets a
// "chat {model}" span under it (see the package doc for the attributes and
// metrics). It installs its observer in the call's context
// ([middleware.WithObserver]) and also implements
// [middleware.ObserverInstaller], so an agent.Agent given it with
// agent.WithMiddleware adds an invoke_agent span per run and an
// execute_tool span per tool call. Options are [WithTracerProvider],
// [WithMeterProvider], [WithCaptureContent] and [WithProviderName]; without
// them the global providers are used, no content is recorded and no
// provider is named. It is safe for concurrent use.
func Middleware(opts ...Option) middleware.Middleware {
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
	o := &observer{
		tracer:   cfg.tp.Tracer(ScopeName),
		capture:  cfg.capture,
		provider: cfg.provider,
		client:   trace.WithSpanKind(trace.SpanKindClient),
		internal: trace.WithSpanKind(trace.SpanKindInternal),
	}
	o.metrics = newMetrics(cfg.mp.Meter(ScopeName))
	return &guard{obs: o}
}

// guard is the middleware Middleware returns.
type guard struct{ obs *observer }

// stateKey is the context key of a guard's state in a context: which
// observer is installed, and the logical call in progress.
type stateKey struct{}

// state is the value of stateKey.
type state struct {
	obs  *observer
	call *call // nil outside a call
}

// InstallObserver returns ctx carrying the middleware's observer, unless it
// does already.
func (g *guard) InstallObserver(ctx context.Context) context.Context {
	if st, ok := ctx.Value(stateKey{}).(*state); ok && st.obs == g.obs {
		return ctx
	}
	ctx = middleware.WithObserver(ctx, g.obs)
	return context.WithValue(ctx, stateKey{}, &state{obs: g.obs})
}

// WrapModelCall wraps next in the call's span.
func (g *guard) WrapModelCall(next middleware.Handler) middleware.Handler {
	return func(ctx context.Context, req *middleware.Request) (*llms.ContentResponse, error) {
		if st, ok := ctx.Value(stateKey{}).(*state); !ok || st.obs != g.obs {
			ctx = middleware.WithObserver(ctx, g.obs)
		}
		model := req.CallOptions().Model
		opts := []trace.SpanStartOption{g.obs.internal}
		if model != "" {
			opts = append(opts, trace.WithAttributes(semconv.GenAIRequestModel(model)))
		}
		ctx, span := g.obs.tracer.Start(ctx, CallSpanName, opts...)
		c := &call{span: span, req: req, model: model}
		ctx = context.WithValue(ctx, stateKey{}, &state{obs: g.obs, call: c})
		resp, err := next(ctx, req)
		if span.IsRecording() {
			span.SetAttributes(keyRequests.Int64(c.requests.Load()))
			if err != nil {
				g.obs.fail(span, err)
			}
		}
		span.End()
		return resp, err
	}
}

// call is one logical call's state.
type call struct {
	span     trace.Span
	req      *middleware.Request // the request the call was made with
	model    string              // its model
	requests atomic.Int64
}

// callOf returns the logical call of o in ctx, or nil.
func (o *observer) callOf(ctx context.Context) *call {
	if st, ok := ctx.Value(stateKey{}).(*state); ok && st.obs == o {
		return st.call
	}
	return nil
}

// observer is the middleware.Observer and middleware.RunObserver a guard
// installs.
type observer struct {
	tracer           trace.Tracer
	metrics          metrics
	capture          bool
	provider         string                // gen_ai.provider.name, or ""
	client, internal trace.SpanStartOption // the span kinds, made once
}

// fail marks span failed with err: error.type and an error status, and the
// error's text only with WithCaptureContent.
func (o *observer) fail(span trace.Span, err error) {
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
func (o *observer) OnModelCall(ctx context.Context, req *middleware.Request) (context.Context, func(*llms.ContentResponse, error)) {
	c := o.callOf(ctx)
	if c != nil {
		c.requests.Add(1)
	}
	var model string
	if c != nil && c.req == req {
		model = c.model // the call's own request: its options are read already
	} else {
		model = req.CallOptions().Model
	}
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
	return ctx, func(resp *llms.ContentResponse, err error) {
		o.endChat(ctx, span, model, start, resp, err)
	}
}

// endChat ends a chat span with the request's outcome and records its
// duration and token usage.
func (o *observer) endChat(ctx context.Context, span trace.Span, model string, start time.Time, resp *llms.ContentResponse, err error) {
	elapsed := time.Since(start)
	u := usage{-1, -1}
	if err == nil {
		u = usageOf(resp)
	}
	if span.IsRecording() {
		if err != nil {
			o.fail(span, err)
		} else {
			if u.input >= 0 {
				span.SetAttributes(semconv.GenAIUsageInputTokens(int(u.input)))
			}
			if u.output >= 0 {
				span.SetAttributes(semconv.GenAIUsageOutputTokens(int(u.output)))
			}
			if reasons := finishReasons(resp); len(reasons) > 0 {
				span.SetAttributes(semconv.GenAIResponseFinishReasons(reasons...))
			}
			if o.capture {
				span.SetAttributes(keyOutputMessages.String(outputMessages(ctx, resp)))
			}
		}
	}
	span.End()
	o.metrics.request(ctx, o.provider, model, elapsed, u, err)
}

// finishReasons returns the stop reasons of resp's choices that have one.
func finishReasons(resp *llms.ContentResponse) []string {
	var reasons []string
	for _, ch := range resp.Choices {
		if ch != nil && ch.StopReason != "" {
			reasons = append(reasons, ch.StopReason)
		}
	}
	return reasons
}
