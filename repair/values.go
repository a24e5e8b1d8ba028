package repair

import (
	"encoding/json"
	"slices"

	"github.com/toolguard/toolguard/internal/improve"
	"github.com/toolguard/toolguard/internal/jsonptr"
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
	verr := s.Check(v)
	if verr == nil || verr.Omitted > 0 {
		return nil // valid, or violations that cannot be compared
	}
	vs := verr.Violations
	var reps []Repair
	for _, viol := range slices.Clone(vs) {
		if viol.Keyword != "type" || viol.Path == "" {
			continue
		}
		parent, key, found := jsonptr.Locate(v, viol.Path)
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
		var kept bool
		vs, kept = improve.Try(s, v, vs, func() func() {
			jsonptr.Set(parent, key, repl)
			return func() { jsonptr.Set(parent, key, str) }
		})
		if kept {
			reps = append(reps, Repair{Kind: kind, Path: viol.Path})
			if len(vs) == 0 {
				break
			}
		}
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

// get returns the member or element key of container.
func get(container any, key string) any {
	v, _ := jsonptr.GetTokens(container, []string{key})
	return v
}
