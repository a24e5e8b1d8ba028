package otelguard

import (
	"context"

	"github.com/toolguard/toolguard/guard"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// OnRun starts the "invoke_agent" span of an agent run.
func (o *Observer) OnRun(ctx context.Context) (context.Context, func(error)) {
	ctx, span := o.tracer.Start(ctx, semconv.GenAIOperationNameInvokeAgent.Value.AsString(),
		o.internal,
		trace.WithAttributes(semconv.GenAIOperationNameInvokeAgent))
	return ctx, func(err error) {
		if err != nil && span.IsRecording() {
			o.fail(span, err)
		}
		span.End()
	}
}

// OnToolCall starts the "execute_tool {name}" span of a tool call; with
// WithCaptureContent it records the call's arguments (see capturedArgs)
// and result.
func (o *Observer) OnToolCall(ctx context.Context, call guard.Call) (context.Context, func(string, error)) {
	name := call.Name
	attrs := []attribute.KeyValue{
		semconv.GenAIOperationNameExecuteTool,
		semconv.GenAIToolName(name),
		semconv.GenAIToolType("function"),
	}
	if call.ID != "" {
		attrs = append(attrs, semconv.GenAIToolCallID(call.ID))
	}
	if o.capture && name != "" {
		if args, ok := guard.ArgsToRecord(ctx, name, string(call.Args)); ok {
			attrs = append(attrs, semconv.GenAIToolCallArgumentsKey.String(args))
		}
	}
	ctx, span := o.tracer.Start(ctx, semconv.GenAIOperationNameExecuteTool.Value.AsString()+" "+name,
		o.internal, trace.WithAttributes(attrs...))
	return ctx, func(result string, err error) {
		if span.IsRecording() {
			switch {
			case err != nil:
				o.fail(span, err)
			case o.capture:
				span.SetAttributes(semconv.GenAIToolCallResultKey.String(result))
				span.SetStatus(codes.Ok, "")
			}
		}
		span.End()
	}
}
