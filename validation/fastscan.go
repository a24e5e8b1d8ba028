package validation

import (
	"bytes"
	"encoding/json"
	"math/big"
	"sync"
	"unicode/utf8"
)

// verdict is the fast path's answer for one value against one subschema.
type verdict uint8

const (
	pass   verdict = iota // the reference path accepts the value
	fail                  // the reference path refuses the value
	defer_                // the fast path cannot tell: ask the reference path
)

// fastScanner is the state of one fast-path pass over one call's bytes.
type fastScanner struct {
	data   []byte
	pos    int
	depth  int
	values int
	limit  int      // most values accepted
	keys   [][]byte // keys of the open objects, decoded
}

// fastValidate reports whether the reference path accepts data, a JSON
// value, as arguments for root (pass), refuses it (fail), or whether the
// fast path cannot tell (defer_). limit is the most values accepted.
func fastValidate(root *fastNode, data []byte, limit int) verdict {
	s := scanners.Get().(*fastScanner)
	*s = fastScanner{data: data, limit: limit, keys: s.keys[:0]}
	defer func() {
		if cap(s.keys) > 1024 {
			return // deep arguments: keep no large stack
		}
		clear(s.keys[:cap(s.keys)]) // drop references to data
		s.data = nil
		scanners.Put(s)
	}()
	v := s.value(root)
	if v != pass {
		return v
	}
	s.ws()
	if s.pos != len(s.data) {
		return defer_ // data after the value
	}
	return pass
}

// scanners keeps fastScanners (their key stacks) between calls, so that a
// valid call allocates nothing.
var scanners = sync.Pool{New: func() any { return &fastScanner{keys: make([][]byte, 0, 32)} }}

func (s *fastScanner) ws() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// value validates the value at s.pos against n (nil: any value) and moves
// past it. A pass always leaves s.pos after the value.
func (s *fastScanner) value(n *fastNode) verdict {
	s.ws()
	if n == nil || len(n.inPlace) == 0 && len(n.anyOf) == 0 && len(n.oneOf) == 0 {
		return s.own(n)
	}
	start, depth, keys := s.pos, s.depth, len(s.keys)
	v := s.own(n)
	if v != pass {
		return v
	}
	end := s.pos
	// rewind puts the scanner back at the value, as a failed alternative
	// may have left it anywhere inside.
	rewind := func() { s.pos, s.depth, s.keys = start, depth, s.keys[:keys] }
	for _, sub := range n.inPlace {
		rewind()
		if v := s.value(sub); v != pass {
			return v
		}
	}
	if len(n.anyOf) > 0 {
		result := fail
		for _, sub := range n.anyOf {
			rewind()
			switch s.value(sub) {
			case pass:
				result = pass
			case defer_:
				return defer_
			}
			if result == pass {
				break
			}
		}
		if result != pass {
			return result
		}
	}
	if len(n.oneOf) > 0 {
		matched := 0
		for _, sub := range n.oneOf {
			rewind()
			switch s.value(sub) {
			case pass:
				matched++
			case defer_:
				return defer_
			}
		}
		if matched != 1 {
			return fail
		}
	}
	rewind() // the last alternative may have failed half-way
	s.pos = end
	return pass
}

// own validates the value at s.pos against n's own keywords (not its
// in-place subschemas).
func (s *fastScanner) own(n *fastNode) verdict {
	if s.pos >= len(s.data) {
		return defer_
	}
	if s.values++; s.values > s.limit {
		return defer_
	}
	if n != nil && n.opaque {
		return defer_
	}
	if n != nil && n.never {
		return fail
	}
	switch c := s.data[s.pos]; {
	case c == '{':
		return s.object(n)
	case c == '[':
		return s.array(n)
	case c == '"':
		return s.str(n)
	case c == '-' || c >= '0' && c <= '9':
		return s.number(n)
	case c == 't':
		return s.literal(n, "true", typeBoolean)
	case c == 'f':
		return s.literal(n, "false", typeBoolean)
	case c == 'n':
		return s.literal(n, "null", typeNull)
	}
	return defer_
}

