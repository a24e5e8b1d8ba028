package httpguard

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/bits"
	"sort"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// The wire code edits JSON bodies by splicing: it finds the byte range of
// the value it changes and replaces those bytes only, so every other byte
// of a request or response (unknown fields, key order, number spellings,
// whitespace) reaches the other side as it was. Decoding into maps and
// encoding again would reorder keys and respell numbers.

// errJSON reports a body that is not the JSON the protocol sends.
var errJSON = errors.New("httpguard: malformed JSON")

// span is the byte range [start, end) of a JSON value in a document.
type span struct{ start, end int }

// member is one member of a JSON object: its key, decoded, and the spans
// of the key (with its quotes) and of the value.
type member struct {
	key  string
	k, v span
}

// edit replaces the bytes of at with text; a zero-width at inserts.
type edit struct {
	at   span
	text []byte
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// skipSpace returns the index of the first non-space byte at or after i.
func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// doc is a body that validJSON accepted, read by parseDoc, with the span
// of each of its objects and arrays noted by that check: its readers skip
// a nested value in one step, where valueEnd reads it again, byte by byte,
// at every level of a path (a Chat call's arguments, six levels down its
// answer, were read seven times). The methods of a doc without nests read
// the bytes; the functions of the same names are those methods.
type doc struct {
	b     []byte
	nests []nest // every object and array of b, in the order of their starts
}

// nest is the span of an object or array of a doc, in half the bytes of a
// span (parseDoc indexes bodies of up to math.MaxInt32 bytes).
type nest struct{ start, end int32 }

// valueEnd is valueEnd of d.b, an object or array found in d.nests.
func (d doc) valueEnd(i int) (int, error) {
	if len(d.nests) > 0 && i < len(d.b) && (d.b[i] == '{' || d.b[i] == '[') {
		// The first nest that does not start before i.
		lo, hi := 0, len(d.nests)
		for lo < hi {
			m := int(uint(lo+hi) >> 1)
			if int(d.nests[m].start) < i {
				lo = m + 1
			} else {
				hi = m
			}
		}
		if lo < len(d.nests) && int(d.nests[lo].start) == i {
			return int(d.nests[lo].end), nil
		}
	}
	return valueEnd(d.b, i)
}

// valueEnd returns the end of the JSON value that starts at b[i]. It
// expects well-formed JSON (callers check json.Valid once per body) and
// reports errJSON, never panics, on anything else.
func valueEnd(b []byte, i int) (int, error) {
	if i >= len(b) {
		return 0, errJSON
	}
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				end, err := stringEnd(b, i)
				if err != nil {
					return 0, err
				}
				i = end
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1, nil
				}
			}
			i++
		}
		return 0, errJSON
	}
	j := i
	for j < len(b) && !isSpace(b[j]) && b[j] != ',' && b[j] != ']' && b[j] != '}' && b[j] != ':' {
		j++
	}
	if j == i {
		return 0, errJSON
	}
	return j, nil
}

// stringEnd returns the end of the JSON string that starts at b[i]: the
// first quote after it that no backslash escapes (a backslash escapes the
// byte after it, whatever it is).
func stringEnd(b []byte, i int) (int, error) {
	for j := i + 1; ; j += 2 { // past a backslash and the byte it escapes
		j = quoteOrBackslash(b, j)
		if j >= len(b) {
			return 0, errJSON
		}
		if b[j] == '"' {
			return j + 1, nil
		}
	}
}

// quoteOrBackslash returns the index of the first quote or backslash at or
// after i, len(b) when there is none. It reads eight bytes at a time: a
// string's text is most of a body's bytes, and few of them are either.
func quoteOrBackslash(b []byte, i int) int {
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		if m := bytesEqual(x, '"') | bytesEqual(x, '\\'); m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	for ; i < len(b); i++ {
		if c := b[i]; c == '"' || c == '\\' {
			return i
		}
	}
	return len(b)
}

// Eight bytes at a time (SWAR): x holds b[i:i+8], b[i] in its low byte.
// Each of the functions below sets the high bit of the bytes of x it
// looks for, and reports the first of them exactly: a byte's bit may be
// set wrongly only above (after) one rightly set, by a borrow, so the
// lowest set bit is right and bits.TrailingZeros64(m)/8 is its index.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// bytesEqual marks the bytes of x equal to c.
func bytesEqual(x uint64, c byte) uint64 {
	v := x ^ (ones * uint64(c))
	return (v - ones) &^ v & highs
}

// bytesBelow marks the bytes of x less than c, for c at most 0x80.
func bytesBelow(x uint64, c byte) uint64 {
	return (x - ones*uint64(c)) &^ x & highs
}

