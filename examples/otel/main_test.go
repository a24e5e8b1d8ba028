package main

import (
	"context"
	"os"
	"strings"
	"testing"
)

// TestOtelTree pins the span tree the example prints: the run, the call
// span with the retry, the violation and the re-ask, its three chat spans,
// the tool execution with ToolRetry's retry, and the final turn; then the
// metrics.
func TestOtelTree(t *testing.T) {
	var out strings.Builder
	if err := run(context.Background(), &out, scriptedModel(), false); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"assistant: It is 18 °C and sunny in Paris.",
		"invoke_agent [internal]",
		"\n    toolguard.generate_content [internal] gen_ai.request.model=gpt-4o-mini toolguard.requests=3",
		"\n      * toolguard.retry ",
		"\n      * toolguard.stripped ",
		"toolguard.paths=[\"/units\"]",
		"\n      * toolguard.invalid ",
		"toolguard.paths=[\"/city\"]",
		"\n      * toolguard.reask ",
		"\n        chat gpt-4o-mini [client] ERROR(_OTHER)",
		"\n        chat gpt-4o-mini [client]",
		"\n        chat gpt-4o-mini [client]",
		"\n    execute_tool get_weather [internal]",
		"gen_ai.tool.call.id=call_2",
		"\n      * toolguard.tool_retry error.type=timeout gen_ai.tool.call.id=call_2 gen_ai.tool.name=get_weather toolguard.attempt=1 toolguard.middleware=ToolRetry toolguard.retry.wait=0.05",
		"\n    toolguard.generate_content [internal] gen_ai.request.model=gpt-4o-mini toolguard.requests=1",
		"\n        chat gpt-4o-mini [client]",
		"toolguard.events{toolguard.event.kind=invalid toolguard.middleware=ToolArgValidation} 1",
		"toolguard.events{toolguard.event.kind=tool_retry toolguard.middleware=ToolRetry} 1",
		"gen_ai.client.operation.duration: 4 points (s)",
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
	if strings.Contains(got, "75001") {
		t.Errorf("the trace records the model's arguments without WithCaptureContent:\n%s", got)
	}
}

// TestOtelStdout: with -stdout the SDK's stdout exporter writes the spans.
func TestOtelStdout(t *testing.T) {
	var out strings.Builder
	if err := run(context.Background(), &out, scriptedModel(), true); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{`"Name": "invoke_agent"`, `"Name": "toolguard.retry"`, `"Name": "execute_tool get_weather"`} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("stdout exporter output lacks %s", w)
		}
	}
}

// TestReadmeTree: the span tree the example's README shows is the one the
// example prints.
func TestReadmeTree(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(readme), "`go run ./examples/otel` runs")
	if !ok {
		t.Fatal("README.md has no paragraph about go run ./examples/otel")
	}
	_, block, _ := strings.Cut(after, "```\n")
	block, _, _ = strings.Cut(block, "```")
	var out strings.Builder
	if err := run(context.Background(), &out, scriptedModel(), false); err != nil {
		t.Fatal(err)
	}
	_, tree, _ := strings.Cut(out.String(), "spans:\n")
	tree, _, _ = strings.Cut(tree, "\nmetrics:")
	if block != tree {
		t.Errorf("README span tree:\n%s\nwant what the example prints:\n%s", block, tree)
	}
}
