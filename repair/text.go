package repair

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/toolguard/toolguard/validation"
)

var fence = []byte("```")

// unfence returns the content of the one Markdown code fence in text, and
// whether there is text outside the fence. The opening fence may carry an
// info string ("```json") and must end its line, unless the content follows
// it directly ("```{...}```"). Text with more than one fence is refused.
func unfence(text []byte) (inner []byte, prose, ok bool) {
	i := bytes.Index(text, fence)
	if i < 0 {
		return nil, false, false
	}
	rest := text[i+len(fence):]
	lang := 0
	for lang < len(rest) && isInfoByte(rest[lang]) {
		lang++
	}
	after := bytes.TrimLeft(rest[lang:], " \t")
	switch {
	case bytes.HasPrefix(after, []byte("\r\n")):
		after = after[2:]
	case bytes.HasPrefix(after, []byte("\n")):
		after = after[1:]
	case lang == 0 && len(after) > 0 && (after[0] == '{' || after[0] == '"'):
	default:
		return nil, false, false
	}
	j := bytes.Index(after, fence)
	if j < 0 {
		return nil, false, false
	}
	tail := after[j+len(fence):]
	if bytes.Contains(tail, fence) {
		return nil, false, false
	}
	prose = len(bytes.TrimSpace(text[:i])) > 0 || len(bytes.TrimSpace(tail)) > 0
	return bytes.TrimSpace(after[:j]), prose, true
}

func isInfoByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '+' || c == '.'
}

// soleObject returns the one brace-delimited object in text, when the text
// around it holds no other brace and no code fence, so there is exactly one
// candidate. Strings in double or single quotes are skipped when matching
// braces.
func soleObject(text []byte) ([]byte, bool) {
	start := bytes.IndexByte(text, '{')
	if start < 0 {
		return nil, false
	}
	depth := 0
	var quote byte
	for i := start; i < len(text); i++ {
		c := text[i]
		if quote != 0 {
			switch c {
			case '\\':
				i++
			case quote:
				quote = 0
			}
			continue
		}
		switch c {
		case '"', '\'':
			quote = c
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				outside := string(text[:start]) + string(text[i+1:])
				if strings.ContainsAny(outside, "{}") || strings.Contains(outside, "```") {
					return nil, false
				}
				return text[start : i+1], true
			}
		}
	}
	return nil, false
}

// lenientUse says which liberties parseLenient took.
type lenientUse struct {
	trailingComma bool // a comma before } or ]
	python        bool // True/False/None, single quotes, Python-only escapes
}

// parseLenient parses JSON extended with exactly the Python literal syntax
// a dict repr uses and trailing commas. Everything else JSON forbids
// (unquoted keys, comments, raw control characters in strings, NaN, data
// after the value) is still an error.
func parseLenient(text []byte) (any, lenientUse, bool) {
	p := lenient{s: text}
	v, ok := p.value(0)
	if !ok {
		return nil, lenientUse{}, false
	}
	p.ws()
	if p.i != len(p.s) {
		return nil, lenientUse{}, false
	}
	return v, p.used, true
}

// parsePython parses s as a Python list or dict literal, as repr() writes
// one: strings in single or double quotes with Python's escapes, True,
// False and None, numbers as JSON writes them, keys that are strings, and
// trailing commas, which Python allows. Nothing is evaluated. It is strict
// where text could be read two ways: true, false and null are refused
// (Python has no such names), and so are the escapes that mean one thing in
// JSON and another in Python (\/ in double quotes, and \u escapes of
// surrogate halves, which JSON pairs and Python keeps apart), so that text
// that is also JSON decodes as encoding/json decodes it. Whatever Python
// would not read as a list or dict of such literals is refused: tuples,
// sets, keys that are not strings, a key twice (Python keeps the last,
// other readers the first), comments, names, expressions, string prefixes,
// blanks around the literal, and text beyond validation's depth and value
// limits (see lenient).
func parsePython(s string) (any, bool) {
	if len(s) < 2 || s[0] != '[' && s[0] != '{' {
		return nil, false
	}
	p := lenient{s: []byte(s), python: true}
	v, ok := p.value(0)
	if !ok || p.i != len(p.s) {
		return nil, false
	}
	return v, true
}

