package httpguard

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
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

// stringEnd returns the end of the JSON string that starts at b[i].
func stringEnd(b []byte, i int) (int, error) {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1, nil
		}
	}
	return 0, errJSON
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
	i, err := firstMember(b, sp)
	if err != nil || i < 0 {
		return nil, err
	}
	var out []member
	for {
		k, v, next, err := scanMember(b, sp, i)
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
	vEnd, err := valueEnd(b, vStart)
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
func arrayElems(b []byte, sp span) ([]span, error) {
	if kind(b, sp) != '[' {
		return nil, fmt.Errorf("%w: want an array", errJSON)
	}
	var out []span
	i := skipSpace(b, sp.start+1)
	if i < sp.end && b[i] == ']' {
		return nil, nil
	}
	for i < sp.end {
		end, err := valueEnd(b, i)
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
	return lookup(b, sp, key)
}

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
	v = sp
	for _, p := range path {
		switch p := p.(type) {
		case string:
			v, ok, err = field(b, v, p)
			if err != nil || !ok {
				return span{}, false, err
			}
		case int:
			es, err := arrayElems(b, v)
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

// str decodes the string at sp (unquote: without reflection when it has
// no escape).
func str(b []byte, sp span) (string, error) {
	if kind(b, sp) != '"' {
		return "", fmt.Errorf("%w: want a string", errJSON)
	}
	return unquote(b[sp.start:sp.end])
}

// optStr is the string at key of the object at sp, "" when absent or null.
func optStr(b []byte, sp span, key string) (string, error) {
	v, ok, err := field(b, sp, key)
	if err != nil || !ok || kind(b, v) == 'n' {
		return "", err
	}
	return str(b, v)
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
