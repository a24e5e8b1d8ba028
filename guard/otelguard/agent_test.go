package otelguard_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/cenkalti/backoff/v4"

	"github.com/toolguard/toolguard/agent"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/guard/otelguard"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/fakemodel"
	"github.com/toolguard/toolguard/toolstage"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

type weatherArgs struct {
	City string `json:"city"`
}

// TestAgentRunSpans: an agent given otelguard makes one invoke_agent span
// per run; under it the call spans of its model turns and one
// execute_tool span per tool execution, with error.type on a tool error.
func TestAgentRunSpans(t *testing.T) {
	t.Parallel()
	tel := newTelemetry(t)
	weather := toolstage.NewTool("get_weather", "Weather in a city.", func(_ context.Context, a weatherArgs) (string, error) {
		return "sunny in " + a.City, nil
	})
	broken := toolstage.NewTool("get_news", "News.", func(context.Context, struct{}) (string, error) {
		return "", errors.New("news service down")
	})
	m := fakemodel.New(
		fakemodel.ToolCalls(fakemodel.Call("get_weather", `{"city": 1}`)),
		fakemodel.ToolCalls(fakemodel.Call("get_weather", `{"city": "Paris"}`), fakemodel.Call("get_news", `{}`)),
		fakemodel.Text("Sunny; no news."),
	)
	a := agent.New(m, toolstage.New([]toolstage.Tool{weather, broken}), agent.WithMiddleware(tel.middleware(), middleware.ToolArgValidation()))
	if _, err := a.Run(context.Background(), "weather and news?"); err != nil {
		t.Fatal(err)
	}

	runs := tel.ended("invoke_agent")
	if len(runs) != 1 || runs[0].Parent().IsValid() {
		t.Fatalf("invoke_agent spans %v, want one root", runs)
	}
	run := runs[0].SpanContext().SpanID()
	under := func(spans []sdktrace.ReadOnlySpan) int {
		n := 0
		for _, s := range spans {
			if s.Parent().SpanID() == run {
				n++
			}
		}
		return n
	}
	if calls := tel.ended(otelguard.CallSpanName); len(calls) != 2 || under(calls) != 2 {
		t.Errorf("%d call spans, %d under invoke_agent, want 2 and 2", len(calls), under(calls))
	}
	if chats := tel.ended("chat"); len(chats) != 3 {
		t.Errorf("%d chat spans, want 3 (the invalid call, its re-ask, the answer)", len(chats))
	}
	for _, tc := range []struct {
		name, id, errType string
	}{
		{"execute_tool get_weather", "call_2", ""},
		{"execute_tool get_news", "call_3", "_OTHER"},
	} {
		spans := tel.ended(tc.name)
		if len(spans) != 1 || under(spans) != 1 {
			t.Errorf("%d %q spans, want one under invoke_agent", len(spans), tc.name)
			continue
		}
		s := spans[0]
		if got := attr(s.Attributes(), "gen_ai.tool.call.id"); got != tc.id {
			t.Errorf("%s gen_ai.tool.call.id = %q, want %q", tc.name, got, tc.id)
		}
		if got := attr(s.Attributes(), "gen_ai.operation.name"); got != "execute_tool" {
			t.Errorf("%s gen_ai.operation.name = %q, want execute_tool", tc.name, got)
		}
		if got := attr(s.Attributes(), "error.type"); got != tc.errType {
			t.Errorf("%s error.type = %q, want %q", tc.name, got, tc.errType)
		}
		if failed := s.Status().Code == codes.Error; failed != (tc.errType != "") {
			t.Errorf("%s status = %v, want an error status only for a tool error", tc.name, s.Status())
		}
		if has(s.Attributes(), "gen_ai.tool.call.arguments") {
			t.Errorf("%s records the arguments without WithCaptureContent", tc.name)
		}
	}
}

// TestAgentRunTwiceObservedOnce: a run whose context already carries the
// middleware's observer is not observed twice.
func TestAgentRunObservedOnce(t *testing.T) {
	t.Parallel()
	tel := newTelemetry(t)
	mw := tel.middleware()
	a := agent.New(fakemodel.New(fakemodel.Text("hi")), toolstage.New(nil), agent.WithMiddleware(mw))
	ctx := mw.(guard.ObserverInstaller).InstallObserver(context.Background())
	if _, err := a.Run(ctx, "hello"); err != nil {
		t.Fatal(err)
	}
	if runs, chats := tel.ended("invoke_agent"), tel.ended("chat"); len(runs) != 1 || len(chats) != 1 {
		t.Errorf("%d invoke_agent and %d chat spans, want 1 and 1", len(runs), len(chats))
	}
}

// TestAgentCaptureContent: with WithCaptureContent an execute_tool span
// records the call's arguments and the tool's result.
func TestAgentCaptureContent(t *testing.T) {
	t.Parallel()
	tel := newTelemetry(t)
	weather := toolstage.NewTool("get_weather", "Weather in a city.", func(_ context.Context, a weatherArgs) (string, error) {
		return "sunny in " + a.City, nil
	})
	m := fakemodel.New(fakemodel.ToolCalls(fakemodel.Call("get_weather", `{"city":"Paris"}`)), fakemodel.Text("Sunny."))
	a := agent.New(m, toolstage.New([]toolstage.Tool{weather}), agent.WithMiddleware(tel.middleware(otelguard.WithCaptureContent())))
	if _, err := a.Run(context.Background(), "weather?"); err != nil {
		t.Fatal(err)
	}
	s := tel.ended("execute_tool get_weather")[0]
	if got := attr(s.Attributes(), "gen_ai.tool.call.arguments"); got != `{"city":"Paris"}` {
		t.Errorf("gen_ai.tool.call.arguments = %q, want the call's arguments", got)
	}
	if got := attr(s.Attributes(), "gen_ai.tool.call.result"); got != "sunny in Paris" {
		t.Errorf("gen_ai.tool.call.result = %q, want the tool's result", got)
	}
}