// root returns the span of the document's single top-level value.
func root(b []byte) (span, error) {
	i := skipSpace(b, 0)
	end, err := valueEnd(b, i)
	if err != nil {
		return span{}, err
	}
	if skipSpace(b, end) != len(b) {
		return span{}, errJSON
	}
	return span{i, end}, nil
}

// kind is the first byte of the value at sp: '{', '[', '"', 't', 'f',
// 'n' or a number's first byte.
func kind(b []byte, sp span) byte {
	if sp.start >= sp.end {
		return 0
	}
	return b[sp.start]
}

// objectMembers lists the members of the object at sp, in order. A key
// that appears twice is an error: a guard must never check one value while
// a client reads another.
func objectMembers(b []byte, sp span) ([]member, error) {
	return doc{b: b}.objectMembers(sp)
}

func (d doc) objectMembers(sp span) ([]member, error) {
	b := d.b
	i, err := firstMember(b, sp)
	if err != nil || i < 0 {
		return nil, err
	}
	var out []member
	for {
		k, v, next, err := d.scanMember(sp, i)
		if err != nil {
			return nil, err
		}
		key, err := decodeKey(raw(b, k))
		if err != nil {
			return nil, err
		}
		for _, m := range out {
			if m.key == key {
				return nil, fmt.Errorf("%w: duplicate key %q", errJSON, key)
			}
		}
		out = append(out, member{key: key, k: k, v: v})
		if next < 0 {
			return out, nil
		}
		i = next
	}
}

// firstMember returns the index of the first member's key in the object
// at sp, -1 when the object is empty.
func firstMember(b []byte, sp span) (int, error) {
	if kind(b, sp) != '{' {
		return 0, fmt.Errorf("%w: want an object", errJSON)
	}
	i := skipSpace(b, sp.start+1)
	if i < sp.end && b[i] == '}' {
		return -1, nil
	}
	return i, nil
}

// scanMember reads the member whose key starts at b[i] in the object at
// sp: the spans of its key (with its quotes) and value, and the index of
// the next member's key, -1 after the last.
func scanMember(b []byte, sp span, i int) (k, v span, next int, err error) {
	return doc{b: b}.scanMember(sp, i)
}

func (d doc) scanMember(sp span, i int) (k, v span, next int, err error) {
	b := d.b
	if i >= sp.end || b[i] != '"' {
		return span{}, span{}, 0, errJSON
	}
	kEnd, err := stringEnd(b, i)
	if err != nil {
		return span{}, span{}, 0, errJSON
	}
	c := skipSpace(b, kEnd)
	if c >= sp.end || b[c] != ':' {
		return span{}, span{}, 0, errJSON
	}
	vStart := skipSpace(b, c+1)
	vEnd, err := d.valueEnd(vStart)
	if err != nil {
		return span{}, span{}, 0, err
	}
	j := skipSpace(b, vEnd)
	switch {
	case j >= sp.end:
		return span{}, span{}, 0, errJSON
	case b[j] == '}':
		next = -1
	case b[j] == ',':
		next = skipSpace(b, j+1)
	default:
		return span{}, span{}, 0, errJSON
	}
	return span{i, kEnd}, span{vStart, vEnd}, next, nil
}

// keyIs reports whether the quoted key q decodes to key, decoding only a
// key with escapes.
func keyIs(q []byte, key string) (bool, error) {
	if bytes.IndexByte(q, '\\') < 0 {
		return string(q[1:len(q)-1]) == key, nil
	}
	k, err := decodeKey(q)
	return k == key, err
}

// decodeKey decodes a quoted JSON key as encoding/json does, invalid
// UTF-8 replaced by U+FFFD (so "a\xf3" and "a\xba" are one key).
func decodeKey(q []byte) (string, error) {
	if bytes.IndexByte(q, '\\') < 0 && utf8.Valid(q) {
		return string(q[1 : len(q)-1]), nil
	}
	var s string
	if err := json.Unmarshal(q, &s); err != nil {
		return "", errJSON
	}
	return s, nil
}

// arrayElems lists the spans of the elements of the array at sp.
func arrayElems(b []byte, sp span) ([]span, error) { return doc{b: b}.arrayElems(sp) }

