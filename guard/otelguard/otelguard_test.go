package otelguard_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/guard/otelguard"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/fakemodel"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// secret marks what the model and the user sent; it must not reach the
// telemetry unless content capture is on.
const secret = "SECRET"

// scripted503InvalidValid fails with a 503, then makes an invalid call, then
// the corrected one: three requests in one logical call.
func scripted503InvalidValid() *fakemodel.Model {
	return fakemodel.New(
		fakemodel.Fail(errors.New("API returned unexpected status code: 503: "+secret+" overloaded")),
		fakemodel.ToolCalls(fakemodel.Call("get_weather", `{"city": 75001, "units": "kelvin-`+secret+`"}`)),
		fakemodel.ToolCalls(fakemodel.Call("get_weather", `{"city": "Paris"}`)),
	)
}

// stack wraps m in otelguard (outermost), validation and retry.
func stack(tel *telemetry, m llms.Model, opts ...otelguard.Option) llms.Model {
	return middleware.Wrap(m,
		tel.middleware(opts...),
		middleware.ToolArgValidation(),
		middleware.ModelRetry(guard.WithBackOff(func() backoff.BackOff { return backoff.NewConstantBackOff(time.Microsecond) })),
	)
}

func generate(t *testing.T, llm llms.Model, ctx context.Context) *llms.ContentResponse {
	t.Helper()
	resp, err := llm.GenerateContent(ctx, human("weather in Paris? "+secret+"-prompt"),
		llms.WithTools([]llms.Tool{weatherTool}), llms.WithModel("gpt-test"))
	if err != nil {
		t.Fatalf("GenerateContent: %v", err)
	}
	return resp
}

// TestRetryInvalidValidSpans: a call with a 503, an invalid call and a valid
// one is one parent span with exactly three chat spans under it, and the
// parent's events name the retry, the violation and the re-ask, in order.
func TestRetryInvalidValidSpans(t *testing.T) {
	t.Parallel()
	tel := newTelemetry(t)
	generate(t, stack(tel, scripted503InvalidValid()), context.Background())

	parents := tel.ended(otelguard.CallSpanName)
	if len(parents) != 1 {
		t.Fatalf("%d %q spans, want 1", len(parents), otelguard.CallSpanName)
	}
	parent := parents[0]
	if parent.Parent().IsValid() {
		t.Errorf("the call span has parent %v, want a root", parent.Parent())
	}
	chats := tel.ended("chat gpt-test")
	if len(chats) != 3 || len(tel.ended("")) != 4 {
		t.Fatalf("%d chat spans of %d spans, want 3 of 4", len(chats), len(tel.ended("")))
	}
	for i, c := range chats {
		if c.Parent().SpanID() != parent.SpanContext().SpanID() || c.SpanContext().TraceID() != parent.SpanContext().TraceID() {
			t.Errorf("chat span %d has parent %v, want the call span %v", i, c.Parent().SpanID(), parent.SpanContext().SpanID())
		}
		if c.SpanKind() != trace.SpanKindClient {
			t.Errorf("chat span %d kind = %v, want client", i, c.SpanKind())
		}
		if got := attr(c.Attributes(), "gen_ai.operation.name"); got != "chat" {
			t.Errorf("chat span %d gen_ai.operation.name = %q, want chat", i, got)
		}
		if got := attr(c.Attributes(), "gen_ai.request.model"); got != "gpt-test" {
			t.Errorf("chat span %d gen_ai.request.model = %q, want gpt-test", i, got)
		}
	}
	if got := chats[0].Status().Code; got != codes.Error {
		t.Errorf("the 503's chat span status = %v, want Error", got)
	}
	if got := attr(chats[0].Attributes(), "error.type"); got != "_OTHER" {
		t.Errorf("the 503's chat span error.type = %q, want _OTHER", got)
	}
	for _, c := range chats[1:] {
		if c.Status().Code == codes.Error || has(c.Attributes(), "error.type") {
			t.Errorf("a successful chat span has status %v and attributes %v", c.Status(), c.Attributes())
		}
	}
	if got := attr(parent.Attributes(), "toolguard.requests"); got != "3" {
		t.Errorf("toolguard.requests = %q, want 3", got)
	}

	var names []string
	for _, e := range parent.Events() {
		names = append(names, e.Name)
	}
	want := []string{"toolguard.retry", "toolguard.invalid", "toolguard.reask"}
	if !slices.Equal(names, want) {
		t.Fatalf("call span events = %q, want %q", names, want)
	}
	retry, invalid, reask := parent.Events()[0], parent.Events()[1], parent.Events()[2]
	for _, tc := range []struct {
		event     sdktrace.Event
		key, want string
	}{
		{retry, "toolguard.middleware", "ModelRetry"},
		{retry, "toolguard.attempt", "1"},
		{retry, "toolguard.retry.wait", "1e-06"},
		{retry, "error.type", "_OTHER"},
		{invalid, "toolguard.middleware", "ToolArgValidation"},
		{invalid, "gen_ai.tool.name", "get_weather"},
		{invalid, "gen_ai.tool.call.id", "call_1"},
		{invalid, "toolguard.paths", `["/city","/units"]`},
		{invalid, "toolguard.keywords", `["type","enum"]`},
		{invalid, "error.type", "*validation.Error"},
		{reask, "toolguard.attempt", "2"},
	} {
		if got := attr(tc.event.Attributes, tc.key); got != tc.want {
			t.Errorf("event %s %s = %q, want %q", tc.event.Name, tc.key, got, tc.want)
		}
	}
}

