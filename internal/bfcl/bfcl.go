// Package bfcl loads the Berkeley Function Calling Leaderboard corpus that
// lives beside the checkout in ../shared/corpus/bfcl (see
// ../shared/corpus/README.md) for toolguard's tests and benchmarks.
//
// Only test files import it. Tests that need the corpus call Open, which
// skips the test when the corpus is absent, so that `go test ./...` still
// runs elsewhere.
package bfcl

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// The sizes of the corpus as published (BFCL v4, commit 6ea57973).
const (
	NumTools               = 3526
	NumCalls               = 9523
	NumUniqueCalls         = 4439 // distinct (schema_ref, args) pairs among the calls
	NumViolations          = 330
	NumStripRepairable     = 106 // violations marked valid_after_strip_top_level
	NumCallsWithEmptyValue = 31  // calls marked has_empty_values
)

// Tool is one line of tools.jsonl: a real function definition.
type Tool struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description"`
	// Parameters is the tool's schema converted to standard draft-07.
	Parameters json.RawMessage `json:"parameters"`
	Category   string          `json:"category"`
}

// Call is one line of calls.jsonl or violations.jsonl: a ground-truth tool
// call and, for violations, what python-jsonschema said about it.
type Call struct {
	ID             string          `json:"id"`
	Tool           string          `json:"tool"`
	SchemaRef      string          `json:"schema_ref"` // a Tool.ID
	Args           json.RawMessage `json:"args"`
	ExpectValid    bool            `json:"expect_valid"`
	Category       string          `json:"category"`
	HasEmptyValues bool            `json:"has_empty_values"`

	// Violations only.
	Errors                   []PythonError `json:"errors_python_jsonschema_draft7"`
	ValidAfterStripTopLevel  bool          `json:"valid_after_strip_top_level"`
	ValidAfterStripRecursive bool          `json:"valid_after_strip_recursive"`
}

// PythonError is one error python-jsonschema (draft 7) reported for a
// violation.
type PythonError struct {
	Path      string `json:"path"`
	Validator string `json:"validator"`
	Message   string `json:"message"`
}

// Corpus is the whole BFCL corpus.
type Corpus struct {
	Dir        string
	Tools      []Tool
	Calls      []Call
	Violations []Call

	byID map[string]*Tool
}

// ToolOf returns the tool whose schema c refers to, or nil.
func (c *Corpus) ToolOf(call *Call) *Tool { return c.byID[call.SchemaRef] }

// UniqueCalls returns the calls with distinct (schema_ref, args) pairs, in
// corpus order; the multi-turn categories repeat the same answers.
func (c *Corpus) UniqueCalls() []Call {
	seen := make(map[string]bool, len(c.Calls))
	var out []Call
	var buf bytes.Buffer
	for _, call := range c.Calls {
		buf.Reset()
		if err := json.Compact(&buf, call.Args); err != nil {
			panic(err) // Load checked every line
		}
		k := call.SchemaRef + "\x00" + buf.String()
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, call)
	}
	return out
}

// ErrAbsent is returned by Load when the corpus directory does not exist.
var ErrAbsent = errors.New("bfcl: corpus not found")

// Dir returns the corpus directory: ../shared/corpus/bfcl relative to the
// module root (the nearest directory above the working directory holding
// go.mod).
func Dir() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return filepath.Join(d, "..", "shared", "corpus", "bfcl"), nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("bfcl: no go.mod above %s", wd)
		}
		d = parent
	}
}

var (
	loadOnce sync.Once
	loaded   *Corpus
	loadErr  error
)

// Load reads the corpus once per process. It returns an error wrapping
// ErrAbsent when the directory is missing.
func Load() (*Corpus, error) {
	loadOnce.Do(func() { loaded, loadErr = load() })
	return loaded, loadErr
}

// Open returns the corpus, skipping tb when it is absent and failing it when
// it cannot be read.
func Open(tb testing.TB) *Corpus {
	tb.Helper()
	c, err := Load()
	if errors.Is(err, ErrAbsent) {
		tb.Skipf("BFCL corpus not available: %v (it lives in ../shared/corpus/bfcl beside the checkout)", err)
	}
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

func load() (*Corpus, error) {
	dir, err := Dir()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrAbsent, err)
	}
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s does not exist", ErrAbsent, dir)
	}
	c := &Corpus{Dir: dir}
	if c.Tools, err = readLines[Tool](filepath.Join(dir, "tools.jsonl")); err != nil {
		return nil, err
	}
	if c.Calls, err = readLines[Call](filepath.Join(dir, "calls.jsonl")); err != nil {
		return nil, err
	}
	if c.Violations, err = readLines[Call](filepath.Join(dir, "violations.jsonl")); err != nil {
		return nil, err
	}
	c.byID = make(map[string]*Tool, len(c.Tools))
	for i := range c.Tools {
		c.byID[c.Tools[i].ID] = &c.Tools[i]
	}
	for _, list := range [][]Call{c.Calls, c.Violations} {
		for _, call := range list {
			if c.byID[call.SchemaRef] == nil {
				return nil, fmt.Errorf("bfcl: call %s: schema_ref %q names no tool", call.ID, call.SchemaRef)
			}
		}
	}
	return c, nil
}

func readLines[T any](path string) ([]T, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("bfcl: %w", err)
	}
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for line := 1; sc.Scan(); line++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			return nil, fmt.Errorf("bfcl: %s:%d: %w", path, line, err)
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("bfcl: %s: %w", path, err)
	}
	return out, nil
}
