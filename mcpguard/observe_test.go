package mcpguard_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/guard/otelguard"
	"github.com/toolguard/toolguard/mcpguard"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// otelguard's observer, given with WithObserver, makes an execute_tool
// span of each tools/call with the tool's name, an error.type for a call
// the transport refused (invalid arguments, a limit, a result that breaks
// the outputSchema) and the transport's events as span events; its
// toolguard.events counter counts the events by kind.
func TestObserverSpansAndCounters(t *testing.T) {
	spans, reader := tracetest.NewSpanRecorder(), sdkmetric.NewManualReader()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()); _ = mp.Shutdown(context.Background()) })
	o := otelguard.New(otelguard.WithTracerProvider(tp), otelguard.WithMeterProvider(mp))

	mode := modes[1]
	srv, _ := newServer(t, mode)
	cs := connect(t, srv, mode, mcpguard.WithObserver(o), mcpguard.WithEventHandler(func(context.Context, guard.Event) {}),
		mcpguard.WithCallLimit(mcpguard.PerSession, guard.WithThreadLimit(2)))
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"forecast", map[string]any{"city": "Oslo", "days": 0}}, // invalid
		{"forecast", forecastArgs},                              // runs
		{"bad_output", map[string]any{}},                        // result withheld
		{"forecast", forecastArgs},                              // past the limit
	} {
		if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: c.tool, Arguments: c.args}); err != nil {
			t.Fatalf("CallTool(%s): %v", c.tool, err)
		}
	}

	var got []string
	for _, s := range spans.Ended() {
		if !strings.HasPrefix(s.Name(), "execute_tool") {
			continue
		}
		attrs := map[attribute.Key]string{}
		for _, a := range s.Attributes() {
			attrs[a.Key] = a.Value.String()
		}
		var evs []string
		for _, e := range s.Events() {
			evs = append(evs, e.Name)
		}
		got = append(got, fmt.Sprintf("%s tool=%s id=%s error.type=%s events=%v",
			s.Name(), attrs["gen_ai.tool.name"], attrs["gen_ai.tool.call.id"], attrs["error.type"], evs))
	}
	want := []string{
		"execute_tool forecast tool=forecast id=2 error.type=*validation.Error events=[toolguard.invalid]",
		"execute_tool forecast tool=forecast id=3 error.type= events=[]",
		"execute_tool bad_output tool=bad_output id=4 error.type=*validation.Error events=[toolguard.invalid_result]",
		"execute_tool forecast tool=forecast id=5 error.type=*guard.LimitExceededError events=[toolguard.limit]",
	}
	if !slices.Equal(got, want) {
		t.Errorf("execute_tool spans:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, s := range got {
		t.Log(s)
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(t.Context(), &rm); err != nil {
		t.Fatal(err)
	}
	counts := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != otelguard.EventsMetric {
				continue
			}
			for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
				kind, _ := dp.Attributes.Value("toolguard.event.kind")
				mw, _ := dp.Attributes.Value("toolguard.middleware")
				counts[kind.String()+"/"+mw.String()] += dp.Value
			}
		}
	}
	wantCounts := map[string]int64{"invalid/mcpguard": 1, "invalid_result/mcpguard": 1, "limit/ToolCallLimit": 1}
	if fmt.Sprint(counts) != fmt.Sprint(wantCounts) {
		t.Errorf("%s = %v, want %v", otelguard.EventsMetric, counts, wantCounts)
	}
	t.Logf("%s: %v", otelguard.EventsMetric, counts)
}
