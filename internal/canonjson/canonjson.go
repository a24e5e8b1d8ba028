// Package canonjson writes JSON text in a canonical form, so that data
// hashed or signed before it travels as JSON — and is decoded and encoded
// again on the way — hashes the same when it comes back.
//
// [RFC8785] is the JSON Canonicalization Scheme of RFC 8785: no blanks,
// object members sorted by the UTF-16 code units of their names, strings
// with the fewest escapes, numbers as IEEE 754 doubles written as
// ECMAScript writes them. It is what survives any JSON round trip that
// reads numbers as doubles (Go's any, JavaScript): 0.0, 0.50, 1e6 and
// 9007199254740993 come back as 0, 0.5, 1000000 and 9007199254740992, and
// have the canonical form of those.
//
// [Exact] is the same form with every number written as it is in the
// input, digit for digit: for data whose numbers travel as text (a
// json.RawMessage keeps them) and must not be rounded, such as the
// arguments a tool will run with.
package canonjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// MaxDepth is how deeply arrays and objects may nest (encoding/json's own
// limit).
const MaxDepth = 10000

// RFC8785 returns the canonical form of the JSON text data as RFC 8785
// defines it. RFC 8785 takes I-JSON only; to be total on the JSON toolguard
// accepts, a number beyond the range of a double is written as [Exact]
// writes it, and a string that is not valid UTF-8 (or holds an escaped lone
// surrogate) is read as encoding/json reads it, with U+FFFD in place of each
// bad sequence. Data that is not one JSON value, nests deeper than
// [MaxDepth], or repeats a name in an object is an error.
func RFC8785(data []byte) ([]byte, error) { return canonical(data, doubles) }

// Exact is [RFC8785] with every number written exactly as in data: two
// texts have the same Exact form only if their numbers are written alike,
// so 1.0 and 1, or 9007199254740993 and 9007199254740992, differ.
func Exact(data []byte) ([]byte, error) { return canonical(data, asWritten) }

type numbers int

const (
	doubles numbers = iota
	asWritten
)

// member is one name and value of an object.
type member struct {
	name  string
	units []uint16 // name in UTF-16, the sort key
	value any
}

// object is a decoded JSON object, its members in sorted order once
// parsed; arrays are []any, strings string, numbers json.Number, and
// literals bool or nil.
type object []member

func canonical(data []byte, n numbers) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := parse(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("canonjson: data after the JSON value")
	}
	var out bytes.Buffer
	out.Grow(len(data))
	write(&out, v, n)
	return out.Bytes(), nil
}

// parse reads one value from dec.
func parse(dec *json.Decoder, depth int) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("canonjson: %w", err)
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return tok, nil
	}
	if depth >= MaxDepth {
		return nil, fmt.Errorf("canonjson: nested deeper than %d", MaxDepth)
	}
	switch d {
	case '[':
		arr := []any{}
		for dec.More() {
			v, err := parse(dec, depth+1)
			if err != nil {
				return nil, err
			}
			arr = append(arr, v)
		}
		_, err := dec.Token() // ]
		if err != nil {
			return nil, fmt.Errorf("canonjson: %w", err)
		}
		return arr, nil
	case '{':
		obj := object{}
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				return nil, fmt.Errorf("canonjson: %w", err)
			}
			name, _ := tok.(string) // encoding/json yields a string here
			v, err := parse(dec, depth+1)
			if err != nil {
				return nil, err
			}
			obj = append(obj, member{name: name, units: utf16.Encode([]rune(name)), value: v})
		}
		if _, err := dec.Token(); err != nil { // }
			return nil, fmt.Errorf("canonjson: %w", err)
		}
		slices.SortStableFunc(obj, func(a, b member) int { return slices.Compare(a.units, b.units) })
		for i := 1; i < len(obj); i++ {
			if obj[i].name == obj[i-1].name {
				return nil, fmt.Errorf("canonjson: the name %s appears more than once in an object", strconv.QuoteToASCII(preview(obj[i].name)))
			}
		}
		return obj, nil
	}
	return nil, fmt.Errorf("canonjson: unexpected %v", d)
}

func write(out *bytes.Buffer, v any, n numbers) {
	switch v := v.(type) {
	case nil:
		out.WriteString("null")
	case bool:
		out.WriteString(strconv.FormatBool(v))
	case string:
		writeString(out, v)
	case json.Number:
		out.WriteString(number(string(v), n))
	case []any:
		out.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				out.WriteByte(',')
			}
			write(out, e, n)
		}
		out.WriteByte(']')
	case object:
		out.WriteByte('{')
		for i, m := range v {
			if i > 0 {
				out.WriteByte(',')
			}
			writeString(out, m.name)
			out.WriteByte(':')
			write(out, m.value, n)
		}
		out.WriteByte('}')
	}
}

// writeString writes s as RFC 8785 §3.2.2.2 says: the two-character escapes
// for ", \, backspace, form feed, line feed, carriage return and tab,
// \u00xx (lowercase) for the other control characters, everything else as
// is.
func writeString(out *bytes.Buffer, s string) {
	const hex = "0123456789abcdef"
	out.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			out.WriteString(`\"`)
		case '\\':
			out.WriteString(`\\`)
		case '\b':
			out.WriteString(`\b`)
		case '\f':
			out.WriteString(`\f`)
		case '\n':
			out.WriteString(`\n`)
		case '\r':
			out.WriteString(`\r`)
		case '\t':
			out.WriteString(`\t`)
		default:
			if r < 0x20 {
				out.WriteString(`\u00`)
				out.WriteByte(hex[r>>4])
				out.WriteByte(hex[r&0xf])
			} else {
				out.WriteRune(r) // a bad sequence is already U+FFFD
			}
		}
	}
	out.WriteByte('"')
}

// number returns the canonical text of the JSON number lit.
func number(lit string, n numbers) string {
	if n == asWritten {
		return lit
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil { // beyond a double's range: I-JSON has no such number
		return lit
	}
	return es6(f)
}

// es6 writes f as ECMAScript's Number::toString does (RFC 8785 §3.2.2.3):
// the shortest digits that read back as f, in plain notation for decimal
// exponents from -6 to 20, else in exponential notation.
func es6(f float64) string {
	if f == 0 {
		return "0" // -0 too
	}
	s := strconv.FormatFloat(f, 'e', -1, 64) // [-]d[.ddd]e±xx
	var b strings.Builder
	if s[0] == '-' {
		b.WriteByte('-')
		s = s[1:]
	}
	mant, e, _ := strings.Cut(s, "e")
	exp, _ := strconv.Atoi(e)
	digits := strings.Replace(mant, ".", "", 1)
	k, point := len(digits), exp+1 // f = 0.digits × 10^point
	switch {
	case k <= point && point <= 21:
		b.WriteString(digits)
		b.WriteString(strings.Repeat("0", point-k))
	case 0 < point && point <= 21:
		b.WriteString(digits[:point])
		b.WriteByte('.')
		b.WriteString(digits[point:])
	case -6 < point && point <= 0:
		b.WriteString("0.")
		b.WriteString(strings.Repeat("0", -point))
		b.WriteString(digits)
	default:
		b.WriteByte(digits[0])
		if k > 1 {
			b.WriteByte('.')
			b.WriteString(digits[1:])
		}
		b.WriteByte('e')
		if point-1 >= 0 {
			b.WriteByte('+')
		}
		b.WriteString(strconv.Itoa(point - 1))
	}
	return b.String()
}

// preview cuts a name short for an error message.
func preview(s string) string {
	const max = 64
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
