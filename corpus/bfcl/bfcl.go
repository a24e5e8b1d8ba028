// Package bfcl loads the Berkeley Function Calling Leaderboard corpus for
// toolguard's tests and benchmarks: the subset shipped in
// corpus/testdata by default, the full corpus (see
// ../shared/corpus/README.md) when $TOOLGUARD_CORPUS names it.
//
// Only test files import it. Tests call Open, and check counts against the
// corpus's Want figures, which depend on which of the two was loaded.
package bfcl

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"sync"

	"github.com/toolguard/toolguard/corpus"
)

// The sizes of the full corpus as published (BFCL v4, commit 6ea57973).
const (
	NumTools               = 3526
	NumCalls               = 9523
	NumUniqueCalls         = 4439 // distinct (schema_ref, args) pairs among the calls
	NumViolations          = 330
	NumStripRepairable     = 106 // violations marked valid_after_strip_top_level
	NumCallsWithEmptyValue = 31  // calls marked has_empty_values
)

// Figures are the sizes of a corpus, as its tests expect them.
type Figures struct {
	Tools, Calls, UniqueCalls, Violations, StripRepairable, CallsWithEmptyValue int
}

// Full returns the figures of the full corpus.
func Full() Figures {
	return Figures{NumTools, NumCalls, NumUniqueCalls, NumViolations, NumStripRepairable, NumCallsWithEmptyValue}
}

// Shipped returns the figures of the shipped subset: the unique calls (so
// one of the 31 calls with empty values, a repeat, is gone) and the 1,884
// tools they and the violations refer to.
func Shipped() Figures {
	return Figures{1884, NumUniqueCalls, NumUniqueCalls, NumViolations, NumStripRepairable, 30}
}

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

// Corpus is the BFCL corpus, full or shipped.
type Corpus struct {
	Source     string  // where it was read from
	Full       bool    // the full corpus, not the shipped subset
	Want       Figures // its expected sizes: Full() or Shipped()
	Tools      []Tool
	Calls      []Call
	Violations []Call

	byID map[string]*Tool
}

// Pick returns full for the full corpus and shipped for the shipped subset:
// a figure a test pins for both.
func (c *Corpus) Pick(full, shipped int) int {
	if c.Full {
		return full
	}
	return shipped
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

var (
	loadOnce sync.Once
	loaded   *Corpus
	loadErr  error
)

// Load reads the corpus once per process: the directory named by
// $TOOLGUARD_CORPUS (its bfcl subdirectory), else the shipped subset. It
// returns an error wrapping ErrAbsent when that directory is missing.
func Load() (*Corpus, error) {
	loadOnce.Do(func() { loaded, loadErr = load() })
	return loaded, loadErr
}

func load() (*Corpus, error) {
	d, err := corpus.Open(corpus.BFCL)
	if err != nil {
		return nil, fmt.Errorf("%w: %v (unset $%s to use the shipped subset)", ErrAbsent, err, corpus.EnvDir)
	}
	c := &Corpus{Source: d.Source, Full: d.Full, Want: Shipped()}
	if d.Full {
		c.Want = Full()
	}
	if c.Tools, err = readLines[Tool](d, "tools.jsonl"); err != nil {
		return nil, err
	}
	if c.Calls, err = readLines[Call](d, "calls.jsonl"); err != nil {
		return nil, err
	}
	if c.Violations, err = readLines[Call](d, "violations.jsonl"); err != nil {
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

func readLines[T any](fsys fs.FS, path string) ([]T, error) {
	f, err := fsys.Open(path)
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
