package main

import (
	"context"
	"strings"
	"testing"

	"github.com/cenkalti/backoff/v4"
	"github.com/toolguard/toolguard/guard"
)

// TestLangchaingoAgent pins what the example shows: an unchanged Executor
// offers its tools as one string and ToolArgValidation says so, naming the
// fix; with the fix, all three middlewares work inside the same Executor.
func TestLangchaingoAgent(t *testing.T) {
	asIs, fixed := scriptedAsIs(), scriptedFixed()
	var out strings.Builder
	err := run(context.Background(), &out, asIs, fixed, guard.WithBackOff(func() backoff.BackOff { return &backoff.ZeroBackOff{} }))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`ToolArgValidation: misconfigured: middleware: a tool offered with langchaingo's one-string schema: tool "refund" is offered as {"__arg1": string}`,
		"lctool.OfferSchemas(lctool.SchemaFor(tool, schema), ...)",
		`tool refund("{\"order_id\": \"A-1\", \"amount\": \"19.99 EUR\"}") = could not read the arguments`,
		"assistant: I could not refund order A-1.",
		"ModelRetry: attempt 1 failed, retrying: API returned unexpected status code: 503",
		`ToolArgValidation: asking the model to fix call_1: validation: tool "refund" (call "call_1"): 1 violation: /amount: missing required property (number)`,
		"ToolArgValidation: repaired call_2: [number_string at /amount]",
		`tool refund("{\"amount\":19.99,\"order_id\":\"A-1\"}") = refunded 19.99 on A-1`,
		"ToolCallLimit: blocked: guard: tool call limit exceeded: run limit of 1 call (1 made, 1 more requested)",
		"assistant: Order A-1 is refunded: 19.99 euros.",
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
	if n := strings.Count(got, "misconfigured"); n != 1 {
		t.Errorf("misconfigured reported %d times, want once:\n%s", n, got)
	}
	if n := strings.Count(got, "= refunded"); n != 1 {
		t.Errorf("the refund ran %d times, want 1 (the run limit):\n%s", n, got)
	}
	if asIs.Remaining() != 0 || fixed.Remaining() != 0 {
		t.Errorf("steps left: %d and %d, want 0", asIs.Remaining(), fixed.Remaining())
	}
}