// TestMetricsCountEventsAndRequests: the events counter counts each event
// by kind and middleware; the duration histogram has one point per request.
func TestMetricsCountEventsAndRequests(t *testing.T) {
	t.Parallel()
	tel := newTelemetry(t)
	generate(t, stack(tel, scripted503InvalidValid()), context.Background())
	rm := tel.metrics(t)

	events := find(rm, otelguard.EventsMetric)
	if events == nil {
		t.Fatalf("no %s metric", otelguard.EventsMetric)
	}
	got := map[string]int64{}
	for _, p := range events.Data.(metricdata.Sum[int64]).DataPoints {
		kind, _ := p.Attributes.Value("toolguard.event.kind")
		mw, _ := p.Attributes.Value("toolguard.middleware")
		got[kind.AsString()+"/"+mw.AsString()] += p.Value
	}
	want := map[string]int64{"retry/ModelRetry": 1, "invalid/ToolArgValidation": 1, "reask/ToolArgValidation": 1}
	if len(got) != len(want) {
		t.Errorf("%s = %v, want %v", otelguard.EventsMetric, got, want)
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("%s{%s} = %d, want %d", otelguard.EventsMetric, k, got[k], n)
		}
	}

	dur := find(rm, otelguard.DurationMetric)
	if dur == nil {
		t.Fatalf("no %s metric", otelguard.DurationMetric)
	}
	if dur.Unit != "s" {
		t.Errorf("%s unit = %q, want s", otelguard.DurationMetric, dur.Unit)
	}
	var points, failed uint64
	for _, p := range dur.Data.(metricdata.Histogram[float64]).DataPoints {
		points += p.Count
		if _, ok := p.Attributes.Value("error.type"); ok {
			failed += p.Count
		}
	}
	if points != 3 || failed != 1 {
		t.Errorf("%s has %d points (%d with error.type), want 3 (1)", otelguard.DurationMetric, points, failed)
	}
	if tok := find(rm, otelguard.TokenUsageMetric); tok != nil && len(tok.Data.(metricdata.Histogram[int64]).DataPoints) > 0 {
		t.Errorf("%s recorded %v for a model that reports no usage", otelguard.TokenUsageMetric, tok.Data)
	}
}

// TestPrivacy: without WithCaptureContent nothing the model or the user sent
// reaches the telemetry — not the arguments, not the echoed value, not the
// feedback, not an error's text; with it, the feedback and error texts do.
func TestPrivacy(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		opts    []otelguard.Option
		capture bool
	}{
		{"default", nil, false},
		{"WithCaptureContent", []otelguard.Option{otelguard.WithCaptureContent()}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tel := newTelemetry(t)
			generate(t, stack(tel, scripted503InvalidValid(), tc.opts...), context.Background())
			all := tel.everything(t)
			if got := strings.Contains(all, secret); got != tc.capture {
				t.Errorf("telemetry contains %q: %v, want %v:\n%s", secret, got, tc.capture, all)
			}
			for _, never := range []string{secret + "-prompt", "75001"} {
				if !tc.capture && strings.Contains(all, never) {
					t.Errorf("telemetry contains %q:\n%s", never, all)
				}
			}
			if tc.capture {
				for _, want := range []string{"toolguard.feedback=", `kelvin-` + secret, "toolguard.error.message=", secret + " overloaded",
					`gen_ai.output.messages=[{"role":"assistant","parts":[{"type":"tool_call","id":"call_1","name":"get_weather","arguments":{"city":75001,"units":"kelvin-SECRET"}}]`} {
					if !strings.Contains(all, want) {
						t.Errorf("with capture, telemetry lacks %q:\n%s", want, all)
					}
				}
			}
		})
	}
}

// TestChatSpanWithoutModel: a request naming no model gives a "chat" span
// without gen_ai.request.model.
func TestChatSpanWithoutModel(t *testing.T) {
	t.Parallel()
	tel := newTelemetry(t)
	llm := middleware.Wrap(fakemodel.New(fakemodel.Text("hi")), tel.middleware())
	if _, err := llm.GenerateContent(context.Background(), human("hello")); err != nil {
		t.Fatal(err)
	}
	chats := tel.ended("chat")
	if len(chats) != 1 || has(chats[0].Attributes(), "gen_ai.request.model") {
		t.Fatalf("spans %v, want one \"chat\" span without gen_ai.request.model", tel.ended(""))
	}
}

