package main

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/output.golden")

// TestInjected pins the example's output: the forged user id reported and
// dropped, the tools run for alice, nothing of the injected property in what
// the model is sent or reads back, and a generic refusal with nobody signed
// in.
func TestInjected(t *testing.T) {
	var out strings.Builder
	if err := run(context.Background(), &out, scriptedModel()); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	golden := filepath.Join("testdata", "output.golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (go test -update to accept):\n%s", golden, got)
	}
	// What the model is told and reads back never holds the injected
	// property; the tools ran for alice only.
	told := got[strings.Index(got, "what the model was told"):strings.Index(got, "what each tool ran with")]
	if strings.Contains(told, "user_id") || strings.Contains(told, "admin\"") {
		t.Errorf("the model was told of user_id or read a forged value:\n%s", told)
	}
	if strings.Count(got, `runs for user_id="alice"`) != 2 || strings.Contains(got, `user_id="admin"`) {
		t.Errorf("the tools did not run exactly twice, for alice:\n%s", got)
	}
}
