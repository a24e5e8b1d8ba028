package main

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/corpus"
)

// TestEvalSample runs the program on the first calls of the shipped
// corpus: it prints the overall tables and one per kind, for every
// configuration.
func TestEvalSample(t *testing.T) {
	var out strings.Builder
	if err := run(context.Background(), &out, "", DefaultSeed, 20); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"20 unique BFCL calls (schema, arguments), corrupted with seed 20260921",
		"#### All corrupted calls",
		"#### Each of the 19 kinds weighted equally",
		"#### capitalised boolean (\"True\")", "#### array as a JSON string", "#### array as a Python list string",
		"| model calls saved |",
		"#### invented key (open schema)",
		"#### required key dropped",
		"#### 2–3 corruptions at once",
		"| no repair (repair.None()) |", "| default (coercions) |", "| coercions and text repairs (repair.Default()) |", "| closed objects (WithClosedObjects) |", "| no stripping (strip.Off) |",
		"| feedback: first error only (jsonschema v5 Error()) |", "| feedback: the LangChain proposal's format |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if err := run(context.Background(), &out, "testdata/none", DefaultSeed, 0); err == nil {
		t.Error("run with a missing corpus succeeded, want an error")
	}
}

// TestEvalCorpusFlag: -corpus reads a BFCL directory, and the tables are
// byte for byte those of the shipped subset. The directory is the full
// corpus when it is at hand ($TOOLGUARD_CORPUS, or ../shared/corpus beside
// the checkout), else the shipped subset written out to a temporary one.
func TestEvalCorpusFlag(t *testing.T) {
	dir := os.Getenv(corpus.EnvDir)
	if dir == "" {
		dir = "../../../shared/corpus"
	} else if !filepath.IsAbs(dir) {
		dir = filepath.Join("..", "..", dir)
	}
	dir = filepath.Join(dir, corpus.BFCL)
	if _, err := os.Stat(dir); err != nil {
		t.Logf("full corpus not found at %s: -corpus reads the shipped subset from a directory", dir)
		dir = writeShipped(t)
	}
	n := 400
	if testing.Short() {
		n = 50
	}
	var shipped, full strings.Builder
	if err := run(context.Background(), &shipped, "", DefaultSeed, n); err != nil {
		t.Fatal(err)
	}
	if err := run(context.Background(), &full, dir, DefaultSeed, n); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(shipped.String(), fmt.Sprintf("%d unique BFCL calls", n)) {
		t.Fatalf("run printed no table for %d calls:\n%s", n, shipped.String())
	}
	if shipped.String() != full.String() {
		t.Errorf("run(-corpus %s) differs from run on the shipped subset:\n%s\nshipped:\n%s", dir, full.String(), shipped.String())
	}
}

// writeShipped writes the shipped BFCL subset to a temporary directory.
func writeShipped(t *testing.T) string {
	t.Helper()
	d, err := corpus.Shipped(corpus.BFCL)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, name := range []string{"tools.jsonl", "calls.jsonl", "violations.jsonl"} {
		b, err := fs.ReadFile(d, name)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
