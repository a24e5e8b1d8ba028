package otelguard

import (
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// Option configures [New].
type Option func(*config)

type config struct {
	tp       trace.TracerProvider // nil: otel.GetTracerProvider()
	mp       metric.MeterProvider // nil: otel.GetMeterProvider()
	capture  bool
	provider string
}

// WithTracerProvider sets where the spans go. The default, and a nil tp, is
// otel.GetTracerProvider() as it is when [New] is called.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *config) { c.tp = tp }
}

// WithMeterProvider sets where the metrics go. The default, and a nil mp, is
// otel.GetMeterProvider() as it is when [New] is called.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(c *config) { c.mp = mp }
}

// WithCaptureContent makes the spans record what the model and the user
// sent: what each request's answer holds (gen_ai.output.messages on its
// chat span: text and tool calls with their arguments), the feedback text
// the model is sent about an invalid call, error texts (which may quote the
// model's output), and each tool execution's arguments and result. Values
// of injected arguments (guard.WithInjectedArgs) are never recorded,
// neither the application's nor any a model forged. The default is off: spans, span events and metrics
// then carry names, ids, counts, JSON Pointer paths, durations and error
// types only.
func WithCaptureContent() Option {
	return func(c *config) { c.capture = true }
}

// WithProviderName sets gen_ai.provider.name on the chat spans and the
// GenAI metrics: "openai", "anthropic", "gcp.gemini", "aws.bedrock", … as
// the GenAI semantic conventions name them. The default, "", leaves the
// attribute out: the observer cannot tell which provider the adapter
// calls.
func WithProviderName(name string) Option {
	return func(c *config) { c.provider = name }
}
