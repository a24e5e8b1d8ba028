// Package safetext renders model-supplied text so that it cannot break the
// text around it: JSON-quoted strings, one-line sanitized messages, bounded
// previews of decoded JSON values and JSON Pointer labels. Every bound is in
// bytes, and cut text is marked with Ellipsis outside any quotes.
package safetext

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Ellipsis marks text cut short. It always stands outside quotes, so it
// cannot be mistaken for part of a value.
const Ellipsis = "…"

// Quote renders s as a JSON string of at most about max bytes of s: control
// characters, quotes and backslashes are escaped and invalid UTF-8 becomes
// U+FFFD, so the result cannot break the structure of the text around it.
// When s is cut, Ellipsis follows the closing quote. A negative max means no
// bound.
func Quote(s string, max int) string {
	var b strings.Builder
	cut := false
	if max >= 0 && len(s) > max {
		s, cut = Truncate(s, max), true
	}
	appendQuoted(&b, s)
	if cut {
		b.WriteString(Ellipsis)
	}
	return b.String()
}

// appendQuoted writes s to b as a JSON string.
func appendQuoted(b *strings.Builder, s string) {
	b.WriteByte('"')
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteString(`\ufffd`)
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f || r == '\u2028' || r == '\u2029':
			b.WriteString(`\u`)
			h := strconv.FormatInt(int64(r), 16)
			b.WriteString(strings.Repeat("0", 4-len(h)))
			b.WriteString(h)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
}

// Truncate returns the longest prefix of s of at most max bytes that does
// not split a UTF-8 sequence.
func Truncate(s string, max int) string {
	if len(s) <= max {
		return s
	}
	i := max
	for i > 0 && i > max-utf8.UTFMax && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i]
}

// Sanitize makes text safe to embed in one line of a message: line breaks and
// other control characters become spaces, invalid UTF-8 becomes U+FFFD, and
// text longer than max bytes is cut with Ellipsis.
func Sanitize(s string, max int) string {
	cut := false
	if len(s) > max {
		s, cut = Truncate(s, max), true
	}
	clean := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f || c >= 0x80 {
			clean = false
			break
		}
	}
	if !clean {
		var b strings.Builder
		for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
			if r < 0x20 || r == 0x7f || r == '\u2028' || r == '\u2029' {
				r = ' '
			}
			b.WriteRune(r)
		}
		s = b.String()
	}
	if cut {
		s += Ellipsis
	}
	return s
}

// Preview renders a decoded JSON value as compact JSON of about max bytes at
// most, object keys sorted; a longer value is cut and followed by Ellipsis.
// Strings are escaped as by Quote. The cost is bounded by max, not by the
// size of v, except for finding the smallest keys of a large object (one
// pass over its keys).
func Preview(v any, max int) string {
	p := previewer{max: max}
	p.value(v)
	if p.cut {
		p.b.WriteString(Ellipsis)
	}
	return p.b.String()
}

type previewer struct {
	b   strings.Builder
	max int
	cut bool
}

func (p *previewer) room() int { return p.max - p.b.Len() }

func (p *previewer) full() bool {
	if p.room() <= 0 {
		p.cut = true
	}
	return p.cut
}

func (p *previewer) value(v any) {
	if p.full() {
		return
	}
	switch x := v.(type) {
	case nil:
		p.b.WriteString("null")
	case bool:
		p.b.WriteString(strconv.FormatBool(x))
	case json.Number:
		p.literal(string(x))
	case float64:
		if math.IsInf(x, 0) || math.IsNaN(x) {
			p.b.WriteString(`"` + strconv.FormatFloat(x, 'g', -1, 64) + `"`)
		} else {
			p.literal(strconv.FormatFloat(x, 'g', -1, 64))
		}
	case string:
		if room := max(p.room()-2, 0); len(x) > room {
			x, p.cut = Truncate(x, room), true
		}
		appendQuoted(&p.b, x)
	case []any:
		p.b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				p.b.WriteByte(',')
			}
			if p.value(e); p.cut {
				return
			}
		}
		p.b.WriteByte(']')
	case map[string]any:
		// Each member shown takes at least 4 bytes ("":0) plus a comma,
		// so no more than room/4+1 keys can be written before the cut.
		keys := smallestKeys(x, p.room()/4+2)
		p.b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				p.b.WriteByte(',')
			}
			if p.value(k); p.cut {
				return
			}
			p.b.WriteByte(':')
			if p.value(x[k]); p.cut {
				return
			}
		}
		p.b.WriteByte('}')
	default:
		b, err := json.Marshal(x)
		if err != nil {
			p.b.WriteString(`"<unprintable>"`)
			return
		}
		p.literal(string(b))
	}
}

// smallestKeys returns the m smallest keys of x in order (all of them when
// x has no more than m), in O(len(x)·m) time at worst and O(m) space, so
// that previewing a huge object does not sort all of its keys.
func smallestKeys(x map[string]any, m int) []string {
	if len(x) <= m {
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		return keys
	}
	keys := make([]string, 0, m)
	for k := range x {
		if len(keys) == m && k >= keys[m-1] {
			continue
		}
		i, _ := slices.BinarySearch(keys, k)
		if len(keys) == m {
			keys = keys[:m-1]
		}
		keys = slices.Insert(keys, i, k)
	}
	return keys
}

// literal writes a number or other token, cutting it if it does not fit.
func (p *previewer) literal(s string) {
	if room := p.room(); len(s) > room {
		s, p.cut = s[:max(room, 0)], true
	}
	p.b.WriteString(s)
}

// maxPathLabel bounds a quoted path in PathLabel, in bytes.
const maxPathLabel = 200

// PathLabel renders a JSON Pointer for a message: "(root)" for "", the
// pointer itself when it is plain printable ASCII without quotes or spaces
// and at most 200 bytes, and the pointer as a quoted JSON string otherwise.
func PathLabel(p string) string {
	if p == "" {
		return "(root)"
	}
	if len(p) > maxPathLabel {
		return Quote(p, maxPathLabel)
	}
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c <= ' ' || c >= 0x7f || c == '"' || c == '\\' {
			return Quote(p, maxPathLabel)
		}
	}
	return p
}
