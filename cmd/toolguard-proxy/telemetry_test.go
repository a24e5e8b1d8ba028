package main

import (
	"bufio"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	fp "github.com/toolguard/toolguard/httpguard/fakeprovider"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// /metrics counts the requests the proxy served, the re-asks and retries
// (toolguard events by kind) and the requests that reached the upstream.
func TestMetrics(t *testing.T) {
	t.Parallel()
	up := fp.New(
		fp.Reply(fp.Call("get_weather", `{"city": 42}`)), // re-asked
		fp.Reply(fp.Call("get_weather", `{"city": "Paris"}`)),
		fp.Error(http.StatusTooManyRequests), // retried
		fp.Reply(fp.Text("Sunny.")),
	)
	defer up.Close()
	p := startProxy(t, up.URL)
	for range 2 {
		if resp, body := post(t, p.URL+"/v1/chat/completions", chatBody); resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, body)
		}
	}
	p.waitLog(t, "toolguard-proxy: request", 2)

	metrics := scrape(t, p.URL+"/metrics")
	for _, want := range []string{
		`http_server_request_duration_seconds_count{http_request_method="POST",http_response_status_code="200",` + scope + `} 2`,
		`toolguard_events_total{` + otelguardScope + `,toolguard_event_kind="reask",toolguard_middleware="ToolArgValidation"} 1`,
		`toolguard_events_total{` + otelguardScope + `,toolguard_event_kind="retry",toolguard_middleware="ModelRetry"} 1`,
		`toolguard_events_total{` + otelguardScope + `,toolguard_event_kind="invalid",toolguard_middleware="ToolArgValidation"} 1`,
		`http_server_active_requests{http_request_method="POST",` + scope + `} 0`,
	} {
		if !slices.Contains(metrics, want) {
			t.Errorf("/metrics has no line\n%s\nin\n%s", want, strings.Join(metrics, "\n"))
		}
	}
	// Four requests reached the upstream: the call, its re-ask, the 429 and its retry.
	if got := sumMetric(metrics, "gen_ai_client_operation_duration_seconds_count"); got != 4 {
		t.Errorf("gen_ai_client_operation_duration_seconds_count sums to %v, want 4", got)
	}
	if !slices.ContainsFunc(metrics, func(l string) bool { return strings.HasPrefix(l, "go_goroutines ") }) {
		t.Error("/metrics has no Go runtime metrics (go_goroutines)")
	}
}

const (
	scope          = `otel_scope_name="github.com/toolguard/toolguard/cmd/toolguard-proxy",otel_scope_schema_url="",otel_scope_version=""`
	otelguardScope = `otel_scope_name="github.com/toolguard/toolguard/guard/otelguard",otel_scope_schema_url="",otel_scope_version=""`
)

// scrape returns the sample lines of a Prometheus scrape.
func scrape(t *testing.T, url string) []string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var lines []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if l := sc.Text(); l != "" && !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	return lines
}

// sumMetric adds the values of the samples of name.
func sumMetric(lines []string, name string) float64 {
	var sum float64
	re := regexp.MustCompile(`^` + regexp.QuoteMeta(name) + `(\{.*\})? ([0-9.e+]+)$`)
	for _, l := range lines {
		if m := re.FindStringSubmatch(l); m != nil {
			if v, err := strconv.ParseFloat(m[2], 64); err == nil {
				sum += v
			}
		}
	}
	return sum
}

// With OTEL_EXPORTER_OTLP_ENDPOINT set, the proxy exports its spans over
// OTLP/HTTP: for a re-asked call, the call's span and one chat span per
// upstream request, in the trace of the client's traceparent; the last
// are flushed at shutdown.
func TestOTLPTraces(t *testing.T) {
	var mu sync.Mutex
	var spans []string
	var traces []string
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var req coltracepb.ExportTraceServiceRequest
		if r.URL.Path != "/v1/traces" || proto.Unmarshal(b, &req) != nil {
			http.Error(w, "bad export", http.StatusBadRequest)
			return
		}
		mu.Lock()
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					spans = append(spans, s.Name)
					traces = append(traces, hex.EncodeToString(s.TraceId))
				}
			}
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Write(out)
	}))
	defer collector.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL)
	t.Setenv("OTEL_EXPORTER_OTLP_INSECURE", "true")
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "3600000") // exported at shutdown only

	up := fp.New(
		fp.Reply(fp.Call("get_weather", `{"city": 42}`)),
		fp.Reply(fp.Call("get_weather", `{"city": "Paris"}`)),
	)
	defer up.Close()
	p := startProxy(t, up.URL)
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	post(t, p.URL+"/v1/chat/completions", chatBody, "traceparent", "00-"+traceID+"-00f067aa0ba902b7-01")
	p.stop(t)

	mu.Lock()
	defer mu.Unlock()
	slices.Sort(spans)
	if want := []string{"chat gpt-4o", "chat gpt-4o", "toolguard.generate_content"}; !slices.Equal(spans, want) {
		t.Errorf("exported spans %q, want %q", spans, want)
	}
	for _, id := range traces {
		if id != traceID {
			t.Errorf("span in trace %s, want the client's %s", id, traceID)
		}
	}
}

// stop shuts the proxy down now (as SIGTERM does) and waits for it.
func (p *proxy) stop(t *testing.T) {
	t.Helper()
	p.cancel()
	select {
	case err := <-p.done:
		if err != nil {
			t.Errorf("serve: %v", err)
		}
		p.done <- nil // for the cleanup
	case <-time.After(30 * time.Second):
		t.Fatal("the proxy did not stop")
	}
}
