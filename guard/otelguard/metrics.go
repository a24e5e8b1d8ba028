package otelguard

import (
	"context"
	"time"

	"github.com/toolguard/toolguard/guard"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
)

// The names of the instruments.
const (
	// EventsMetric counts toolguard events by toolguard.event.kind and
	// toolguard.guard.
	EventsMetric = "toolguard.events"
	// DurationMetric is the GenAI histogram of request durations, in
	// seconds, one point per request that reaches the model.
	DurationMetric = "gen_ai.client.operation.duration"
	// TokenUsageMetric is the GenAI histogram of tokens per request, by
	// gen_ai.token.type, where the provider reports them.
	TokenUsageMetric = "gen_ai.client.token.usage"
)

// metrics holds the instruments of one Observer.
type metrics struct {
	events   metric.Int64Counter
	duration metric.Float64Histogram
	tokens   metric.Int64Histogram
	models   *modelLabels // the closed set of gen_ai.request.model values, with their sets
}

// newMetrics creates the instruments on m, for an Observer whose provider
// is provider. An instrument m refuses is reported to otel.Handle and
// replaced by a no-op.
func newMetrics(m metric.Meter, provider string) metrics {
	ms := metrics{models: newModelLabels(provider)}
	var err error
	if ms.events, err = m.Int64Counter(EventsMetric, metric.WithUnit("{event}"),
		metric.WithDescription("toolguard events: re-asks, retries, invalid calls, blocked calls, …")); err != nil {
		otel.Handle(err)
		ms.events = noop.Int64Counter{}
	}
	if ms.duration, err = m.Float64Histogram(DurationMetric, metric.WithUnit("s"),
		metric.WithDescription("GenAI operation duration."),
		metric.WithExplicitBucketBoundaries(0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92)); err != nil {
		otel.Handle(err)
		ms.duration = noop.Float64Histogram{}
	}
	if ms.tokens, err = m.Int64Histogram(TokenUsageMetric, metric.WithUnit("{token}"),
		metric.WithDescription("Number of input and output tokens used."),
		metric.WithExplicitBucketBoundaries(1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864)); err != nil {
		otel.Handle(err)
		ms.tokens = noop.Int64Histogram{}
	}
	return ms
}

// event counts e.
func (m metrics) event(ctx context.Context, e guard.Event) {
	if !m.events.Enabled(ctx) {
		return
	}
	m.events.Add(ctx, 1, metric.WithAttributes(keyKind.String(string(e.Kind)), keyMiddleware.String(e.Middleware)))
}

// request records one request's duration and token usage, by model from
// a closed set (modelLabels). A successful request records with the sets
// its label holds; a failed one adds error.type, whose values (a
// provider's error code among them) are not a closed set, so its sets
// are built for it.
func (m metrics) request(ctx context.Context, model string, elapsed time.Duration, u usage, err error) {
	if !m.duration.Enabled(ctx) && !m.tokens.Enabled(ctx) {
		return
	}
	sets := m.models.sets(model)
	duration, input, output := sets.duration, sets.input, sets.output
	if err != nil {
		attrs := append(sets.attrs, semconv.ErrorTypeKey.String(errorType(err)))
		duration = recordWith(attrs...)
		input = recordWith(append(attrs, semconv.GenAITokenTypeInput)...)
		output = recordWith(append(attrs, semconv.GenAITokenTypeOutput)...)
	}
	m.duration.Record(ctx, elapsed.Seconds(), duration...)
	if u.input >= 0 {
		m.tokens.Record(ctx, u.input, input...)
	}
	if u.output >= 0 {
		m.tokens.Record(ctx, u.output, output...)
	}
}
