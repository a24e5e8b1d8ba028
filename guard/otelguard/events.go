package otelguard

import (
	"context"
	"errors"

	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/validation"
	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// EventPrefix starts the name of the span event of each toolguard event:
// "toolguard.reask", "toolguard.retry", "toolguard.invalid", ….
const EventPrefix = "toolguard."

// OnEvent adds e to the logical call's span as a span event named
// EventPrefix + e.Kind, and counts it in toolguard.events.
func (o *Observer) OnEvent(ctx context.Context, e guard.Event) {
	o.metrics.event(ctx, e)
	span := trace.SpanFromContext(ctx)
	if c := o.callOf(ctx); c != nil {
		span = c.span
	}
	if !span.IsRecording() {
		return
	}
	span.AddEvent(EventPrefix+string(e.Kind), trace.WithAttributes(o.eventAttrs(e)...))
}

// eventAttrs returns the attributes of e's span event. Only with
// WithCaptureContent do they include the feedback and the error's text.
func (o *Observer) eventAttrs(e guard.Event) []attribute.KeyValue {
	attrs := make([]attribute.KeyValue, 0, 8)
	attrs = append(attrs, keyMiddleware.String(e.Middleware))
	if e.Attempt != 0 {
		attrs = append(attrs, keyAttempt.Int(e.Attempt))
	}
	if e.Tool != "" {
		attrs = append(attrs, semconv.GenAIToolName(e.Tool))
	}
	if e.CallID != "" {
		attrs = append(attrs, semconv.GenAIToolCallID(e.CallID))
	}
	paths := e.Paths
	var ve *validation.Error
	if errors.As(e.Err, &ve) && len(paths) == 0 {
		keywords := make([]string, 0, len(ve.Violations))
		for _, v := range ve.Violations {
			paths = append(paths, v.Path)
			keywords = append(keywords, v.Keyword)
		}
		attrs = append(attrs, keyKeywords.StringSlice(keywords))
	}
	if len(paths) > 0 {
		attrs = append(attrs, keyPaths.StringSlice(paths))
	}
	if e.Wait != 0 || e.Kind == guard.EventRetry || e.Kind == guard.EventToolRetry {
		// A retry's wait is recorded even when it is none.
		attrs = append(attrs, keyWait.Float64(e.Wait.Seconds()))
	}
	var le *guard.LimitExceededError
	if errors.As(e.Err, &le) {
		attrs = append(attrs, keyLimitScope.String(string(le.Scope)), keyLimitMax.Int(le.Limit), keyLimitCount.Int(le.Count))
	}
	if e.Err != nil {
		attrs = append(attrs, semconv.ErrorTypeKey.String(errorType(e.Err)))
		if o.capture {
			attrs = append(attrs, keyErrorMessage.String(e.Err.Error()))
		}
	}
	if o.capture && e.Feedback != "" {
		attrs = append(attrs, keyFeedback.String(e.Feedback))
	}
	return attrs
}
