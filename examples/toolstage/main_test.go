package main

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/output.golden with the example's output")

// TestToolStage pins the example's whole output, which is deterministic:
// the denied call, the rewritten and the rejected rewrite, the retried
// idempotent tool, the unknown outcome not repeated, and the Direct answer.
// Refresh it with go test ./examples/toolstage -update.
func TestToolStage(t *testing.T) {
	var out strings.Builder
	if err := run(context.Background(), &out, scriptedModel()); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "output.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != string(want) {
		t.Errorf("output:\n%s\nwant (%s):\n%s", got, golden, want)
	}
	for _, never := range []string{"tool delete_account runs", "in premium", "send_invoice runs (attempt 2)"} {
		if strings.Contains(out.String(), never) {
			t.Errorf("output shows %q", never)
		}
	}
}

// TestReadme: the example's README shows its output as it is.
func TestReadme(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	golden, err := os.ReadFile(filepath.Join("testdata", "output.golden"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "```\n"+string(golden)+"```\n") {
		t.Errorf("README.md does not show the output of go run ./examples/toolstage:\n%s", golden)
	}
}