func (d doc) arrayElems(sp span) ([]span, error) {
	b := d.b
	if kind(b, sp) != '[' {
		return nil, fmt.Errorf("%w: want an array", errJSON)
	}
	var out []span
	i := skipSpace(b, sp.start+1)
	if i < sp.end && b[i] == ']' {
		return nil, nil
	}
	for i < sp.end {
		end, err := d.valueEnd(i)
		if err != nil {
			return nil, err
		}
		out = append(out, span{i, end})
		i = skipSpace(b, end)
		if i >= sp.end {
			return nil, errJSON
		}
		if b[i] == ']' {
			return out, nil
		}
		if b[i] != ',' {
			return nil, errJSON
		}
		i = skipSpace(b, i+1)
	}
	return nil, errJSON
}

// field returns the value of key in the object at sp of a response, read
// by the rule of keys.go: ok is false when no member matches key; a member
// that matches it only without regard to case, or two members that match
// it, make the response unguardable. It reads the object in place,
// allocating nothing.
func field(b []byte, sp span, key string) (v span, ok bool, err error) {
	return doc{b: b}.lookup(sp, key)
}

func (d doc) field(sp span, key string) (v span, ok bool, err error) { return d.lookup(sp, key) }

// requestField returns the value of key in the object at sp of a request,
// matched exactly, as providers read a request's keys; ok is false when
// the object has no such key, and the key twice is errJSON.
func requestField(b []byte, sp span, key string) (v span, ok bool, err error) {
	i, err := firstMember(b, sp)
	if err != nil || i < 0 {
		return span{}, false, err
	}
	for {
		k, mv, next, err := scanMember(b, sp, i)
		if err != nil {
			return span{}, false, err
		}
		is, err := keyIs(raw(b, k), key)
		if err != nil {
			return span{}, false, err
		}
		if is {
			if ok {
				return span{}, false, fmt.Errorf("%w: duplicate key %q", errJSON, key)
			}
			v, ok = mv, true
		}
		if next < 0 {
			return v, ok, nil
		}
		i = next
	}
}

// at follows path (string keys and int indexes) from the value at sp. A
// missing key or index is ok == false.
func at(b []byte, sp span, path ...any) (v span, ok bool, err error) {
	return doc{b: b}.at(sp, path...)
}

func (d doc) at(sp span, path ...any) (v span, ok bool, err error) {
	v = sp
	for _, p := range path {
		switch p := p.(type) {
		case string:
			v, ok, err = d.field(v, p)
			if err != nil || !ok {
				return span{}, false, err
			}
		case int:
			es, err := d.arrayElems(v)
			if err != nil {
				return span{}, false, err
			}
			if p < 0 || p >= len(es) {
				return span{}, false, nil
			}
			v = es[p]
		default:
			panic("httpguard: path element must be string or int")
		}
	}
	return v, true, nil
}

// str decodes the string at sp as encoding/json does, without its
// reflection: a string without an escape, a control character or invalid
// UTF-8 (nearly all of them) is its bytes; any other is unquoted by
// unquoteJSON, encoding/json's rules ported (FuzzStr holds the two to
// encoding/json).
func str(b []byte, sp span) (string, error) {
	if kind(b, sp) != '"' {
		return "", fmt.Errorf("%w: want a string", errJSON)
	}
	q := b[sp.start:sp.end]
	if s, ok := plainString(q); ok {
		return s, nil
	}
	if s, ok := unquoteJSON(q); ok {
		return s, nil
	}
	return "", errJSON
}

// unquoteJSON decodes the quoted JSON string q as json.Unmarshal decodes it
// into a string: ok is false where Unmarshal fails (an escape JSON does
// not have, a control character, a quote before the end); a \u escape of
// a lone surrogate, and invalid UTF-8, are read as U+FFFD.
func unquoteJSON(q []byte) (string, bool) {
	if len(q) < 2 || q[0] != '"' || q[len(q)-1] != '"' {
		return "", false
	}
	s := q[1 : len(q)-1]
	var out strings.Builder
	out.Grow(len(s))
	for r := 0; r < len(s); {
		switch c := s[r]; {
		case c == '\\':
			r++
			if r >= len(s) {
				return "", false
			}
			switch e := s[r]; e {
			case '"', '\\', '/':
				out.WriteByte(e)
				r++
			case 'b':
				out.WriteByte('\b')
				r++
			case 'f':
				out.WriteByte('\f')
				r++
			case 'n':
				out.WriteByte('\n')
				r++
			case 'r':
				out.WriteByte('\r')
				r++
			case 't':
				out.WriteByte('\t')
				r++
			case 'u':
				rr := hex4(s[r+1:])
				if rr < 0 {
					return "", false
				}
				r += 5
				if utf16.IsSurrogate(rr) {
					var rr1 rune = -1
					if len(s)-r >= 6 && s[r] == '\\' && s[r+1] == 'u' {
						rr1 = hex4(s[r+2:])
					}
					if dec := utf16.DecodeRune(rr, rr1); dec != utf8.RuneError {
						out.WriteRune(dec) // a valid pair
						r += 6
						break
					}
					rr = utf8.RuneError
				}
				out.WriteRune(rr)
			default:
				return "", false
			}
		case c == '"' || c < ' ':
			return "", false
		case c < utf8.RuneSelf:
			out.WriteByte(c)
			r++
		default:
			rr, size := utf8.DecodeRune(s[r:])
			out.WriteRune(rr) // RuneError for invalid UTF-8
			r += size
		}
	}
	return out.String(), true
}