// lenient is one parse. It holds the text to validation's limits as it
// reads, so that hostile input can neither exhaust the stack nor allocate
// more values than any arguments may hold: arrays and objects nest at most
// [validation.MaxDepth] deep, and the text holds at most
// [validation.MaxValues] values (each array and object, member value and
// element), counted as validation counts them.
type lenient struct {
	s      []byte
	i      int
	values int  // values read so far
	python bool // parsePython: Python's literals only, no reading JSON and Python disagree on
	used   lenientUse
}

func (p *lenient) ws() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *lenient) peek() byte {
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

// value reads one value; depth is the number of arrays and objects around
// it.
func (p *lenient) value(depth int) (any, bool) {
	if p.values++; p.values > validation.MaxValues {
		return nil, false
	}
	p.ws()
	switch c := p.peek(); {
	case c == '{' || c == '[':
		if depth+1 > validation.MaxDepth {
			return nil, false
		}
		if c == '{' {
			return p.object(depth)
		}
		return p.array(depth)
	case c == '"' || c == '\'':
		return p.str()
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	}
	for _, lit := range []struct {
		word   string
		v      any
		python bool
	}{
		{"true", true, false}, {"false", false, false}, {"null", nil, false},
		{"True", true, true}, {"False", false, true}, {"None", nil, true},
	} {
		if p.python && !lit.python {
			continue
		}
		if bytes.HasPrefix(p.s[p.i:], []byte(lit.word)) {
			end := p.i + len(lit.word)
			if end < len(p.s) && isWordByte(p.s[end]) {
				return nil, false
			}
			p.i = end
			p.used.python = p.used.python || lit.python
			return lit.v, true
		}
	}
	return nil, false
}

func isWordByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func (p *lenient) object(depth int) (any, bool) {
	p.i++ // {
	obj := map[string]any{}
	p.ws()
	if p.peek() == '}' {
		p.i++
		return obj, true
	}
	for {
		p.ws()
		if c := p.peek(); c != '"' && c != '\'' {
			return nil, false // keys must be quoted
		}
		k, ok := p.str()
		if !ok {
			return nil, false
		}
		p.ws()
		if p.peek() != ':' {
			return nil, false
		}
		p.i++
		v, ok := p.value(depth + 1)
		if !ok {
			return nil, false
		}
		if _, dup := obj[k.(string)]; dup {
			return nil, false // a key twice: two readings, no guess
		}
		obj[k.(string)] = v
		p.ws()
		switch p.peek() {
		case ',':
			p.i++
			p.ws()
			if p.peek() == '}' {
				p.used.trailingComma = true
				p.i++
				return obj, true
			}
		case '}':
			p.i++
			return obj, true
		default:
			return nil, false
		}
	}
}

func (p *lenient) array(depth int) (any, bool) {
	p.i++ // [
	arr := []any{}
	p.ws()
	if p.peek() == ']' {
		p.i++
		return arr, true
	}
	for {
		v, ok := p.value(depth + 1)
		if !ok {
			return nil, false
		}
		arr = append(arr, v)
		p.ws()
		switch p.peek() {
		case ',':
			p.i++
			p.ws()
			if p.peek() == ']' {
				p.used.trailingComma = true
				p.i++
				return arr, true
			}
		case ']':
			p.i++
			return arr, true
		default:
			return nil, false
		}
	}
}

// number reads a number in JSON's grammar, kept as written.
func (p *lenient) number() (any, bool) {
	start := p.i
	if p.peek() == '-' {
		p.i++
	}
	switch c := p.peek(); {
	case c == '0':
		p.i++
	case c >= '1' && c <= '9':
		p.digits()
	default:
		return nil, false
	}
	if p.peek() == '.' {
		p.i++
		if !p.digits() {
			return nil, false
		}
	}
	if c := p.peek(); c == 'e' || c == 'E' {
		p.i++
		if c := p.peek(); c == '+' || c == '-' {
			p.i++
		}
		if !p.digits() {
			return nil, false
		}
	}
	if p.i < len(p.s) && isWordByte(p.s[p.i]) {
		return nil, false // 0x1F, 1_000, 10L: not JSON numbers
	}
	n := p.s[start:p.i]
	if p.python && !pythonReadsExactly(n) {
		return nil, false
	}
	return json.Number(n), true
}

// pythonReadsExactly reports whether Python reads the number n (JSON's
// grammar) as the value JSON gives it, as far as anyone can tell: an
// integer is exact in both; a float is a float64 in Python, so one beyond
// float64's range (1e400, which Python reads as inf) or so small that it
// becomes 0 (1e-400) is another number there.
func pythonReadsExactly(n []byte) bool {
	if !bytes.ContainsAny(n, ".eE") {
		return true
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil {
		return false
	}
	if f != 0 {
		return true
	}
	mantissa := n
	if i := bytes.IndexAny(n, "eE"); i >= 0 {
		mantissa = n[:i]
	}
	return !bytes.ContainsAny(mantissa, "123456789") // 0.0e5 is 0 to both
}

func (p *lenient) digits() bool {
	start := p.i
	for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
		p.i++
	}
	return p.i > start
}

// str reads a string in double quotes (JSON escapes, and Python's where
// JSON has none) or single quotes (Python escapes).
func (p *lenient) str() (any, bool) {
	quote := p.s[p.i]
	if quote == '\'' {
		p.used.python = true
	}
	p.i++
	var b strings.Builder
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == quote:
			p.i++
			return b.String(), true
		case c < 0x20:
			return nil, false // a raw control character: JSON and Python both refuse it
		case c == '\\':
			if !p.escape(&b, quote) {
				return nil, false
			}
		default:
			r, size := utf8.DecodeRune(p.s[p.i:])
			b.WriteRune(r) // invalid UTF-8 becomes U+FFFD, as encoding/json does
			p.i += size
		}
	}
	return nil, false
}