// TestFailedCall: a call that fails marks the call span with error.type and
// an error status whose description is the type, not the error's text.
func TestFailedCall(t *testing.T) {
	t.Parallel()
	tel := newTelemetry(t)
	llm := middleware.Wrap(fakemodel.New(fakemodel.Fail(errors.New("invalid api key "+secret))),
		tel.middleware(), middleware.ModelRetry())
	if _, err := llm.GenerateContent(context.Background(), human("hello")); err == nil {
		t.Fatal("GenerateContent succeeded, want the model's error")
	}
	parent := tel.ended(otelguard.CallSpanName)[0]
	if got := attr(parent.Attributes(), "error.type"); got != "*retry.Error" {
		t.Errorf("call span error.type = %q, want *retry.Error", got)
	}
	if st := parent.Status(); st.Code != codes.Error || st.Description != "*retry.Error" {
		t.Errorf("call span status = %v, want Error described by the type only", st)
	}
	if len(parent.Events()) != 1 || parent.Events()[0].Name != "toolguard.give_up" {
		t.Errorf("call span events = %v, want one toolguard.give_up", parent.Events())
	}
}

// TestErrorType: error.type names the error without its text: a provider's
// *llms.Error code, a context's error, toolguard's typed errors by type.
func TestErrorType(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		err       error
		chat, run string // error.type of the chat span and of the call span
	}{
		{"provider rate limit", llms.NewError(llms.ErrCodeRateLimit, "openai", "slow down "+secret), "rate_limit", "rate_limit"},
		{"untyped", errors.New("boom " + secret), "_OTHER", "*retry.Error"},
		{"deadline", context.DeadlineExceeded, "timeout", "timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tel := newTelemetry(t)
			llm := middleware.Wrap(fakemodel.New(fakemodel.Fail(tc.err)), tel.middleware(),
				middleware.ModelRetry(guard.WithMaxRetries(0)))
			if _, err := llm.GenerateContent(context.Background(), human("hi")); err == nil {
				t.Fatal("GenerateContent succeeded, want the model's error")
			}
			if got := attr(tel.ended("chat")[0].Attributes(), "error.type"); got != tc.chat {
				t.Errorf("chat span error.type = %q, want %q", got, tc.chat)
			}
			if got := attr(tel.ended(otelguard.CallSpanName)[0].Attributes(), "error.type"); got != tc.run {
				t.Errorf("call span error.type = %q, want %q", got, tc.run)
			}
			if all := tel.everything(t); strings.Contains(all, secret) {
				t.Errorf("telemetry holds the error's text:\n%s", all)
			}
		})
	}
}

// TestProviderName: WithProviderName names the provider on chat spans and
// on the duration metric; without it the attribute is absent.
func TestProviderName(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opts []otelguard.Option
		want string
	}{
		{"default", nil, ""},
		{"WithProviderName", []otelguard.Option{otelguard.WithProviderName("openai")}, "openai"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tel := newTelemetry(t)
			llm := middleware.Wrap(fakemodel.New(fakemodel.Text("hi")), tel.middleware(tc.opts...))
			if _, err := llm.GenerateContent(context.Background(), human("hi")); err != nil {
				t.Fatal(err)
			}
			if got := attr(tel.ended("chat")[0].Attributes(), "gen_ai.provider.name"); got != tc.want {
				t.Errorf("chat span gen_ai.provider.name = %q, want %q", got, tc.want)
			}
			p := find(tel.metrics(t), otelguard.DurationMetric).Data.(metricdata.Histogram[float64]).DataPoints[0]
			got, _ := p.Attributes.Value("gen_ai.provider.name")
			if got.AsString() != tc.want {
				t.Errorf("%s gen_ai.provider.name = %q, want %q", otelguard.DurationMetric, got.AsString(), tc.want)
			}
		})
	}
}

// TestEventHandlerKeepsWorking: a WithEventHandler beside otelguard is told
// the same events the span records.
func TestEventHandlerKeepsWorking(t *testing.T) {
	t.Parallel()
	tel := newTelemetry(t)
	var handled []string
	m := fakemodel.New(
		fakemodel.ToolCalls(fakemodel.Call("get_weather", `{"city": 1}`)),
		fakemodel.ToolCalls(fakemodel.Call("get_weather", `{"city": "Paris"}`)),
	)
	llm := middleware.Wrap(m, tel.middleware(), middleware.ToolArgValidation(
		guard.WithEventHandler(func(_ context.Context, e guard.Event) {
			handled = append(handled, otelguard.EventPrefix+string(e.Kind))
		})))
	if _, err := llm.GenerateContent(context.Background(), human("hi"), llms.WithTools([]llms.Tool{weatherTool})); err != nil {
		t.Fatal(err)
	}
	var recorded []string
	for _, e := range tel.ended(otelguard.CallSpanName)[0].Events() {
		recorded = append(recorded, e.Name)
	}
	if want := []string{"toolguard.invalid", "toolguard.reask"}; !slices.Equal(handled, want) || !slices.Equal(recorded, want) {
		t.Errorf("handler got %q and the span recorded %q, want %q for both", handled, recorded, want)
	}
}