// typeFails reports whether n's "type" refuses a value of kind bit.
func (n *fastNode) typeFails(bit uint8) bool {
	return n.types != 0 && n.types&bit == 0
}

// containerEnum is the verdict of "enum" and "const" for an array or an
// object: refused when no listed value is an array or an object, else the
// fast path does not compare.
func (n *fastNode) containerEnum() verdict {
	for _, list := range [][]fastValue{n.constant, n.enum} {
		if len(list) == 0 {
			continue
		}
		for _, e := range list {
			if e.deep {
				return defer_
			}
		}
		return fail
	}
	return pass
}

func (s *fastScanner) object(n *fastNode) verdict {
	if s.depth >= MaxDepth-1 {
		return defer_
	}
	if n != nil {
		if n.typeFails(typeObject) {
			return fail
		}
		if v := n.containerEnum(); v != pass {
			return v
		}
		if n.format != nil {
			return defer_
		}
	}
	s.depth++
	s.pos++ // '{'
	keysFrom := len(s.keys)
	var seen uint64 // required properties present, by index
	count := 0
	const linearKeys = 16       // compare linearly up to this many keys
	var set map[string]struct{} // the keys of a wider object
	s.ws()
	if s.pos < len(s.data) && s.data[s.pos] == '}' {
		s.pos++
	} else {
		for {
			s.ws()
			if s.pos >= len(s.data) || s.data[s.pos] != '"' {
				return defer_
			}
			key, ok := s.key()
			if !ok {
				return defer_
			}
			// A duplicate key: the reference path refuses it.
			if set != nil {
				if _, dup := set[string(key)]; dup {
					return defer_
				}
				set[string(key)] = struct{}{}
			} else {
				for _, prev := range s.keys[keysFrom:] {
					if bytes.Equal(prev, key) {
						return defer_
					}
				}
				if s.keys = append(s.keys, key); count == linearKeys {
					set = make(map[string]struct{}, 4*linearKeys)
					for _, k := range s.keys[keysFrom:] {
						set[string(k)] = struct{}{}
					}
				}
			}
			count++
			s.ws()
			if s.pos >= len(s.data) || s.data[s.pos] != ':' {
				return defer_
			}
			s.pos++
			if v := s.member(n, key, &seen); v != pass {
				return v
			}
			s.ws()
			if s.pos >= len(s.data) {
				return defer_
			}
			if s.data[s.pos] == ',' {
				s.pos++
				continue
			}
			if s.data[s.pos] == '}' {
				s.pos++
				break
			}
			return defer_
		}
	}
	s.keys = s.keys[:keysFrom]
	s.depth--
	if n == nil {
		return pass
	}
	if n.minProps >= 0 && count < n.minProps || n.maxProps >= 0 && count > n.maxProps {
		return fail
	}
	if len(n.required) > 0 {
		if len(n.required) > 64 {
			return defer_
		}
		if seen != 1<<len(n.required)-1 {
			return fail
		}
	}
	return pass
}

// member validates one member's value, at s.pos, against the subschemas n
// applies to key, and records key among n's required properties.
func (s *fastScanner) member(n *fastNode, key []byte, seen *uint64) verdict {
	if n == nil {
		return s.value(nil)
	}
	for i, r := range n.required {
		if i < 64 && r == string(key) {
			*seen |= 1 << i
		}
	}
	start := s.pos
	matched := false
	if p, ok := n.props[string(key)]; ok {
		matched = true
		if v := s.value(p); v != pass {
			return v
		}
	}
	if len(n.patterns) > 0 {
		for _, p := range n.patterns {
			if !p.re.Match(key) {
				continue
			}
			if matched {
				s.pos = start
			}
			matched = true
			if v := s.value(p.node); v != pass {
				return v
			}
		}
	}
	if matched {
		return pass
	}
	if n.addlNever {
		return fail
	}
	return s.value(n.addl)
}

