package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// The proxy's own instruments, beside otelguard's (toolguard.events,
// gen_ai.client.operation.duration, gen_ai.client.token.usage). Their
// names follow OpenTelemetry's HTTP semantic conventions.
const (
	// requestDurationMetric: one point per client request, by method and
	// status; its count is the number of requests served.
	requestDurationMetric = "http.server.request.duration"
	// activeRequestsMetric: the requests in flight.
	activeRequestsMetric = "http.server.active_requests"
)

// serviceName is the resource's service.name unless OTEL_SERVICE_NAME
// says otherwise.
const serviceName = "toolguard-proxy"

// telemetry is the proxy's OpenTelemetry: a MeterProvider read by the
// Prometheus exporter into a registry of its own, and a TracerProvider
// that exports over OTLP/HTTP when OTEL_EXPORTER_OTLP_ENDPOINT (or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set, else a no-op one. Nothing
// global is set: the providers are handed to otelguard.
type telemetry struct {
	meters     *sdkmetric.MeterProvider
	metrics    http.Handler
	tracer     trace.TracerProvider
	traces     *sdktrace.TracerProvider // nil without OTLP
	propagator propagation.TextMapPropagator

	duration metric.Float64Histogram
	active   metric.Int64UpDownCounter
	attrs    requestAttrs // the sets duration and active record with
}

// otlpConfigured reports whether the environment names an OTLP endpoint
// for traces.
func otlpConfigured() bool {
	return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

func newTelemetry(ctx context.Context, otlp bool) (*telemetry, error) {
	res, err := resource.New(ctx,
		resource.WithAttributes(semconv.ServiceName(serviceName)),
		resource.WithFromEnv(), // OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
		resource.WithTelemetrySDK())
	if err != nil {
		return nil, fmt.Errorf("toolguard-proxy: telemetry resource: %w", err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	exp, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		return nil, fmt.Errorf("toolguard-proxy: prometheus exporter: %w", err)
	}
	t := &telemetry{
		meters:     sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp), sdkmetric.WithResource(res)),
		metrics:    promhttp.HandlerFor(reg, promhttp.HandlerOpts{}),
		tracer:     tracenoop.NewTracerProvider(),
		propagator: propagation.TraceContext{},
	}
	if otlp {
		// The exporter reads the endpoint, headers, timeout and TLS
		// settings from the OTEL_EXPORTER_OTLP_* variables itself.
		texp, err := otlptracehttp.New(ctx)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("toolguard-proxy: otlp trace exporter: %w", err), t.meters.Shutdown(ctx))
		}
		t.traces = sdktrace.NewTracerProvider(sdktrace.WithBatcher(texp), sdktrace.WithResource(res))
		t.tracer = t.traces
	}
	m := t.meters.Meter("github.com/toolguard/toolguard/cmd/toolguard-proxy")
	if t.duration, err = m.Float64Histogram(requestDurationMetric, metric.WithUnit("s"),
		metric.WithDescription("Duration of the requests the proxy served, streams to their end."),
		metric.WithExplicitBucketBoundaries(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)); err != nil {
		return nil, err
	}
	if t.active, err = m.Int64UpDownCounter(activeRequestsMetric, metric.WithUnit("{request}"),
		metric.WithDescription("Requests the proxy is serving.")); err != nil {
		return nil, err
	}
	return t, nil
}

// shutdown flushes the traces not yet exported and stops the providers.
func (t *telemetry) shutdown(ctx context.Context) error {
	var errs []error
	if t.traces != nil {
		errs = append(errs, t.traces.Shutdown(ctx))
	}
	errs = append(errs, t.meters.Shutdown(ctx))
	return errors.Join(errs...)
}