// TestAgentChainedMiddleware: otelguard inside a middleware.Chain given to
// agent.WithMiddleware is still installed per run, so the run and tool
// spans are there (they were silently lost: the agent looked for installers
// among its top-level middlewares only).
func TestAgentChainedMiddleware(t *testing.T) {
	t.Parallel()
	tel := newTelemetry(t)
	weather := toolstage.NewTool("get_weather", "Weather in a city.", func(_ context.Context, a weatherArgs) (string, error) {
		return "sunny in " + a.City, nil
	})
	m := fakemodel.New(fakemodel.ToolCalls(fakemodel.Call("get_weather", `{"city": "Paris"}`)), fakemodel.Text("Sunny."))
	a := agent.New(m, toolstage.New([]toolstage.Tool{weather}), agent.WithMiddleware(middleware.Chain(tel.middleware(), middleware.ToolArgValidation())))
	if _, err := a.Run(context.Background(), "weather?"); err != nil {
		t.Fatal(err)
	}
	runs, tools := tel.ended("invoke_agent"), tel.ended("execute_tool get_weather")
	if len(runs) != 1 || len(tools) != 1 {
		t.Fatalf("%d invoke_agent and %d execute_tool spans, want 1 and 1", len(runs), len(tools))
	}
	if tools[0].Parent().SpanID() != runs[0].SpanContext().SpanID() {
		t.Error("the execute_tool span is not under the invoke_agent span")
	}
	if calls := tel.ended(otelguard.CallSpanName); len(calls) != 2 || calls[0].Parent().SpanID() != runs[0].SpanContext().SpanID() {
		t.Errorf("%d call spans, want 2 under invoke_agent", len(calls))
	}
}

// TestAgentToolRetrySpan: a call that ToolRetry runs three times is ONE
// execute_tool span, covering the whole tool stage, with a
// toolguard.tool_retry span event per repeat carrying the failed attempt,
// the wait and the error's type; a non-idempotent tool's unknown outcome
// is a toolguard.tool_outcome_unknown event on its span.
func TestAgentToolRetrySpan(t *testing.T) {
	t.Parallel()
	tel := newTelemetry(t)
	timeout := fmt.Errorf("rates API: %w", context.DeadlineExceeded)
	runs := 0
	rates := toolstage.Idempotent(toolstage.NewTool("get_rate", "Exchange rate.", func(context.Context, struct{}) (string, error) {
		runs++
		if runs < 3 {
			return "", timeout
		}
		return "1.08", nil
	}))
	charges := 0
	charge := toolstage.NewTool("charge_card", "Charges a card.", func(context.Context, struct{}) (string, error) {
		charges++
		return "", timeout
	})
	m := fakemodel.New(
		fakemodel.ToolCalls(fakemodel.Call("get_rate", `{}`)),
		fakemodel.ToolCalls(fakemodel.Call("charge_card", `{}`)),
		fakemodel.Text("done"),
	)
	a := agent.New(m, toolstage.New([]toolstage.Tool{rates, charge}, toolstage.WithToolMiddleware(toolstage.ToolRetry(toolstage.WithBackOff(func() backoff.BackOff { return &backoff.ZeroBackOff{} })))), agent.WithMiddleware(tel.middleware()))
	if _, err := a.Run(context.Background(), "rate, then charge"); err != nil {
		t.Fatal(err)
	}
	if runs != 3 || charges != 1 {
		t.Fatalf("get_rate ran %d times, charge_card %d; want 3 and 1", runs, charges)
	}
	spans := tel.ended("execute_tool get_rate")
	if len(spans) != 1 {
		t.Fatalf("%d execute_tool get_rate spans, want one for the three attempts", len(spans))
	}
	s := spans[0]
	if s.Status().Code == codes.Error {
		t.Errorf("the retried call's span failed: %v", s.Status())
	}
	var attempts []string
	for _, e := range s.Events() {
		if e.Name != "toolguard.tool_retry" {
			t.Errorf("unexpected span event %s", e.Name)
			continue
		}
		attempts = append(attempts, attr(e.Attributes, "toolguard.attempt"))
		for key, want := range map[string]string{
			"toolguard.middleware": "ToolRetry", "gen_ai.tool.name": "get_rate", "gen_ai.tool.call.id": "call_1",
			"error.type": "timeout", "toolguard.retry.wait": "0",
		} {
			if got := attr(e.Attributes, key); got != want {
				t.Errorf("tool_retry %s = %q, want %q", key, got, want)
			}
		}
	}
	if fmt.Sprint(attempts) != "[1 2]" {
		t.Errorf("tool_retry events for attempts %v, want [1 2]", attempts)
	}

	spans = tel.ended("execute_tool charge_card")
	if len(spans) != 1 {
		t.Fatalf("%d execute_tool charge_card spans, want 1", len(spans))
	}
	s = spans[0]
	if len(s.Events()) != 1 || s.Events()[0].Name != "toolguard.tool_outcome_unknown" {
		t.Fatalf("charge_card span events %v, want one toolguard.tool_outcome_unknown", s.Events())
	}
	if got := attr(s.Events()[0].Attributes, "error.type"); got != "timeout" {
		t.Errorf("tool_outcome_unknown error.type = %q, want timeout", got)
	}
	if s.Status().Code != codes.Error || attr(s.Attributes(), "error.type") != "timeout" {
		t.Errorf("charge_card span: status %v, error.type %q; want an error, timeout", s.Status(), attr(s.Attributes(), "error.type"))
	}
}
