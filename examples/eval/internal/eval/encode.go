package eval

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
)

// textStyle says how to write arguments as text, the way models do.
type textStyle struct {
	python bool // a Python literal: single quotes, True/False/None
	indent bool // one member per line, two-space indent
	// comma is the pre-order number (0 = the arguments object) of the
	// non-empty container that gets a trailing comma; -1 for none.
	comma int
}

// write renders v in style: `{"a": 1, "b": [true]}` by default.
func write(v any, style textStyle) string {
	w := writer{style: style}
	w.value(v, 0)
	return w.b.String()
}

type writer struct {
	style      textStyle
	b          strings.Builder
	containers int
}

func (w *writer) value(v any, depth int) {
	switch x := v.(type) {
	case nil:
		w.b.WriteString(w.pick("null", "None"))
	case bool:
		if x {
			w.b.WriteString(w.pick("true", "True"))
		} else {
			w.b.WriteString(w.pick("false", "False"))
		}
	case json.Number:
		w.b.WriteString(string(x))
	case string:
		if w.style.python {
			w.b.WriteString(pyRepr(x))
		} else {
			w.b.Write(marshal(x))
		}
	case []any:
		n := w.containers
		w.containers++
		w.b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				w.b.WriteString(", ")
			}
			w.value(e, depth+1)
		}
		if n == w.style.comma && len(x) > 0 {
			w.b.WriteByte(',')
		}
		w.b.WriteByte(']')
	case map[string]any:
		n := w.containers
		w.containers++
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		w.b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				w.b.WriteByte(',')
				if !w.style.indent {
					w.b.WriteByte(' ')
				}
			}
			w.newline(depth + 1)
			w.value(k, depth+1)
			w.b.WriteString(": ")
			w.value(x[k], depth+1)
		}
		if n == w.style.comma && len(x) > 0 {
			w.b.WriteByte(',')
		}
		if len(x) > 0 {
			w.newline(depth)
		}
		w.b.WriteByte('}')
	default:
		panic("eval: not decoded JSON")
	}
}

func (w *writer) pick(json, python string) string {
	if w.style.python {
		return python
	}
	return json
}

func (w *writer) newline(depth int) {
	if w.style.indent {
		w.b.WriteByte('\n')
		w.b.WriteString(strings.Repeat("  ", depth))
	}
}

// nonEmptyContainers counts the non-empty objects and arrays in v, in the
// pre-order write numbers them.
func nonEmptyContainers(v any) []int {
	var out []int
	n := 0
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case []any:
			if len(x) > 0 {
				out = append(out, n)
			}
			n++
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			if len(x) > 0 {
				out = append(out, n)
			}
			n++
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				walk(x[k])
			}
		}
	}
	walk(v)
	return out
}

// pyRepr renders s as Python's repr() does: single quotes unless s holds a
// single quote and no double quote.
func pyRepr(s string) string {
	quote := byte('\'')
	if strings.ContainsRune(s, '\'') && !strings.ContainsRune(s, '"') {
		quote = '"'
	}
	var b strings.Builder
	b.WriteByte(quote)
	for _, r := range s {
		switch {
		case r == '\\':
			b.WriteString(`\\`)
		case r == rune(quote):
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			b.WriteString(`\x`)
			h := strconv.FormatInt(int64(r), 16)
			if len(h) < 2 {
				b.WriteByte('0')
			}
			b.WriteString(h)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte(quote)
	return b.String()
}
