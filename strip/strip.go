// Package strip removes the empty values models hallucinate for optional
// tool arguments: null, {} and [].
//
// Three modes: [Off] leaves arguments alone; [Recursive] applies LangChain's rule
// to every call (no null, {} or [] remains under any key, at any depth);
// [SchemaAware], the default of ToolArgValidation, touches only calls that fail
// validation and removes an empty value only where that removes violations
// and adds none, so that a valid call is never changed, a required key is
// never removed and a value the schema accepts (null on a nullable field)
// stays.
//
// Array elements are never removed in any mode: their position is meaning.
// Values are decoded JSON as produced by [validation.DecodeArgs]; the functions
// modify them in place.
package strip

import (
	"slices"
	"strconv"
	"strings"

	"github.com/toolguard/toolguard/internal/jsonptr"
	"github.com/toolguard/toolguard/validation"
)

// Mode selects how empty values are stripped.
type Mode int

// The strip modes.
const (
	// SchemaAware strips an empty value only from a call that fails
	// validation, and only where removing it removes violations and adds
	// none. It is the zero value and ToolArgValidation's default.
	SchemaAware Mode = iota
	// Off never strips.
	Off
	// Recursive strips every null, {} and [] under any key at any depth
	// from every call, before validation (LangChain's rule). A required
	// empty value is stripped too, and the call then fails validation.
	Recursive
)

// String returns the mode's name.
func (m Mode) String() string {
	switch m {
	case Off:
		return "Off"
	case Recursive:
		return "Recursive"
	case SchemaAware:
		return "SchemaAware"
	}
	return "Mode(" + strconv.Itoa(int(m)) + ")"
}

// IsEmpty reports whether v is one of the values strip removes: null, an
// empty object or an empty array.
func IsEmpty(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case map[string]any:
		return len(x) == 0
	case []any:
		return len(x) == 0
	}
	return false
}

// RecursiveStrip removes, post-order, every empty value held under an object
// key anywhere in v, so that an object emptied by the removal is removed in
// turn. It returns the JSON Pointers removed, sorted.
func RecursiveStrip(v any) []string {
	var removed []string
	var walk func(v any, path string)
	walk = func(v any, path string) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				p := jsonptr.Append(path, k)
				walk(e, p)
				if IsEmpty(e) {
					delete(x, k)
					removed = append(removed, p)
				}
			}
		case []any:
			for i, e := range x {
				walk(e, jsonptr.AppendIndex(path, i))
			}
		}
	}
	walk(v, "")
	slices.Sort(removed)
	return removed
}

// maxTrials bounds the validations [SchemaAwareStrip] runs for one call, so a
// huge argument full of empty values costs a bounded amount of work.
const maxTrials = 256

// maxTrialWork bounds the work of those validations by the size of the
// value: trials × values <= maxTrialWork, so that a large argument gets
// fewer trials (at least one). Without it, 256 trials on arguments of
// 100,000 values took 256 times one validation (87 s in a test).
const maxTrialWork = 1 << 19

// trialBudget returns how many validations [SchemaAwareStrip] may run on v.
func trialBudget(v any) int {
	n := 0
	var count func(v any) bool // false once n reaches maxTrialWork
	count = func(v any) bool {
		if n++; n >= maxTrialWork {
			return false
		}
		switch x := v.(type) {
		case map[string]any:
			for _, e := range x {
				if !count(e) {
					return false
				}
			}
		case []any:
			for _, e := range x {
				if !count(e) {
					return false
				}
			}
		}
		return true
	}
	count(v)
	return max(1, min(maxTrials, maxTrialWork/n))
}

// SchemaAwareStrip removes empty values from v, an invalid call's decoded
// arguments, where that helps. vs lists the violations of v against s
// (s.Check(v).Violations). A candidate — an empty value under an object key,
// inside or at a path some violation points at or below — is removed if
// validating without it removes violations and adds none. Candidates are
// tried deepest first, so an object emptied by a removal becomes a candidate
// in turn.
//
// It runs at most 256 validations, fewer for a large v (about 500,000
// divided by the number of values in v), and returns the JSON Pointers
// removed, sorted, and the violations that remain (vs itself when nothing
// was removed, none when v is now valid).
func SchemaAwareStrip(v any, s *validation.Schema, vs []validation.Violation) (removed []string, remaining []validation.Violation) {
	trials, budget := 0, trialBudget(v)
	for progress := true; progress && len(vs) > 0 && trials < budget; {
		progress = false
		for _, c := range candidates(v, vs) {
			if trials == budget || len(vs) == 0 {
				break
			}
			trials++
			var kept bool
			if vs, kept = s.TryChange(v, vs, c.remove); kept {
				removed = append(removed, c.path)
				progress = true
			}
		}
	}
	slices.Sort(removed)
	return removed, vs
}

type candidate struct {
	parent map[string]any
	key    string
	path   string
	depth  int
}

// remove deletes the candidate from its object and returns how to put it
// back.
func (c candidate) remove() (undo func()) {
	old := c.parent[c.key]
	delete(c.parent, c.key)
	return func() { c.parent[c.key] = old }
}

// candidates lists the empty values under object keys in v that lie at,
// above or below the path of some violation, deepest first, then by path.
func candidates(v any, vs []validation.Violation) []candidate {
	rel := newRelevance(vs)
	var out []candidate
	var walk func(v any, path string, depth int)
	walk = func(v any, path string, depth int) {
		if !rel.relevant(path) {
			return
		}
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				p := jsonptr.Append(path, k)
				if IsEmpty(e) {
					if rel.relevant(p) {
						out = append(out, candidate{parent: x, key: k, path: p, depth: depth + 1})
					}
					continue
				}
				walk(e, p, depth+1)
			}
		case []any:
			for i, e := range x {
				walk(e, jsonptr.AppendIndex(path, i), depth+1)
			}
		}
	}
	walk(v, "", 0)
	slices.SortFunc(out, func(a, b candidate) int {
		if a.depth != b.depth {
			return b.depth - a.depth
		}
		return strings.Compare(a.path, b.path)
	})
	return out
}

// relevance answers whether removing or descending into the value at a path
// can affect a violation: some violation's path is that path, an ancestor of
// it or a descendant of it. Each answer costs O(depth of the path).
type relevance struct {
	at    map[string]bool // the violations' paths
	above map[string]bool // the violations' paths and all their ancestors
}

func newRelevance(vs []validation.Violation) relevance {
	r := relevance{at: make(map[string]bool, len(vs)), above: make(map[string]bool, 2*len(vs))}
	for _, v := range vs {
		r.at[v.Path] = true
		for p := v.Path; !r.above[p]; p = jsonptr.Parent(p) {
			r.above[p] = true
			if p == "" {
				break
			}
		}
	}
	return r
}

func (r relevance) relevant(path string) bool {
	if r.above[path] {
		return true // a violation at or below path
	}
	for p := path; ; p = jsonptr.Parent(p) {
		if r.at[p] {
			return true // a violation at an ancestor of path
		}
		if p == "" {
			return false
		}
	}
}
