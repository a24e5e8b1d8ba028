// Command otel shows what otelguard makes visible in a trace: the
// quickstart's agent (a bad tool call caught, fed back to the model and
// corrected) with a transient 503 first and a weather service that times
// out once (an idempotent tool, which toolstage.ToolRetry runs again), traced
// with OpenTelemetry and printed as a span tree.
//
// It runs offline on a scripted fake model and an in-memory span recorder.
// With -stdout it also writes every span with the SDK's stdout exporter.
//
//	go run ./examples/otel
//	go run ./examples/otel -stdout
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/agent"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/guard/otelguard"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/fakemodel"
	"github.com/toolguard/toolguard/toolstage"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// WeatherArgs are the arguments of the get_weather tool: city is required,
// units is optional.
type WeatherArgs struct {
	City  string `json:"city" jsonschema:"the city, e.g. Paris"`
	Units Units  `json:"units,omitempty"`
}

// Units is a temperature unit.
type Units string

// JSONSchema restricts Units to the values the tool understands.
func (Units) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{Type: "string", Enum: []any{"celsius", "fahrenheit"}}
}

func main() {
	stdout := flag.Bool("stdout", false, "also write the spans with the OpenTelemetry stdout exporter")
	flag.Parse()
	if err := run(context.Background(), os.Stdout, scriptedModel(), *stdout); err != nil {
		log.Fatal(err)
	}
}

// scriptedModel fails once with a 503, makes a bad call, then the corrected
// call, then answers.
func scriptedModel() *fakemodel.Model {
	return fakemodel.New(
		fakemodel.Fail(errors.New("API returned unexpected status code: 503: overloaded")),
		fakemodel.ToolCalls(fakemodel.Call("get_weather", `{"city": 75001, "units": null}`)),
		fakemodel.ToolCalls(fakemodel.Call("get_weather", `{"city": "Paris"}`)),
		fakemodel.Text("It is 18 °C and sunny in Paris."),
	)
}

func run(ctx context.Context, out io.Writer, model llms.Model, stdout bool) error {
	spans := tracetest.NewSpanRecorder()
	tpOpts := []sdktrace.TracerProviderOption{sdktrace.WithSpanProcessor(spans)}
	if stdout {
		exp, err := stdouttrace.New(stdouttrace.WithWriter(out), stdouttrace.WithPrettyPrint())
		if err != nil {
			return err
		}
		tpOpts = append(tpOpts, sdktrace.WithSyncer(exp))
	}
	tp := sdktrace.NewTracerProvider(tpOpts...)
	defer func() { _ = tp.Shutdown(context.Background()) }()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer func() { _ = mp.Shutdown(context.Background()) }()

	// The weather service times out on the first request. A lookup may
	// safely run twice, so the tool is marked Idempotent and ToolRetry
	// runs it again; the call stays one execute_tool span.
	timeouts := 1
	weather := toolstage.Idempotent(toolstage.NewTool("get_weather", "Current weather in a city.",
		func(_ context.Context, args WeatherArgs) (string, error) {
			if timeouts > 0 {
				timeouts--
				return "", fmt.Errorf("weather API: %w", context.DeadlineExceeded)
			}
			return `{"temperature_c": 18, "sky": "sunny"}`, nil
		}))
	a := agent.New(model, toolstage.New([]toolstage.Tool{weather}, toolstage.WithToolMiddleware(toolstage.ToolRetry(toolstage.WithBackOff(func() backoff.BackOff {
		return backoff.NewConstantBackOff(50 * time.Millisecond)
	})))), agent.WithCallOptions(llms.WithModel("gpt-4o-mini")), agent.WithMiddleware(
		// Outermost: it sees the whole stack, and the agent finds it
		// and adds invoke_agent and execute_tool spans.
		middleware.Observe(otelguard.New(otelguard.WithTracerProvider(tp), otelguard.WithMeterProvider(mp))),
		middleware.ToolArgValidation(),
		// A short backoff for the demo; the default waits about 1 s.
		middleware.ModelRetry(guard.WithBackOff(func() backoff.BackOff {
			return backoff.NewConstantBackOff(50 * time.Millisecond)
		})),
	))
	res, err := a.Run(ctx, "What's the weather in Paris?")
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "assistant: %s\n\nspans:\n", res.Output)
	printTree(out, spans.Ended())

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		return err
	}
	fmt.Fprintln(out, "\nmetrics:")
	printMetrics(out, rm)
	return nil
}

// printTree prints spans as a tree, children under their parent in the
// order they started, each with its kind, attributes and events.
func printTree(out io.Writer, spans []sdktrace.ReadOnlySpan) {
	slices.SortFunc(spans, func(a, b sdktrace.ReadOnlySpan) int { return a.StartTime().Compare(b.StartTime()) })
	children := map[trace.SpanID][]sdktrace.ReadOnlySpan{}
	ids := map[trace.SpanID]bool{}
	for _, s := range spans {
		ids[s.SpanContext().SpanID()] = true
	}
	var roots []sdktrace.ReadOnlySpan
	for _, s := range spans {
		if p := s.Parent().SpanID(); s.Parent().IsValid() && ids[p] {
			children[p] = append(children[p], s)
		} else {
			roots = append(roots, s)
		}
	}
	var walk func(s sdktrace.ReadOnlySpan, depth int)
	walk = func(s sdktrace.ReadOnlySpan, depth int) {
		indent := strings.Repeat("    ", depth)
		status := ""
		if s.Status().Code.String() == "Error" {
			status = " ERROR(" + s.Status().Description + ")"
		}
		fmt.Fprintf(out, "%s%s [%s]%s %s\n", indent, s.Name(), s.SpanKind(), status, attrs(s.Attributes()))
		for _, e := range s.Events() {
			fmt.Fprintf(out, "%s  * %s %s\n", indent, e.Name, attrs(e.Attributes))
		}
		for _, c := range children[s.SpanContext().SpanID()] {
			walk(c, depth+1)
		}
	}
	for _, r := range roots {
		walk(r, 0)
	}
}

// attrs renders attributes as key=value, sorted by key.
func attrs(kvs []attribute.KeyValue) string {
	parts := make([]string, 0, len(kvs))
	for _, kv := range kvs {
		parts = append(parts, string(kv.Key)+"="+kv.Value.String())
	}
	slices.Sort(parts)
	return strings.Join(parts, " ")
}

// printMetrics prints the event counts and the number of requests timed.
func printMetrics(out io.Writer, rm metricdata.ResourceMetrics) {
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				lines := make([]string, 0, len(d.DataPoints))
				for _, p := range d.DataPoints {
					lines = append(lines, fmt.Sprintf("  %s{%s} %d", m.Name, attrs(p.Attributes.ToSlice()), p.Value))
				}
				slices.Sort(lines)
				fmt.Fprintln(out, strings.Join(lines, "\n"))
			case metricdata.Histogram[float64]:
				var n uint64
				for _, p := range d.DataPoints {
					n += p.Count
				}
				fmt.Fprintf(out, "  %s: %d points (%s)\n", m.Name, n, m.Unit)
			}
		}
	}
}
