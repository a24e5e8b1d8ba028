package main

import (
	"context"
	"strings"
	"testing"

	"github.com/cenkalti/backoff/v4"
	"github.com/toolguard/toolguard/guard"
)

// TestLangchaingoAgent pins what the example shows: all three middlewares at
// work inside an unchanged langchaingo Executor.
func TestLangchaingoAgent(t *testing.T) {
	model := scriptedModel()
	var out strings.Builder
	err := run(context.Background(), &out, model, guard.WithBackOff(func() backoff.BackOff { return &backoff.ZeroBackOff{} }))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"ModelRetry: attempt 1 failed, retrying: API returned unexpected status code: 503",
		`ToolArgValidation: asking the model to fix call_1: validation: tool "calculator" (call "call_1"): 1 violation: /__arg1: missing required property`,
		`tool calculator("6 * 7") = 42`,
		`tool calculator("42 + 8") = 50`,
		"ToolCallLimit: blocked: guard: tool call limit exceeded: run limit of 2 calls (2 made, 1 more requested)",
		"assistant: 6 × 7 = 42, and 42 + 8 = 50.",
	}
	got := out.String()
	at := 0
	for _, w := range want {
		i := strings.Index(got[at:], w)
		if i < 0 {
			t.Fatalf("output lacks %q (in order):\n%s", w, got)
		}
		at += i + len(w)
	}
	if n := strings.Count(got, "tool calculator("); n != 2 {
		t.Errorf("the calculator ran %d times, want 2 (the run limit):\n%s", n, got)
	}
	if n := len(model.Requests()); n != 6 || model.Remaining() != 0 {
		t.Errorf("the model was called %d times with %d steps left, want 6 and 0", n, model.Remaining())
	}
}
