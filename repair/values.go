package repair

import (
	"encoding/json"
	"slices"

	"github.com/toolguard/toolguard/internal/jsonptr"
	"github.com/toolguard/toolguard/validation"
)

// repairValues turns strings holding a number, a boolean, an array or an
// object into that value, in place, where the schema reports a type
// violation at the string and the value then satisfies its subschema (no
// violation remains at or below its path) and adds no violation elsewhere.
// It returns the repairs made.
func (r *repairer) repairValues(v map[string]any, s *validation.Schema) []Repair {
	if !r.coercesValues() {
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
		repl, kind, ok := r.coerce(str)
		if !ok {
			continue
		}
		jsonptr.Set(parent, key, repl)
		after := s.Check(v)
		if !validation.Improves(after, vs) || after != nil && violatedWithin(after.Violations, viol.Path) {
			jsonptr.Set(parent, key, str)
			continue
		}
		reps = append(reps, Repair{Kind: kind, Path: viol.Path})
		if after == nil {
			break
		}
		vs = after.Violations
	}
	return reps
}

// coerce returns the value str spells for the first enabled kind that
// reads it.
func (r *repairer) coerce(str string) (any, Kind, bool) {
	switch {
	case r.enabled(NumberString) && isJSONNumber(str):
		return json.Number(str), NumberString, true
	case r.enabled(BoolString) && (str == "true" || str == "false"):
		return str == "true", BoolString, true
	case r.enabled(BoolAnyCase) && str != "true" && str != "false" && (asciiFold(str, "true") || asciiFold(str, "false")):
		return asciiFold(str, "true"), BoolAnyCase, true
	}
	if len(str) < 2 || str[0] != '[' && str[0] != '{' {
		return nil, "", false
	}
	if r.enabled(JSONString) {
		if c, ok := decodeJSONContainer(str); ok {
			return c, JSONString, true
		}
	}
	if r.enabled(PythonString) {
		if c, ok := parsePython(str); ok {
			return c, PythonString, true
		}
	}
	return nil, "", false
}

// decodeJSONContainer decodes str, which must be exactly one JSON array or
// object with nothing around it, as [validation.DecodeArgs] decodes
// arguments: numbers exact, a key twice refused at any depth, nesting and
// values within validation's limits.
func decodeJSONContainer(str string) (any, bool) {
	if len(str) < 2 || str[0] != '[' && str[0] != '{' || !json.Valid([]byte(str)) {
		return nil, false
	}
	if last := str[len(str)-1]; last != ']' && last != '}' {
		return nil, false // blanks after the value
	}
	// Valid JSON alone, so wrapping it cannot change where it ends.
	m, err := validation.DecodeArgs([]byte(`{"v":` + str + `}`))
	if err != nil {
		return nil, false
	}
	return m["v"], true
}

// violatedWithin reports whether one of vs is at path or below it.
func violatedWithin(vs []validation.Violation, path string) bool {
	return slices.ContainsFunc(vs, func(v validation.Violation) bool { return jsonptr.IsWithin(v.Path, path) })
}

// asciiFold reports whether s is word (lower-case ASCII letters) in any
// letter case. Unlike strings.EqualFold it folds ASCII only: "falſe" (a
// long s) is not "false".
func asciiFold(s, word string) bool {
	if len(s) != len(word) {
		return false
	}
	for i := range len(s) {
		c := s[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != word[i] {
			return false
		}
	}
	return true
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