// escape decodes the escape sequence at p.i into b.
func (p *lenient) escape(b *strings.Builder, quote byte) bool {
	if p.i+1 >= len(p.s) {
		return false
	}
	c := p.s[p.i+1]
	p.i += 2
	simple := map[byte]string{'"': `"`, '\'': `'`, '\\': `\`, 'b': "\b", 'f': "\f", 'n': "\n", 'r': "\r", 't': "\t"}
	if s, ok := simple[c]; ok {
		if c == '\'' && quote == '"' {
			p.used.python = true
		}
		b.WriteString(s)
		return true
	}
	switch c {
	case '/':
		switch {
		case quote == '\'':
			b.WriteString(`\/`) // Python keeps an unknown escape as written
		case p.python:
			return false // JSON reads "/", Python "\/"
		default:
			b.WriteByte('/')
		}
		return true
	case 'u':
		r, ok := p.hex(4)
		if !ok || p.python && utf16.IsSurrogate(r) {
			return false // Python keeps surrogate halves apart, JSON pairs them
		}
		if utf16.IsSurrogate(r) && bytes.HasPrefix(p.s[p.i:], []byte(`\u`)) {
			save := p.i
			p.i += 2
			if r2, ok := p.hex(4); ok && utf16.DecodeRune(r, r2) != utf8.RuneError {
				r = utf16.DecodeRune(r, r2)
			} else {
				p.i = save
			}
		}
		b.WriteRune(r)
		return true
	}
	// Python-only escapes.
	p.used.python = true
	switch c {
	case 'x':
		r, ok := p.hex(2)
		b.WriteRune(r)
		return ok
	case 'U':
		r, ok := p.hex(8)
		if !ok || !utf8.ValidRune(r) {
			return false
		}
		b.WriteRune(r)
		return true
	case 'a':
		b.WriteByte('\a')
		return true
	case 'v':
		b.WriteByte('\v')
		return true
	case '0', '1', '2', '3', '4', '5', '6', '7':
		n := int(c - '0')
		for k := 0; k < 2 && p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '7'; k++ {
			n = n*8 + int(p.s[p.i]-'0')
			p.i++
		}
		b.WriteRune(rune(n))
		return true
	case '\n', 'N':
		return false // line continuation, named characters: not worth guessing
	}
	if quote == '"' || c < 0x20 {
		return false // not an escape in JSON, and we are not sure it is Python; or a raw control character
	}
	// Python keeps an unknown escape as written: the backslash and the
	// character, which may take several bytes.
	r, size := utf8.DecodeRune(p.s[p.i-1:])
	b.WriteByte('\\')
	b.WriteRune(r) // invalid UTF-8 becomes U+FFFD, as in str
	p.i += size - 1
	return true
}

func (p *lenient) hex(n int) (rune, bool) {
	if p.i+n > len(p.s) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(p.s[p.i:p.i+n]), 16, 32)
	if err != nil {
		return 0, false
	}
	p.i += n
	return rune(v), true
}
