package httpguard

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"unicode"
	"unicode/utf8"
)

// One reading of keys. The clients read a response's keys in two ways:
// encoding/json (go-openai, genai, langchaingo) matches a key to a field
// exactly, else without regard to case; openai-go's and anthropic-sdk-go's
// decoders (and the clients of other languages) match it exactly; all of
// them keep the last of two members that match one field. So a response
// whose protocol key is spelled twice, or only in another case, is read
// one way by one client and another way by the next, and no reading of the
// guard's can agree with every client. The wire code reads each protocol
// key of a response it looks up (field, optStr, at, setMember, the stream
// events' hand decoders, decodeResponse) by one rule: the key is found
// spelled exactly, once, or not at all; a member whose key matches it only
// without regard to case, beside it or alone, or the key given twice,
// makes the response unguardable. Keys inside a call's arguments are the
// tool's, not the protocol's, and are never read this way.
//
// Requests are read as providers read them: exactly (requestField,
// setRequestMember).

var (
	// errDuplicate reports a protocol key given twice in one object,
	// spelled alike or alike but for case.
	errDuplicate = errors.New("duplicate key")
	// errKeyCase reports a protocol key spelled only in another case.
	errKeyCase = errors.New("key differing only in case")
)

// The reasons (unguardableError.why) of the two key errors.
const (
	whyDuplicateKey = "a protocol key given twice"
	whyKeyCase      = "a key differing only in case from a protocol key"
)

// duplicateKey is the error of a protocol key given twice.
func duplicateKey(key string) error {
	return unguardable(whyDuplicateKey, fmt.Errorf("%w %q", errDuplicate, key))
}

// keyCase is the error of a protocol key spelled only in another case.
func keyCase(key string) error {
	return unguardable(whyKeyCase, fmt.Errorf("%w from %q", errKeyCase, key))
}

// keyMatch says how a member's key matches a key the wire code looks up.
type keyMatch uint8

const (
	keyOther  keyMatch = iota // another key
	keyExact                  // the key, spelled exactly
	keyFolded                 // the key without regard to case only
)

// matchKey compares the quoted key q with key. plain says that key is
// ASCII without a backslash or quote (the protocol keys are), which lets
// most keys be told apart by their length alone: each byte of a plain key
// is matched by one rune of q, spelled in q in one byte or more, and in
// exactly one only when it is ASCII and not escaped.
func matchKey(q []byte, key string, plain bool) (keyMatch, error) {
	s := q[1 : len(q)-1]
	if plain {
		switch {
		case len(s) < len(key):
			return keyOther, nil
		case len(s) == len(key):
			if string(s) == key {
				return keyExact, nil
			}
			for i := range s {
				if lowerASCII(s[i]) != lowerASCII(key[i]) {
					return keyOther, nil
				}
			}
			return keyFolded, nil
		case plainASCII(s):
			return keyOther, nil
		}
	}
	k, err := decodeKey(q)
	switch {
	case err != nil:
		return keyOther, err
	case k == key:
		return keyExact, nil
	case foldEqual(k, key):
		return keyFolded, nil
	}
	return keyOther, nil
}

// plainASCII reports whether s is ASCII without a backslash or quote: as
// the inside of a quoted key, its bytes are the key.
func plainASCII[T string | []byte](s T) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= utf8.RuneSelf || c == '\\' || c == '"' {
			return false
		}
	}
	return true
}

// foldEqual reports whether encoding/json, of any release, may read key a
// into a field named b: the two are equal rune by rune under simple case
// folding (strings.EqualFold, as Go 1.26's encoding/json folds: the Kelvin
// sign is a K, the long s an S), or under upper(lower(r)) (as earlier
// releases folded, which also makes İ and ı an I).
func foldEqual(a, b string) bool {
	for a != "" && b != "" {
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		if ra != rb && foldRune(ra) != foldRune(rb) &&
			unicode.ToUpper(unicode.ToLower(ra)) != unicode.ToUpper(unicode.ToLower(rb)) {
			return false
		}
		a, b = a[na:], b[nb:]
	}
	return a == b
}

// foldRune is the smallest rune of r's simple case folding orbit.
func foldRune(r rune) rune {
	for {
		r2 := unicode.SimpleFold(r)
		if r2 <= r {
			return r2
		}
		r = r2
	}
}

// lookup finds key in the object at sp by the rule above: the value of the
// one member spelled exactly, ok false when no member matches.
func lookup(b []byte, sp span, key string) (v span, ok bool, err error) {
	return doc{b: b}.lookup(sp, key)
}