func (s *fastScanner) array(n *fastNode) verdict {
	if s.depth >= MaxDepth-1 {
		return defer_
	}
	var items *fastNode
	if n != nil {
		if n.typeFails(typeArray) {
			return fail
		}
		if v := n.containerEnum(); v != pass {
			return v
		}
		if n.format != nil {
			return defer_
		}
		items = n.items
	}
	s.depth++
	s.pos++ // '['
	count := 0
	s.ws()
	if s.pos < len(s.data) && s.data[s.pos] == ']' {
		s.pos++
	} else {
		for {
			if v := s.value(items); v != pass {
				return v
			}
			count++
			s.ws()
			if s.pos >= len(s.data) {
				return defer_
			}
			if s.data[s.pos] == ',' {
				s.pos++
				continue
			}
			if s.data[s.pos] == ']' {
				s.pos++
				break
			}
			return defer_
		}
	}
	s.depth--
	if n != nil && (n.minItems >= 0 && count < n.minItems || n.maxItems >= 0 && count > n.maxItems) {
		return fail
	}
	return pass
}

// key scans the object key at s.pos and returns it decoded.
func (s *fastScanner) key() ([]byte, bool) {
	raw, escaped, ok := s.stringToken()
	if !ok {
		return nil, false
	}
	if !escaped {
		return raw[1 : len(raw)-1], true
	}
	var k string
	if json.Unmarshal(raw, &k) != nil {
		return nil, false
	}
	return []byte(k), true
}

