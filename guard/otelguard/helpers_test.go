package otelguard_test

import (
	"context"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/guard/otelguard"
	"github.com/toolguard/toolguard/middleware"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// telemetry is an in-memory SDK setup: a span recorder and a manual metric
// reader, nothing exported.
type telemetry struct {
	spans  *tracetest.SpanRecorder
	reader *sdkmetric.ManualReader
	tp     *sdktrace.TracerProvider
	mp     *sdkmetric.MeterProvider
}

func newTelemetry(t *testing.T) *telemetry {
	t.Helper()
	tel := &telemetry{spans: tracetest.NewSpanRecorder(), reader: sdkmetric.NewManualReader()}
	tel.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(tel.spans))
	tel.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(tel.reader))
	t.Cleanup(func() {
		_ = tel.tp.Shutdown(context.Background())
		_ = tel.mp.Shutdown(context.Background())
	})
	return tel
}

// middleware returns otelguard's middleware writing to tel.
func (tel *telemetry) middleware(opts ...otelguard.Option) middleware.Middleware {
	return middleware.Observe(otelguard.New(append([]otelguard.Option{
		otelguard.WithTracerProvider(tel.tp), otelguard.WithMeterProvider(tel.mp),
	}, opts...)...))
}

// ended returns the ended spans named name (all with name "").
func (tel *telemetry) ended(name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range tel.spans.Ended() {
		if name == "" || s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

// metrics collects the metrics recorded so far.
func (tel *telemetry) metrics(t *testing.T) metricdata.ResourceMetrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := tel.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	return rm
}

// find returns the metric named name, or nil.
func find(rm metricdata.ResourceMetrics, name string) *metricdata.Metrics {
	for _, sm := range rm.ScopeMetrics {
		for i := range sm.Metrics {
			if sm.Metrics[i].Name == name {
				return &sm.Metrics[i]
			}
		}
	}
	return nil
}

// attr returns the value of key in attrs, or "".
func attr(attrs []attribute.KeyValue, key string) string {
	for _, kv := range attrs {
		if string(kv.Key) == key {
			return kv.Value.String()
		}
	}
	return ""
}

// has reports whether attrs holds key.
func has(attrs []attribute.KeyValue, key string) bool {
	for _, kv := range attrs {
		if string(kv.Key) == key {
			return true
		}
	}
	return false
}

// everything returns all the text the recorded telemetry holds: span names,
// attributes, event names and attributes, statuses, links, and every metric
// data point's attributes.
func (tel *telemetry) everything(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	add := func(attrs []attribute.KeyValue) {
		for _, kv := range attrs {
			b.WriteString(string(kv.Key) + "=" + kv.Value.String() + "\n")
		}
	}
	for _, s := range tel.spans.Ended() {
		b.WriteString(s.Name() + "\n" + s.Status().Description + "\n")
		add(s.Attributes())
		for _, e := range s.Events() {
			b.WriteString(e.Name + "\n")
			add(e.Attributes)
		}
	}
	rm := tel.metrics(t)
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					add(p.Attributes.ToSlice())
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					add(p.Attributes.ToSlice())
				}
			case metricdata.Histogram[int64]:
				for _, p := range d.DataPoints {
					add(p.Attributes.ToSlice())
				}
			}
		}
	}
	return b.String()
}

// weatherTool is a get_weather tool whose city is a required string and
// units an optional enum.
var weatherTool = llms.Tool{Type: "function", Function: &llms.FunctionDefinition{
	Name: "get_weather",
	Parameters: map[string]any{
		"type": "object",
		"properties": map[string]any{
			"city":  map[string]any{"type": "string"},
			"units": map[string]any{"type": "string", "enum": []any{"celsius", "fahrenheit"}},
		},
		"required":             []any{"city"},
		"additionalProperties": false,
	},
}}

func human(s string) []llms.MessageContent {
	return []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, s)}
}
