package corpus_test

import (
	"bytes"
	"flag"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/toolguard/toolguard/corpus"
)

var update = flag.Bool("update", false,
	"rewrite testdata/*.tar.gz from the full corpus named by $"+corpus.EnvDir)

var sets = []string{corpus.BFCL, corpus.JSONSchemaSuite}

// TestCorpusShipped: each shipped archive opens and holds the files its
// loaders read.
func TestCorpusShipped(t *testing.T) {
	t.Parallel()
	want := map[string][]string{
		corpus.BFCL:            {"calls.jsonl", "tools.jsonl", "violations.jsonl"},
		corpus.JSONSchemaSuite: {"remotes/integer.json", "tests/draft2020-12/ref.json", "tests/draft7/optional/format/date-time.json", "tests/draft7/ref.json"},
	}
	for _, name := range sets {
		d, err := corpus.Shipped(name)
		if err != nil {
			t.Fatalf("Shipped(%q) = %v, want nil", name, err)
		}
		if d.Full {
			t.Errorf("Shipped(%q).Full = true, want false", name)
		}
		for _, f := range want[name] {
			if b, err := fs.ReadFile(d, f); err != nil || len(b) == 0 {
				t.Errorf("Shipped(%q): ReadFile(%q) = %d bytes, %v; want the file", name, f, len(b), err)
			}
		}
	}
	if _, err := corpus.Shipped("nope"); err == nil {
		t.Errorf("Shipped(%q) = nil error, want one", "nope")
	}
}

// TestCorpusOpenEnv: $TOOLGUARD_CORPUS, relative to the module root, wins
// over the shipped data; unset, Open returns the shipped data.
func TestCorpusOpenEnv(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, corpus.BFCL), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, corpus.BFCL, "calls.jsonl"), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(corpus.EnvDir, dir)
	d, err := corpus.Open(corpus.BFCL)
	if err != nil || !d.Full {
		t.Fatalf("Open(%q) with $%s = %v, %v; want the directory", corpus.BFCL, corpus.EnvDir, d, err)
	}
	if b, _ := fs.ReadFile(d, "calls.jsonl"); string(b) != "{}\n" {
		t.Errorf("Open(%q).ReadFile(calls.jsonl) = %q, want %q", corpus.BFCL, b, "{}\n")
	}
	if _, err := corpus.Open(corpus.JSONSchemaSuite); err == nil {
		t.Errorf("Open(%q) with a directory lacking it = nil error, want one", corpus.JSONSchemaSuite)
	}
	t.Setenv(corpus.EnvDir, "corpus/testdata") // relative to the module root
	if _, err := corpus.Open("missing"); err == nil {
		t.Errorf("Open(%q) = nil error, want one", "missing")
	}
	t.Setenv(corpus.EnvDir, "")
	if d, err := corpus.Open(corpus.BFCL); err != nil || d.Full {
		t.Errorf("Open(%q) without $%s = %v, %v; want the shipped subset", corpus.BFCL, corpus.EnvDir, d, err)
	}
}

// TestCorpusSubsetOfFull: the shipped archives hold exactly what Subset
// cuts from the full corpus when it is at hand ($TOOLGUARD_CORPUS, or
// ../shared/corpus beside the checkout); -update rewrites them. Without it,
// they hold what Subset cuts from themselves: the shipped subset is already
// cut (unique calls, only the tools they use, nothing else).
func TestCorpusSubsetOfFull(t *testing.T) {
	dir := os.Getenv(corpus.EnvDir)
	if dir == "" {
		dir = "../../../shared/corpus"
	}
	_, statErr := os.Stat(dir)
	if statErr != nil && *update {
		t.Fatalf("-update needs the full corpus: %v", statErr)
	}
	for _, name := range sets {
		var source fs.FS
		if statErr == nil {
			full, err := corpus.FromDir(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			source = full
		} else {
			t.Logf("full corpus not found at %s: checking that the shipped %s is a fixed point of Subset", dir, name)
			shipped, err := corpus.Shipped(name)
			if err != nil {
				t.Fatal(err)
			}
			source = shipped
		}
		want, err := corpus.Subset(source, name)
		if err != nil {
			t.Fatalf("Subset(%s) = %v", name, err)
		}
		if *update {
			b, err := corpus.Archive(want)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join("testdata", name+".tar.gz"), b, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := corpus.Shipped(name)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		fs.WalkDir(got, ".", func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				names = append(names, p)
			}
			return err
		})
		slices.Sort(names)
		if w := slices.Sorted(maps.Keys(want)); !slices.Equal(names, w) {
			t.Errorf("Shipped(%s) holds %d files, want the %d of Subset (go test ./corpus -update)", name, len(names), len(w))
			continue
		}
		for _, p := range names {
			if b, _ := fs.ReadFile(got, p); !bytes.Equal(b, want[p]) {
				t.Errorf("Shipped(%s): %s differs from Subset of %s (go test ./corpus -update)", name, p, dir)
			}
		}
	}
}
