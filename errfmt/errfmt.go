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

// Defaults for [Options].
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

// Feedback formats e with the default [Options].
func Feedback(e *validation.Error) string { return Options{}.Feedback(e) }

// Feedback formats the violations of one tool call:
//
//	Invalid arguments for tool "get_weather": 2 errors.
//	- /city: expected string, got 42
//	- /units: expected one of "celsius", "fahrenheit", got "kelvin"
//	Call get_weather again with corrected arguments.
//
// The closing line also asks the model to omit optional fields rather than
// send null, {} or [] when a violation is about such a value ("got null").
// Without a tool name (e.Tool == "") the text names no tool.
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
	head.WriteString(PrefixInvalid)
	if e.Tool != "" {
		head.WriteString(" for tool ")
		head.WriteString(tool)
	}
	head.WriteString(": ")
	total := len(vs) + e.Omitted
	head.WriteString(plural(total, "error"))
	head.WriteString(".\n")

	name := e.Tool
	switch {
	case name == "":
		name = "the tool"
	case !plainName(name):
		name = "the tool " + tool
	}
	foot := "Call " + name + " again with corrected arguments."
	if sentEmpty(vs) {
		foot += " Omit optional fields you have no value for instead of sending null, {} or []."
	}
	return o.render(head.String(), foot, vs, total)
}

// render writes head, the lines of vs that fit in MaxBytes (total counts
// the violations, shown or not), and foot.
func (o Options) render(head, foot string, vs []validation.Violation, total int) string {
	var b strings.Builder
	b.Grow(min(o.MaxBytes, 1024))
	b.WriteString(head)
	// Room for the lines, keeping space for the instruction and a
	// "and N more" line.
	budget := o.MaxBytes - len(head) - len(foot) - 48
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

// sentEmpty reports whether a violation is about an empty value (null, {}
// or []) the model sent, the case the closing advice is for.
func sentEmpty(vs []validation.Violation) bool {
	for _, v := range vs {
		switch v.Got {
		case "null", "{}", "[]":
			return true
		}
	}
	return false
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
