// Package corpus gives toolguard's tests, benchmarks and examples/eval the
// real-world data they run on: a subset of the Berkeley Function Calling
// Leaderboard (BFCL) and the JSON-Schema-Test-Suite cases the conformance
// test needs, shipped compressed in testdata/ and embedded, so a clone of
// the module anywhere runs them.
//
// [Open] returns the shipped data unless the environment variable named by
// [EnvDir] names a directory laid out as ../shared/corpus (one
// subdirectory per data set), which then wins: the full corpus. What is
// shipped, and how it is cut from the full corpus, is in testdata/README.md.
package corpus

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"testing/fstest"
)

// EnvDir is the environment variable that points the tests at a full
// corpus directory (absolute, or relative to the module root), such as
// ../shared/corpus beside the checkout.
const EnvDir = "TOOLGUARD_CORPUS"

// The data sets, as subdirectory names of a corpus directory.
const (
	BFCL            = "bfcl"                   // tools.jsonl, calls.jsonl, violations.jsonl
	JSONSchemaSuite = "json-schema-test-suite" // tests/<draft>/..., remotes/...
)

//go:embed testdata/bfcl.tar.gz testdata/json-schema-test-suite.tar.gz
var shipped embed.FS

// Data is one data set, read from the shipped archive or from a directory.
type Data struct {
	fs.FS
	// Full is true when the data comes from a corpus directory (EnvDir or
	// an explicit directory), false for the shipped subset.
	Full bool
	// Source says where the data comes from, for messages.
	Source string
}

// Open returns the data set name ([BFCL] or [JSONSchemaSuite]): from the
// directory named by $TOOLGUARD_CORPUS when it is set, else the shipped
// subset.
func Open(name string) (*Data, error) {
	dir := os.Getenv(EnvDir)
	if dir == "" {
		return Shipped(name)
	}
	if !filepath.IsAbs(dir) {
		root, err := moduleRoot()
		if err != nil {
			return nil, err
		}
		dir = filepath.Join(root, dir)
	}
	return FromDir(filepath.Join(dir, name))
}

// FromDir returns the data set held in dir, which must exist.
func FromDir(dir string) (*Data, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("corpus: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("corpus: %s is not a directory", dir)
	}
	return &Data{FS: os.DirFS(dir), Full: true, Source: dir}, nil
}

// Shipped returns the subset of the data set name shipped in testdata/.
func Shipped(name string) (*Data, error) {
	archive := path.Join("testdata", name+".tar.gz")
	b, err := shipped.ReadFile(archive)
	if err != nil {
		return nil, fmt.Errorf("corpus: no shipped data set %q", name)
	}
	fsys, err := untar(b)
	if err != nil {
		return nil, fmt.Errorf("corpus: %s: %w", archive, err)
	}
	return &Data{FS: fsys, Source: "corpus/" + archive}, nil
}

// untar reads a gzip-compressed tar archive of regular files into memory.
func untar(b []byte) (fstest.MapFS, error) {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	tr := tar.NewReader(zr)
	out := fstest.MapFS{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if h.Typeflag != tar.TypeReg || !fs.ValidPath(h.Name) {
			return nil, fmt.Errorf("unexpected entry %q", h.Name)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return nil, err
		}
		out[h.Name] = &fstest.MapFile{Data: data, Mode: 0o444}
	}
}

// moduleRoot returns the nearest directory above the working directory
// that holds go.mod.
func moduleRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("corpus: %w", err)
	}
	for d := wd; ; {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("corpus: no go.mod above %s to resolve $%s against", wd, EnvDir)
		}
		d = parent
	}
}
