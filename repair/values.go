package repair

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/toolguard/toolguard/validation"
)

// repairValues turns strings holding a number or a boolean into that number
// or boolean, in place, where the schema reports a type violation at the
// string and the change removes violations without adding any. It returns
// the repairs made.
func (r *repairer) repairValues(v map[string]any, s *validation.Schema) []Repair {
	if !r.enabled(NumberString) && !r.enabled(BoolString) {
		return nil
	}
	verr := s.Validate(v)
	ve, ok := verr.(*validation.Error)
	if !ok || ve.Omitted > 0 {
		return nil // valid, or violations that cannot be compared
	}
	var reps []Repair
	for _, viol := range slices.Clone(ve.Violations) {
		if viol.Keyword != "type" || viol.Path == "" {
			continue
		}
		parent, key, found := locate(v, viol.Path)
		if !found {
			continue
		}
		str, isString := get(parent, key).(string)
		if !isString {
			continue
		}
		var repl any
		var kind Kind
		switch {
		case r.enabled(NumberString) && isJSONNumber(str):
			repl, kind = json.Number(str), NumberString
		case r.enabled(BoolString) && (str == "true" || str == "false"):
			repl, kind = str == "true", BoolString
		default:
			continue
		}
		set(parent, key, repl)
		if after := s.Validate(v); validation.Improves(after, verr) {
			reps = append(reps, Repair{Kind: kind, Path: viol.Path})
			if verr = after; verr == nil {
				break
			}
			continue
		}
		set(parent, key, str)
	}
	return reps
}

// isJSONNumber reports whether s is exactly a number in JSON's grammar: no
// spaces, no "+", no leading zeros, no hex, no NaN.
func isJSONNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	digits := func() bool {
		start := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i > start
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		digits()
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if !digits() {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if !digits() {
			return false
		}
	}
	return i == len(s)
}

// locate finds the container holding the value at ptr (a non-root JSON
// Pointer) and the value's key or index in it.
func locate(v any, ptr string) (parent any, key string, ok bool) {
	toks := strings.Split(strings.TrimPrefix(ptr, "/"), "/")
	for i, t := range toks {
		toks[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	cur := v
	for _, t := range toks[:len(toks)-1] {
		cur = get(cur, t)
		if cur == nil {
			return nil, "", false
		}
	}
	last := toks[len(toks)-1]
	switch c := cur.(type) {
	case map[string]any:
		_, ok = c[last]
	case []any:
		i, err := strconv.Atoi(last)
		ok = err == nil && i >= 0 && i < len(c)
	}
	return cur, last, ok
}

func get(container any, key string) any {
	switch c := container.(type) {
	case map[string]any:
		return c[key]
	case []any:
		if i, err := strconv.Atoi(key); err == nil && i >= 0 && i < len(c) {
			return c[i]
		}
	}
	return nil
}

func set(container any, key string, v any) {
	switch c := container.(type) {
	case map[string]any:
		c[key] = v
	case []any:
		if i, err := strconv.Atoi(key); err == nil && i >= 0 && i < len(c) {
			c[i] = v
		}
	}
}
