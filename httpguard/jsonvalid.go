package httpguard

import (
	"encoding/binary"
	"math/bits"
)

// validJSON reports whether b is one JSON value, as json.Valid does, in
// one pass without encoding/json's scanner, which calls a function per
// byte: a guarded body is checked once, whole, before its spans are read
// (parseBody), and that check was a tenth of a sync request's CPU. It
// accepts exactly what json.Valid accepts (FuzzValidJSON): the grammar of
// RFC 8259, strings with invalid UTF-8 (encoding/json reads them with
// U+FFFD) but no control character, and at most maxNesting levels of
// objects and arrays.
func validJSON(b []byte) bool { return checkJSON(b, nil) }

// checkJSON is validJSON, and when nests is not nil it appends to
// *nests the span of every object and array of b, in the order of their
// starts (parseDoc's index). *nests is meaningful only when b is valid.
func checkJSON(b []byte, nests *[]nest) bool {
	// The open containers: their first byte, '{' or '[', and where
	// nests holds their span.
	type open struct {
		c    byte
		nest int
	}
	var buf [64]open
	stack := buf[:0]
	i := skipSpace(b, 0)
	for {
		// A value starts at i.
		if i >= len(b) {
			return false
		}
		switch c := b[i]; {
		case c == '{' || c == '[':
			if len(stack) >= maxNesting {
				return false
			}
			o := open{c: c}
			if nests != nil {
				o.nest = len(*nests)
				*nests = append(*nests, nest{start: int32(i)})
			}
			stack = append(stack, o)
			i = skipSpace(b, i+1)
			if i < len(b) && b[i] == c+2 { // '}' or ']'
				stack = stack[:len(stack)-1]
				i++
				if nests != nil {
					(*nests)[o.nest].end = int32(i)
				}
				break
			}
			if c == '{' {
				if i = keyThenColon(b, i); i < 0 {
					return false
				}
			}
			continue
		case c == '"':
			if i = validString(b, i); i < 0 {
				return false
			}
		case c == 't':
			if i = literal(b, i, "true"); i < 0 {
				return false
			}
		case c == 'f':
			if i = literal(b, i, "false"); i < 0 {
				return false
			}
		case c == 'n':
			if i = literal(b, i, "null"); i < 0 {
				return false
			}
		case c == '-' || '0' <= c && c <= '9':
			if i = validNumber(b, i); i < 0 {
				return false
			}
		default:
			return false
		}
		// A value ended at i: what follows closes its containers, or
		// separates it from the next.
		for {
			i = skipSpace(b, i)
			if len(stack) == 0 {
				return i == len(b)
			}
			if i >= len(b) {
				return false
			}
			top := stack[len(stack)-1]
			if b[i] == top.c+2 {
				stack = stack[:len(stack)-1]
				i++
				if nests != nil {
					(*nests)[top.nest].end = int32(i)
				}
				continue
			}
			if b[i] != ',' {
				return false
			}
			i = skipSpace(b, i+1)
			if top.c == '{' {
				if i = keyThenColon(b, i); i < 0 {
					return false
				}
			}
			break
		}
	}
}

// maxNesting is how deep encoding/json nests objects and arrays before it
// refuses a document ("exceeded max depth").
const maxNesting = 10000

// keyThenColon checks the key and colon of an object member that starts at
// b[i] and returns the index of its value, -1 when they are not JSON.
func keyThenColon(b []byte, i int) int {
	if i >= len(b) || b[i] != '"' {
		return -1
	}
	if i = validString(b, i); i < 0 {
		return -1
	}
	i = skipSpace(b, i)
	if i >= len(b) || b[i] != ':' {
		return -1
	}
	return skipSpace(b, i+1)
}

// validString returns the end of the JSON string that starts at b[i], -1
// when it is not one: unterminated, a control character, or an escape
// other than \" \\ \/ \b \f \n \r \t and \u with four hex digits.
func validString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		// Skip to the first quote, backslash or control character,
		// eight bytes at a time (see bytesEqual).
		for ; i+8 <= len(b); i += 8 {
			x := binary.LittleEndian.Uint64(b[i:])
			if m := bytesEqual(x, '"') | bytesEqual(x, '\\') | bytesBelow(x, ' '); m != 0 {
				i += bits.TrailingZeros64(m) / 8
				break
			}
		}
		if i >= len(b) {
			break
		}
		switch c := b[i]; {
		case c == '"':
			return i + 1
		case c < ' ':
			return -1
		case c == '\\':
			i++
			if i >= len(b) {
				return -1
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(b) {
					return -1
				}
				for _, h := range b[i+1 : i+5] {
					if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
						return -1
					}
				}
				i += 4
			default:
				return -1
			}
		}
	}
	return -1
}

// literal returns the end of lit at b[i], -1 when b does not spell it.
func literal(b []byte, i int, lit string) int {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return -1
	}
	return i + len(lit)
}

// validNumber returns the end of the JSON number that starts at b[i], -1
// when it is not one: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?.
func validNumber(b []byte, i int) int {
	if b[i] == '-' {
		i++
	}
	switch {
	case i >= len(b):
		return -1
	case b[i] == '0':
		i++
	case '1' <= b[i] && b[i] <= '9':
		i = digits(b, i)
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return -1
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return -1
		}
		i = j
	}
	return i
}

// digits returns the index of the first byte at or after i that is not a
// decimal digit.
func digits(b []byte, i int) int {
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	return i
}
