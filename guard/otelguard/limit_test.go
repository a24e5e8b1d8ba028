package otelguard_test

import (
	"context"
	"testing"

	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/fakemodel"
)

// TestBlockedCallEvent: a tool call ToolCallLimit blocks is a
// toolguard.limit event naming the tool, the scope and the limit.
func TestBlockedCallEvent(t *testing.T) {
	t.Parallel()
	tel := newTelemetry(t)
	m := fakemodel.New(fakemodel.ToolCalls(
		fakemodel.Call("get_weather", `{"city": "Paris"}`),
		fakemodel.Call("get_weather", `{"city": "Rome"}`),
	))
	llm := middleware.Wrap(m, tel.middleware(),
		middleware.ToolCallLimit(guard.WithRunLimit(1), guard.WithExitBehavior(guard.ExitEnd)))
	if _, err := llm.GenerateContent(guard.WithRun(context.Background()), human("weather?")); err != nil {
		t.Fatal(err)
	}
	events := tel.ended("toolguard.generate_content")[0].Events()
	if len(events) == 0 || events[0].Name != "toolguard.limit" {
		t.Fatalf("call span events = %v, want toolguard.limit first", events)
	}
	for key, want := range map[string]string{
		"toolguard.middleware":  "ToolCallLimit",
		"toolguard.limit.scope": "run",
		"toolguard.limit.max":   "1",
		"toolguard.limit.count": "0",
		"error.type":            "*guard.LimitExceededError",
	} {
		if got := attr(events[0].Attributes, key); got != want {
			t.Errorf("toolguard.limit %s = %q, want %q", key, got, want)
		}
	}
}
