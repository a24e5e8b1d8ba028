// Package errfmt turns validation results into the text a model reads in a
// tool message: every violation at once, sorted, each with its JSON Pointer
// path, what was expected and what was sent, ending with one line that tells
// the model what to do. The text is deterministic (byte-identical for the
// same input) and bounded: values echoed from the model are JSON-quoted and
// cut short, and the whole text never exceeds Options.MaxBytes.
package errfmt

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/toolguard/toolguard/internal/safetext"
	"github.com/toolguard/toolguard/validation"
)

// Options bound the feedback text. Zero fields take the defaults.
type Options struct {
	// MaxBytes bounds the whole text (default 4096, at least 256).
	MaxBytes int
	// MaxValueBytes bounds each value echoed from the model (default 80).
	MaxValueBytes int
}

// Defaults for Options.
const (
	DefaultMaxBytes      = 4096
	DefaultMaxValueBytes = 80
)

func (o Options) normalized() Options {
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	o.MaxBytes = max(o.MaxBytes, 256)
	if o.MaxValueBytes <= 0 {
		o.MaxValueBytes = DefaultMaxValueBytes
	}
	return o
}

// NotExecuted is the tool message for a valid call whose siblings in the same
// response had invalid arguments: it was not run, and the model must send the
// whole batch again.
const NotExecuted = "Not executed because other tool calls in this batch had invalid arguments; " +
	"re-issue all tool calls with corrected arguments."

// Feedback formats e with the default Options.
func Feedback(e *validation.Error) string { return Options{}.Feedback(e) }

// Feedback formats the violations of one tool call:
//
//	Invalid arguments for tool "get_weather": 2 errors.
//	- /city: expected string, got 42
//	- /units: expected one of "celsius", "fahrenheit", got "kelvin"
//	Call get_weather again with corrected arguments. Omit optional fields you have no value for instead of sending null, {} or [].
//
// Violations are sorted by path, keyword and message. When they do not all
// fit in MaxBytes, the last line before the instruction says how many were
// left out.
func (o Options) Feedback(e *validation.Error) string {
	o = o.normalized()
	vs := slices.Clone(e.Violations)
	slices.SortFunc(vs, compareViolations)
	vs = slices.Compact(vs)

	tool := safetext.Quote(e.Tool, 64)
	var head strings.Builder
	head.WriteString("Invalid arguments for tool ")
	head.WriteString(tool)
	head.WriteString(": ")
	total := len(vs) + e.Omitted
	head.WriteString(plural(total, "error"))
	head.WriteString(".\n")

	name := e.Tool
	if !plainName(name) {
		name = "the tool " + tool
	}
	foot := "Call " + name + " again with corrected arguments. " +
		"Omit optional fields you have no value for instead of sending null, {} or []."

	var b strings.Builder
	b.Grow(min(o.MaxBytes, 1024))
	b.WriteString(head.String())
	// Room for the lines, keeping space for the instruction and a
	// "and N more" line.
	budget := o.MaxBytes - head.Len() - len(foot) - 48
	shown := 0
	for _, v := range vs {
		line := o.line(v)
		if len(line) > budget {
			break
		}
		budget -= len(line)
		b.WriteString(line)
		shown++
	}
	if shown < total {
		b.WriteString("- and ")
		b.WriteString(plural(total-shown, "more error"))
		b.WriteString(" not shown\n")
	}
	b.WriteString(foot)
	return b.String()
}

// compareViolations orders violations by path, keyword, message and value,
// the order validation reports them in, so that the text does not depend on
// the order of the input.
func compareViolations(a, b validation.Violation) int {
	return cmp.Or(cmp.Compare(a.Path, b.Path), cmp.Compare(a.Keyword, b.Keyword),
		cmp.Compare(a.Message, b.Message), cmp.Compare(a.Got, b.Got))
}

// line renders one violation as "- path: message, got value\n".
func (o Options) line(v validation.Violation) string {
	var b strings.Builder
	b.WriteString("- ")
	b.WriteString(safetext.PathLabel(v.Path))
	b.WriteString(": ")
	b.WriteString(safetext.Sanitize(v.Message, 300))
	if v.Got != "" {
		b.WriteString(", got ")
		got := safetext.Sanitize(v.Got, o.MaxValueBytes)
		b.WriteString(got)
	}
	b.WriteByte('\n')
	return b.String()
}

// UnknownTool is the tool message for a call naming a tool that does not
// exist (ToolArgValidation with UnknownReject): it lists the available tools
// and suggests the closest name.
func UnknownTool(name string, available []string) string {
	tools := slices.Clone(available)
	slices.Sort(tools)
	tools = slices.Compact(tools)
	var b strings.Builder
	b.WriteString("Tool ")
	b.WriteString(safetext.Quote(name, 64))
	b.WriteString(" does not exist.")
	if len(tools) == 0 {
		b.WriteString(" No tools are available; answer without calling a tool.")
		return b.String()
	}
	b.WriteString(" Available tools: ")
	for i, t := range tools {
		if i == 50 {
			b.WriteString(", and " + strconv.Itoa(len(tools)-i) + " more")
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(safetext.Quote(t, 64))
	}
	b.WriteString(".")
	if c := Closest(name, tools); c != "" {
		b.WriteString(" Did you mean ")
		b.WriteString(safetext.Quote(c, 64))
		b.WriteString("?")
	}
	b.WriteString(" Call one of the available tools by its exact name.")
	return b.String()
}

// Closest returns the name in names nearest to name by edit distance,
// ignoring case; ties go to the alphabetically first. It returns "" when
// names is empty.
func Closest(name string, names []string) string {
	best, bestD := "", -1
	lower := strings.ToLower(truncate(name, 256))
	for _, n := range names {
		d := levenshtein(lower, strings.ToLower(truncate(n, 256)))
		if bestD < 0 || d < bestD || (d == bestD && n < best) {
			best, bestD = n, d
		}
	}
	return best
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

func levenshtein(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}

// plainName reports whether a tool name can be shown unquoted: short, and
// only letters, digits, '_', '-' and '.'.
func plainName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-', r == '.':
		default:
			return false
		}
	}
	return true
}
