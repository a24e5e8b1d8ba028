package httpguard

import (
	"fmt"
	"unicode/utf8"
)

// The span walker as it was before it was made fast (62e5283), kept as
// the oracle the new one is held to: every function here is its namesake
// without the "old" prefix, byte for byte but for the names it calls.

func oldSkipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

func oldValueEnd(b []byte, i int) (int, error) {
	if i >= len(b) {
		return 0, errJSON
	}
	switch b[i] {
	case '"':
		return oldStringEnd(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				end, err := oldStringEnd(b, i)
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

func oldStringEnd(b []byte, i int) (int, error) {
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

func oldRoot(b []byte) (span, error) {
	i := oldSkipSpace(b, 0)
	end, err := oldValueEnd(b, i)
	if err != nil {
		return span{}, err
	}
	if oldSkipSpace(b, end) != len(b) {
		return span{}, errJSON
	}
	return span{i, end}, nil
}

func oldParseBody(b []byte) (span, error) {
	if !validJSON(b) {
		return span{}, errJSON
	}
	sp, err := oldRoot(b)
	if err != nil {
		return span{}, err
	}
	if kind(b, sp) != '{' {
		return span{}, fmt.Errorf("%w: want an object", errJSON)
	}
	return sp, nil
}

func oldFirstMember(b []byte, sp span) (int, error) {
	if kind(b, sp) != '{' {
		return 0, fmt.Errorf("%w: want an object", errJSON)
	}
	i := oldSkipSpace(b, sp.start+1)
	if i < sp.end && b[i] == '}' {
		return -1, nil
	}
	return i, nil
}

func oldScanMember(b []byte, sp span, i int) (k, v span, next int, err error) {
	if i >= sp.end || b[i] != '"' {
		return span{}, span{}, 0, errJSON
	}
	kEnd, err := oldStringEnd(b, i)
	if err != nil {
		return span{}, span{}, 0, errJSON
	}
	c := oldSkipSpace(b, kEnd)
	if c >= sp.end || b[c] != ':' {
		return span{}, span{}, 0, errJSON
	}
	vStart := oldSkipSpace(b, c+1)
	vEnd, err := oldValueEnd(b, vStart)
	if err != nil {
		return span{}, span{}, 0, err
	}
	j := oldSkipSpace(b, vEnd)
	switch {
	case j >= sp.end:
		return span{}, span{}, 0, errJSON
	case b[j] == '}':
		next = -1
	case b[j] == ',':
		next = oldSkipSpace(b, j+1)
	default:
		return span{}, span{}, 0, errJSON
	}
	return span{i, kEnd}, span{vStart, vEnd}, next, nil
}

func oldObjectMembers(b []byte, sp span) ([]member, error) {
	i, err := oldFirstMember(b, sp)
	if err != nil || i < 0 {
		return nil, err
	}
	var out []member
	for {
		k, v, next, err := oldScanMember(b, sp, i)
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

func oldArrayElems(b []byte, sp span) ([]span, error) {
	if kind(b, sp) != '[' {
		return nil, fmt.Errorf("%w: want an array", errJSON)
	}
	var out []span
	i := oldSkipSpace(b, sp.start+1)
	if i < sp.end && b[i] == ']' {
		return nil, nil
	}
	for i < sp.end {
		end, err := oldValueEnd(b, i)
		if err != nil {
			return nil, err
		}
		out = append(out, span{i, end})
		i = oldSkipSpace(b, end)
		if i >= sp.end {
			return nil, errJSON
		}
		if b[i] == ']' {
			return out, nil
		}
		if b[i] != ',' {
			return nil, errJSON
		}
		i = oldSkipSpace(b, i+1)
	}
	return nil, errJSON
}

func oldLookup(b []byte, sp span, key string) (v span, ok bool, err error) {
	i, err := oldFirstMember(b, sp)
	if err != nil || i < 0 {
		return span{}, false, err
	}
	plain := plainASCII(key)
	folded := false
	for {
		k, mv, next, err := oldScanMember(b, sp, i)
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

func oldField(b []byte, sp span, key string) (v span, ok bool, err error) {
	return oldLookup(b, sp, key)
}

func oldAt(b []byte, sp span, path ...any) (v span, ok bool, err error) {
	v = sp
	for _, p := range path {
		switch p := p.(type) {
		case string:
			v, ok, err = oldField(b, v, p)
			if err != nil || !ok {
				return span{}, false, err
			}
		case int:
			es, err := oldArrayElems(b, v)
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

func oldStr(b []byte, sp span) (string, error) {
	if kind(b, sp) != '"' {
		return "", fmt.Errorf("%w: want a string", errJSON)
	}
	q := b[sp.start:sp.end]
	if s, ok := oldPlainString(q); ok {
		return s, nil
	}
	if s, ok := unquoteJSON(q); ok {
		return s, nil
	}
	return "", errJSON
}

func oldPlainString(q []byte) (string, bool) {
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

func oldOptStr(b []byte, sp span, key string) (string, error) {
	v, ok, err := oldField(b, sp, key)
	if err != nil || !ok || kind(b, v) == 'n' {
		return "", err
	}
	return oldStr(b, v)
}

func oldObjectArgs(b []byte, v span) ([]byte, error) {
	if kind(b, v) == '"' {
		s, err := oldStr(b, v)
		return []byte(s), err
	}
	return raw(b, v), nil
}
