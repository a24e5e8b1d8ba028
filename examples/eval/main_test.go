package main

import (
	"context"
	"os"
	"strings"
	"testing"
)

// TestEvalSample runs the program on the first calls of the corpus: it
// prints the overall tables and one per kind, for every configuration.
func TestEvalSample(t *testing.T) {
	const corpus = "../../../shared/corpus/bfcl"
	if _, err := os.Stat(corpus); err != nil {
		t.Skipf("BFCL corpus not found at %s (shared/ beside the checkout): %v", corpus, err)
	}
	var out strings.Builder
	if err := run(context.Background(), &out, corpus, DefaultSeed, 20); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"20 unique BFCL calls (schema, arguments), corrupted with seed 20260921",
		"#### All corrupted calls",
		"#### Each of the 15 kinds weighted equally",
		"#### required key dropped",
		"#### 2–3 corruptions at once",
		"| toolguard default |", "| default + repair |", "| strip off |",
		"| first error only (v5 Error()) |", "| LangChain proposal format |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if err := run(context.Background(), &out, "testdata/none", DefaultSeed, 0); err == nil {
		t.Error("run with a missing corpus succeeded, want an error")
	}
}
