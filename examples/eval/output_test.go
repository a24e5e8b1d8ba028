package main

import (
	"context"
	"strings"
	"testing"
)

// TestEvalOutputTable: the program prints the structured-output table
// after the tool-argument tables.
func TestEvalOutputTable(t *testing.T) {
	var out strings.Builder
	if err := run(context.Background(), &out, "", DefaultSeed, 10); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	at := strings.Index(got, "#### Corrupted final answers")
	if at < 0 || at < strings.Index(got, "#### 2–3 corruptions at once") {
		t.Fatalf("no structured-output table after the tool-argument tables:\n%s", got)
	}
	for _, want := range []string{"| no check (answer taken as sent) | 0.0% |", "| agent answer tool |", "| OutputValidation + repair |"} {
		if !strings.Contains(got[at:], want) {
			t.Errorf("output lacks %q:\n%s", want, got[at:])
		}
	}
}