// stringToken scans the string at s.pos, quotes included, checking it as
// encoding/json does. escaped reports backslashes; a string whose bytes are
// not valid UTF-8 (which encoding/json would alter) is not ok.
func (s *fastScanner) stringToken() (raw []byte, escaped, ok bool) {
	start := s.pos
	i := s.pos + 1
	high := false
	for {
		if i >= len(s.data) {
			return nil, false, false
		}
		c := s.data[i]
		switch {
		case c == '"':
			raw = s.data[start : i+1]
			s.pos = i + 1
			if high && !utf8.Valid(raw) {
				return nil, false, false
			}
			return raw, escaped, true
		case c == '\\':
			escaped = true
			if i+1 >= len(s.data) {
				return nil, false, false
			}
			switch s.data[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(s.data) {
					return nil, false, false
				}
				for _, h := range s.data[i+2 : i+6] {
					if !isHex(h) {
						return nil, false, false
					}
				}
				i += 6
			default:
				return nil, false, false
			}
		case c < 0x20:
			return nil, false, false
		default:
			if c >= 0x80 {
				high = true
			}
			i++
		}
	}
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func (s *fastScanner) str(n *fastNode) verdict {
	raw, escaped, ok := s.stringToken()
	if !ok {
		return defer_
	}
	if n == nil {
		return pass
	}
	if n.typeFails(typeString) {
		return fail
	}
	if len(n.constant) == 0 && len(n.enum) == 0 && n.format == nil && n.minLen < 0 && n.maxLen < 0 && n.pattern == nil {
		return pass
	}
	content := raw[1 : len(raw)-1]
	if escaped {
		var str string
		if json.Unmarshal(raw, &str) != nil {
			return defer_
		}
		content = []byte(str)
	}
	for _, list := range [][]fastValue{n.constant, n.enum} {
		if len(list) == 0 {
			continue
		}
		found := false
		for _, e := range list {
			if e.kind == typeString && e.str == string(content) {
				found = true
				break
			}
		}
		if !found {
			return fail
		}
	}
	if n.minLen >= 0 || n.maxLen >= 0 {
		length := utf8.RuneCount(content)
		if n.minLen >= 0 && length < n.minLen || n.maxLen >= 0 && length > n.maxLen {
			return fail
		}
	}
	if n.pattern != nil && !n.pattern.Match(content) {
		return fail
	}
	if n.format != nil && !n.format(string(content)) {
		return fail
	}
	return pass
}

func (s *fastScanner) literal(n *fastNode, word string, kind uint8) verdict {
	if !bytes.HasPrefix(s.data[s.pos:], []byte(word)) {
		return defer_
	}
	s.pos += len(word)
	if n == nil {
		return pass
	}
	if n.typeFails(kind) {
		return fail
	}
	if n.format != nil {
		return defer_
	}
	for _, list := range [][]fastValue{n.constant, n.enum} {
		if len(list) == 0 {
			continue
		}
		found := false
		for _, e := range list {
			if e.kind == kind && (kind == typeNull || e.b == (word == "true")) {
				found = true
				break
			}
		}
		if !found {
			return fail
		}
	}
	return pass
}

// number scans a number by JSON's grammar and validates it.
func (s *fastScanner) number(n *fastNode) verdict {
	start := s.pos
	i := s.pos
	d := s.data
	if d[i] == '-' {
		i++
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case i < len(d) && d[i] >= '1' && d[i] <= '9':
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	default:
		return defer_
	}
	plain := true // an integer literal: no fraction, no exponent
	if i < len(d) && d[i] == '.' {
		plain = false
		i++
		if i >= len(d) || d[i] < '0' || d[i] > '9' {
			return defer_
		}
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		plain = false
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if i >= len(d) || d[i] < '0' || d[i] > '9' {
			return defer_
		}
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	}
	lit := d[start:i]
	s.pos = i
	if !numberInRange(lit) {
		return defer_ // the reference path refuses it with its own message
	}
	if n == nil {
		return pass
	}
	if n.format != nil {
		return defer_
	}
	var iv int64
	isInt64 := false
	if plain && len(lit) <= 18 {
		iv, isInt64 = parseInt(lit), true
	}
	var rat *big.Rat // exact value, computed when needed
	exact := func() *big.Rat {
		if rat == nil {
			rat, _ = new(big.Rat).SetString(string(lit))
		}
		return rat
	}
	if n.types != 0 && n.types&typeNumber == 0 {
		if n.types&typeInteger == 0 {
			return fail
		}
		if !plain && !exact().IsInt() {
			return fail
		}
	}
	for _, list := range [][]fastValue{n.constant, n.enum} {
		if len(list) == 0 {
			continue
		}
		found := false
		for _, e := range list {
			if e.kind != typeNumber {
				continue
			}
			if e.plain == string(lit) || e.num.Cmp(exact()) == 0 {
				found = true
				break
			}
		}
		if !found {
			return fail
		}
	}
	cmp := func(b *fastNumber) int {
		if isInt64 && b.isInt {
			switch {
			case iv < b.i:
				return -1
			case iv > b.i:
				return 1
			}
			return 0
		}
		return exact().Cmp(b.rat)
	}
	if n.minimum != nil && cmp(n.minimum) < 0 ||
		n.exclMinimum != nil && cmp(n.exclMinimum) <= 0 ||
		n.maximum != nil && cmp(n.maximum) > 0 ||
		n.exclMaximum != nil && cmp(n.exclMaximum) >= 0 {
		return fail
	}
	if m := n.multipleOf; m != nil {
		if m.rat.Sign() <= 0 {
			return defer_
		}
		if isInt64 && m.isInt && m.i > 0 {
			if iv%m.i != 0 {
				return fail
			}
		} else if !new(big.Rat).Quo(exact(), m.rat).IsInt() {
			return fail
		}
	}
	return pass
}

// parseInt parses an integer literal of at most 18 digits and a sign.
func parseInt(lit []byte) int64 {
	neg := lit[0] == '-'
	if neg {
		lit = lit[1:]
	}
	var v int64
	for _, c := range lit {
		v = v*10 + int64(c-'0')
	}
	if neg {
		return -v
	}
	return v
}