// hex4 is the value of the four hex digits that start s, -1 when s does
// not start with four.
func hex4(s []byte) rune {
	if len(s) < 4 {
		return -1
	}
	var r rune
	for _, c := range s[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}

// plainString returns the text of the quoted JSON string q when it is
// the bytes between its quotes: q is at least two bytes, starts and ends
// with a quote, and between them holds no quote, backslash or control
// character and is valid UTF-8 (encoding/json replaces invalid UTF-8 by
// U+FFFD, and refuses a control character). ok is false otherwise.
func plainString(q []byte) (string, bool) {
	if len(q) < 2 || q[0] != '"' || q[len(q)-1] != '"' {
		return "", false
	}
	in := q[1 : len(q)-1]
	ascii := true
	for _, c := range in {
		if c < ' ' || c == '"' || c == '\\' {
			return "", false
		}
		if c >= utf8.RuneSelf {
			ascii = false
		}
	}
	if !ascii && !utf8.Valid(in) {
		return "", false
	}
	return string(in), true
}

// optStr is the string at key of the object at sp, "" when absent or null.
func optStr(b []byte, sp span, key string) (string, error) { return doc{b: b}.optStr(sp, key) }

func (d doc) optStr(sp span, key string) (string, error) {
	v, ok, err := d.field(sp, key)
	if err != nil || !ok || kind(d.b, v) == 'n' {
		return "", err
	}
	return str(d.b, v)
}

// foundStr is optStr of a member fields found: its string, "" when
// absent or null.
func (d doc) foundStr(f found) (string, error) {
	if f.err != nil || !f.ok || kind(d.b, f.v) == 'n' {
		return "", f.err
	}
	return str(d.b, f.v)
}

// raw returns the bytes of sp.
func raw(b []byte, sp span) []byte { return b[sp.start:sp.end] }

// apply returns b with edits applied. Edits must not overlap; they are
// applied in the order of their positions (two inserts at one position in
// the order given).
func apply(b []byte, edits ...edit) []byte {
	sort.SliceStable(edits, func(i, j int) bool { return edits[i].at.start < edits[j].at.start })
	n := len(b)
	for _, e := range edits {
		n += len(e.text) - (e.at.end - e.at.start)
	}
	out := make([]byte, 0, n)
	last := 0
	for _, e := range edits {
		out = append(out, b[last:e.at.start]...)
		out = append(out, e.text...)
		last = e.at.end
	}
	return append(out, b[last:]...)
}

// appendElems returns the edit that appends items (each a JSON value) to
// the array at sp.
func appendElems(b []byte, sp span, items ...[]byte) (edit, error) {
	es, err := arrayElems(b, sp)
	if err != nil {
		return edit{}, err
	}
	joined := bytes.Join(items, []byte(","))
	if len(es) == 0 {
		return edit{at: span{sp.start + 1, sp.start + 1}, text: joined}, nil
	}
	end := es[len(es)-1].end
	return edit{at: span{end, end}, text: append([]byte(","), joined...)}, nil
}

// setMember returns the edit that sets key of the object at sp of a
// response to value: the value replaced in place when the key exists (the
// member every client reads, found as field finds it), else a member
// appended.
func setMember(b []byte, sp span, key string, value []byte) (edit, error) {
	return setFound(b, sp, key, value, field)
}

// setRequestMember is setMember for a request: key matched exactly, as
// requestField matches it.
func setRequestMember(b []byte, sp span, key string, value []byte) (edit, error) {
	return setFound(b, sp, key, value, requestField)
}

func setFound(b []byte, sp span, key string, value []byte, find func([]byte, span, string) (span, bool, error)) (edit, error) {
	v, ok, err := find(b, sp, key)
	if err != nil {
		return edit{}, err
	}
	if ok {
		return edit{at: v, text: value}, nil
	}
	ms, err := objectMembers(b, sp)
	if err != nil {
		return edit{}, err
	}
	text := append(marshalString(key), ':')
	text = append(text, value...)
	if len(ms) == 0 {
		return edit{at: span{sp.start + 1, sp.start + 1}, text: text}, nil
	}
	end := ms[len(ms)-1].v.end
	return edit{at: span{end, end}, text: append([]byte(","), text...)}, nil
}

// dropMembers returns the object at sp without the members for which drop
// is true, other bytes unchanged.
func dropMembers(b []byte, sp span, drop func(m member) bool) ([]byte, error) {
	ms, err := objectMembers(b, sp)
	if err != nil {
		return nil, err
	}
	var out []byte
	out = append(out, '{')
	n := 0
	for _, m := range ms {
		if drop(m) {
			continue
		}
		if n > 0 {
			out = append(out, ',')
		}
		n++
		out = append(out, b[m.k.start:m.v.end]...)
	}
	return append(out, '}'), nil
}

// marshalString encodes s as a JSON string without HTML escaping, as the
// providers write them.
func marshalString(s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// compact returns b without insignificant space, or b when it is not JSON.
func compact(b []byte) []byte {
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return b
	}
	return buf.Bytes()
}

// memberIter walks the members of an object in place, allocating nothing:
// for a parser that reads several members of one object in one pass.
//
//	it, err := iterMembers(b, sp)
//	for it.next() {
//		switch {
//		case it.is("id"): … raw(b, it.v) …
//		}
//	}
//	if it.err != nil { … }
type memberIter struct {
	b    []byte
	sp   span
	at   int // the next member's key; -1 after the last
	k, v span
	err  error
	// name is the name the member's key matched last (is), and folded
	// says that it matched only without regard to case.
	name   string
	folded bool
}

// iterMembers returns an iterator over the object at sp.
func iterMembers(b []byte, sp span) (memberIter, error) {
	i, err := firstMember(b, sp)
	return memberIter{b: b, sp: sp, at: i}, err
}

// open is iterMembers into it, which is zero: an iterator on the stack
// of its caller, where one returned by value was also a copy in the
// caller's frame.
func (it *memberIter) open(b []byte, sp span) error {
	i, err := firstMember(b, sp)
	it.b, it.sp, it.at = b, sp, i
	return err
}

// next moves to the next member; false after the last or at an error
// (it.err).
func (it *memberIter) next() bool {
	if it.at < 0 || it.err != nil {
		return false
	}
	it.k, it.v, it.at, it.err = scanMember(it.b, it.sp, it.at)
	return it.err == nil
}

// is reports whether the member's key is name (a protocol key: ASCII,
// without a backslash or quote), as encoding/json matches a key to a
// struct field: exactly, else without regard to case (folded, then, and
// name noted; see seen.mark).
func (it *memberIter) is(name string) bool {
	m, _ := matchKey(raw(it.b, it.k), name, true)
	if m == keyOther {
		return false
	}
	it.name, it.folded = name, m == keyFolded
	return true
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// nullToNil returns nil for an absent or null raw value.
func nullToNil(m json.RawMessage) json.RawMessage {
	if len(m) == 0 || string(m) == "null" {
		return nil
	}
	return m
}

// dropNulls returns the object at sp without its null members: a response
// marks absent fields with null where a request leaves them out.
func dropNulls(b []byte, sp span) ([]byte, error) {
	return dropMembers(b, sp, func(m member) bool { return kind(b, m.v) == 'n' })
}

// objectArgs is a call's arguments where the protocol carries a JSON
// object: the value's bytes, or the text of a string value (a stream's
// invalid JSON, assembled).
func objectArgs(b []byte, v span) ([]byte, error) {
	if kind(b, v) == '"' {
		s, err := str(b, v)
		return []byte(s), err
	}
	return raw(b, v), nil
}

// setAt sets key of the object at path in b to value.
func setAt(b []byte, path []any, key string, value []byte) ([]byte, error) {
	r, err := root(b)
	if err != nil {
		return nil, err
	}
	o, ok, err := at(b, r, path...)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: no object at %v", errJSON, path)
	}
	e, err := setMember(b, o, key, value)
	if err != nil {
		return nil, err
	}
	return apply(b, e), nil
}

// joinRaw joins JSON values with commas: the inside of an array of them.
func joinRaw(items [][]byte) []byte {
	var out []byte
	for i, it := range items {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, it...)
	}
	return out
}

// appendToArray returns b with items appended to the array at arr.
func appendToArray(b []byte, arr span, items ...[]byte) ([]byte, error) {
	e, err := appendElems(b, arr, items...)
	if err != nil {
		return nil, err
	}
	return apply(b, e), nil
}