func (d doc) lookup(sp span, key string) (v span, ok bool, err error) {
	b := d.b
	i, err := firstMember(b, sp)
	if err != nil || i < 0 {
		return span{}, false, err
	}
	plain := plainASCII(key)
	folded := false
	for {
		k, mv, next, err := d.scanMember(sp, i)
		if err != nil {
			return span{}, false, err
		}
		m, err := matchKey(raw(b, k), key, plain)
		if err != nil {
			return span{}, false, err
		}
		if m != keyOther {
			if ok || folded {
				return span{}, false, duplicateKey(key)
			}
			if m == keyFolded {
				folded = true
			} else {
				v, ok = mv, true
			}
		}
		if next < 0 {
			break
		}
		i = next
	}
	if folded {
		return span{}, false, keyCase(key)
	}
	return v, ok, nil
}

// found is what lookup returns for one key: fields' result.
type found struct {
	v      span
	ok     bool
	err    error
	folded bool // a member matched the key without regard to case only (fields' state)
}

// fields looks up each of keys, protocol keys (ASCII without a backslash
// or quote; any other is read by lookup), in the object at sp in one pass
// over its members: out[i] is
// what lookup(b, sp, keys[i]) returns, so that a reader of several members
// of one object reads its bytes once and still meets each key's error
// where it asks for that key. out must be as long as keys.
func (d doc) fields(sp span, keys []string, out []found) {
	b := d.b
	clear(out)
	for _, key := range keys {
		if !plainASCII(key) { // not a protocol key: one lookup each
			for j, key := range keys {
				out[j].v, out[j].ok, out[j].err = d.lookup(sp, key)
			}
			return
		}
	}
	i, err := firstMember(b, sp)
	if err != nil || i < 0 {
		for j := range keys {
			out[j].err = err
		}
		return
	}
	for {
		k, mv, next, err := d.scanMember(sp, i)
		// A member key without an escape or a non-ASCII byte (nearly
		// all) matches a plain key of its length alone: matchKey's
		// answer, asked once per member instead of once per key.
		var q []byte
		plain := false
		if err == nil {
			q = raw(b, k)
			plain = plainASCII(q[1 : len(q)-1])
		}
		for j, key := range keys {
			f := &out[j]
			if f.err != nil {
				continue // lookup would have stopped at its error
			}
			if err != nil {
				*f = found{err: err}
				continue
			}
			if plain && len(q)-2 != len(key) {
				continue // keyOther
			}
			m, err := matchKey(q, key, true)
			switch {
			case err != nil:
				*f = found{err: err}
			case m == keyOther:
			case f.ok || f.folded:
				*f = found{err: duplicateKey(key)}
			case m == keyFolded:
				f.folded = true
			default:
				f.v, f.ok = mv, true
			}
		}
		if err != nil || next < 0 {
			break
		}
		i = next
	}
	for j := range keys {
		if f := &out[j]; f.err == nil && f.folded {
			*f = found{err: keyCase(keys[j])}
		}
	}
}

// decodeResponse decodes the response JSON b into v, a pointer to a struct
// whose tags name the protocol keys it reads, as json.Unmarshal does, but
// reads those keys by the rule above: each of them, in every object the
// struct reads, spelled exactly and once or not at all (so that
// encoding/json's reading is every client's), else an unguardable error.
// Members no field names are not looked at.
func decodeResponse(b []byte, v any) error {
	sp, err := root(b)
	if err == nil {
		err = checkKeys(b, sp, reflect.TypeOf(v))
	}
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%w: %v", errJSON, err)
	}
	return nil
}

// checkKeys checks the keys of the value at sp that t reads: a struct's
// fields by their tags, a slice's elements, a pointer's target. A value of
// another shape is left to json.Unmarshal.
func checkKeys(b []byte, sp span, t reflect.Type) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t.Kind() == reflect.Struct && kind(b, sp) == '{':
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" || name == "-" || !f.IsExported() {
				continue
			}
			v, ok, err := lookup(b, sp, name)
			if err != nil {
				return err
			}
			if ok {
				if err := checkKeys(b, v, f.Type); err != nil {
					return err
				}
			}
		}
	case t.Kind() == reflect.Slice && t.Elem().Kind() != reflect.Uint8 && kind(b, sp) == '[':
		es, err := arrayElems(b, sp)
		if err != nil {
			return err
		}
		for _, e := range es {
			if err := checkKeys(b, e, t.Elem()); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkFields looks up keys in the object at sp (a response's) by the rule
// above, for a reader that tests them later by field: an unguardable
// error for the first key given twice or in another case.
func checkFields(b []byte, sp span, keys ...string) error {
	if kind(b, sp) != '{' {
		return nil
	}
	for _, k := range keys {
		if _, _, err := field(b, sp, k); err != nil {
			return err
		}
	}
	return nil
}
