package httpguard

import (
	"fmt"
	"strconv"
)

// Hand decoders of stream events: every event of a stream goes through
// one, and encoding/json's reflection costs several times the scan. Each
// decodes as encoding/json would into the parsed event's struct (null
// leaving a field unset, a value of another type an error), with keys read
// by the rule of keys.go: a key it reads is spelled exactly, once, or the
// event is unguardable (where encoding/json would read a key in another
// case, or the last of two).

// seen marks the fields of one object already read.
type seen uint16

// mark marks field, which the iterator's member matched: a key that
// matched only without regard to case, or a field read twice, is an
// unguardable error.
func (s *seen) mark(it *memberIter, field int) error {
	if it.folded {
		return keyCase(it.name)
	}
	if *s&(1<<field) != 0 {
		return duplicateKey(it.name)
	}
	*s |= 1 << field
	return nil
}

// decodeObjects decodes the JSON array at sp (null: nil) into a slice, one
// element per object, each member read by member, which marks the fields
// it sets in the seen it is given and returns (a key given twice in one
// object is refused); a null element stays the zero value. The iterator
// and the marks are passed by value so that neither escapes.
func decodeObjects[T any](b []byte, sp span, member func(b []byte, it memberIter, s seen, t *T) (seen, error)) ([]T, error) {
	if kind(b, sp) == 'n' {
		return nil, nil
	}
	es, err := arrayElems(b, sp)
	if err != nil {
		return nil, err
	}
	out := make([]T, len(es))
	for i, e := range es {
		if kind(b, e) == 'n' {
			continue
		}
		it, err := iterMembers(b, e)
		if err != nil {
			return nil, err
		}
		var s seen
		for it.next() {
			if s, err = member(b, it, s, &out[i]); err != nil {
				return nil, err
			}
		}
		if it.err != nil {
			return nil, it.err
		}
	}
	return out, nil
}

// decodeString decodes the string at sp into *dst; null leaves it as it
// is.
func decodeString(b []byte, sp span, dst *string) error {
	switch kind(b, sp) {
	case 'n':
		return nil
	case '"':
		s, err := unquote(raw(b, sp))
		if err != nil {
			return err
		}
		*dst = s
		return nil
	}
	return fmt.Errorf("%w: want a string", errJSON)
}

// decodeInt decodes the integer at sp into *dst; null leaves it as it is.
func decodeInt(b []byte, sp span, dst *int) error {
	if kind(b, sp) == 'n' {
		return nil
	}
	n, err := strconv.Atoi(string(raw(b, sp)))
	if err != nil {
		return fmt.Errorf("%w: want an integer", errJSON)
	}
	*dst = n
	return nil
}

// unquote decodes a JSON string as encoding/json does, without its
// reflection (plainString, else unquoteJSON: FuzzStr holds both to
// encoding/json).
func unquote(q []byte) (string, error) {
	if s, ok := plainString(q); ok {
		return s, nil
	}
	if s, ok := unquoteJSON(q); ok {
		return s, nil
	}
	return "", errJSON
}

// decodeObject checks that data is one JSON value and returns an iterator
// over its members; ok is false for null (nothing to decode).
func decodeObject(data []byte) (it memberIter, ok bool, err error) {
	if !validJSON(data) {
		return memberIter{}, false, errJSON
	}
	r, err := root(data)
	if err != nil {
		return memberIter{}, false, err
	}
	if kind(data, r) == 'n' {
		return memberIter{}, false, nil
	}
	it, err = iterMembers(data, r)
	return it, err == nil, err
}

// typeOf is the "type" member of the object at sp when it is a string, ""
// otherwise or when sp is not an object; "type" given twice or in another
// case is an unguardable error.
func typeOf(b []byte, sp span) (string, error) {
	if sp.end <= sp.start || kind(b, sp) != '{' {
		return "", nil
	}
	v, ok, err := field(b, sp, "type")
	if err != nil || !ok || kind(b, v) != '"' {
		return "", err
	}
	return unquote(raw(b, v))
}

// needsDecoding reports whether the inside of a JSON string has an escape,
// a control byte or a byte that is not ASCII (which encoding/json checks
// as UTF-8, replacing what is not): whether its text may differ from its
// bytes.
func needsDecoding(s []byte) bool {
	for _, c := range s {
		if c == '\\' || c < 0x20 || c >= 0x80 || c == '"' {
			return true
		}
	}
	return false
}
