package validation

import (
	"errors"
	"strconv"
)

// MaxDepth is the deepest nesting of arrays and objects toolguard accepts,
// in tool-call arguments ([DecodeArgs], Validate) and in schema documents
// ([Compile]). The underlying validator's cost grows faster than linearly with
// nesting (it builds a location string per level, per error): a 2,000-level
// schema takes minutes to compile and a 2,000-level invalid argument seconds
// to validate. Deeper input is refused up front with a clear message. 128 is
// far beyond any real tool schema or argument.
const MaxDepth = 128

// Bounds on number literals in arguments. Numbers are kept exactly
// (json.Number), and the validator turns each into an exact rational
// (math/big) to check "integer", "minimum", "multipleOf", "enum" and
// "uniqueItems". That costs time and memory growing with the literal's
// length and exponent — 1e1000000 takes 60 ms and 3 MB, a longer exponent
// makes the validator panic — so [DecodeArgs] refuses a number longer than
// MaxNumberLength bytes or with an exponent beyond ±MaxNumberExponent, with
// a violation at the number. Both are far beyond float64 (about 1e±308,
// 17 significant digits) and 64-bit integers (20 digits), which are kept
// digit for digit.
const (
	MaxNumberLength   = 100
	MaxNumberExponent = 400
)

// MaxValues bounds how many JSON values (the object itself, every member
// value and every array element, at any depth) one call's arguments may
// hold. The validator allocates about 1.5 KB per value that fails its
// schema, and ToolArgValidation validates an invalid call twice, so 10 MB
// of invalid one-byte values ({"tags": [{}, {}, ...]}) cost 7.8 GB of
// allocations. Length alone is cheap: a 10 MB string is one value.
const MaxValues = 100_000

// MaxApplications bounds how many times a schema's subschemas may apply to a
// single value of the arguments, counted over every path through "$ref",
// "allOf", "anyOf", "oneOf", "if"/"then"/"else" and the like, for arguments
// up to [MaxDepth] deep. A schema above the bound is refused by [Compile] with
// an error wrapping [ErrTooComplex]. Without it, a 1.4 KB schema of 18
// definitions that each reference the next twice ("allOf": [{"$ref": d},
// {"$ref": d}]) costs 2^18 subschema checks per call, and a 90-byte
// recursive schema ("anyOf" of two "items": {"$ref": "#"}) costs 2^n checks
// for an argument n arrays deep.
const MaxApplications = 1 << 16

// MaxWork bounds the validator's work for one call, counted as the number
// of values in the arguments times the most subschemas that can apply to
// one value (at most [MaxApplications]). The validator's cost for each
// subschema applied to an object or array grows with its number of members
// (it tracks which were evaluated), so a schema whose subschemas apply
// 10,000 times to the arguments object (an anyOf of 10,000 alternatives)
// takes seconds on arguments with 20,000 keys. A schema accepts arguments of
// up to MaxWork / (that number) values, and never more than [MaxValues]: for
// schemas where each value meets at most 10 subschemas (every BFCL tool
// schema), MaxValues is the bound. At the bound a call costs about half a
// second.
const MaxWork = 1 << 20

// valuesFor returns how many values arguments may hold for a schema whose
// subschemas apply at most apps times to one value.
func valuesFor(apps int) int {
	return min(MaxValues, MaxWork/max(apps, 1))
}

// ErrTooComplex is reported (wrapped) by [Compile] for a schema nested deeper
// than [MaxDepth] or whose subschemas would apply more than [MaxApplications]
// times to one value.
var ErrTooComplex = errors.New("validation: schema too complex")

// depthExceeds reports whether valid JSON text nests arrays and objects
// deeper than max. Brackets inside strings are skipped.
func depthExceeds(data []byte, max int) bool {
	depth := 0
	for i := 0; i < len(data); i++ {
		switch data[i] {
		case '{', '[':
			if depth++; depth > max {
				return true
			}
		case '}', ']':
			depth--
		case '"':
			for i++; i < len(data) && data[i] != '"'; i++ {
				if data[i] == '\\' {
					i++
				}
			}
		}
	}
	return false
}

// measure counts the values in a decoded JSON value (itself, members and
// elements at any depth) and reports whether it nests arrays and objects
// deeper than max, in which case it stops counting.
func measure(v any, max int) (values int, tooDeep bool) {
	var walk func(v any, room int) bool
	walk = func(v any, room int) bool {
		values++
		switch x := v.(type) {
		case map[string]any:
			if room == 0 {
				return false
			}
			for _, e := range x {
				if !walk(e, room-1) {
					return false
				}
			}
		case []any:
			if room == 0 {
				return false
			}
			for _, e := range x {
				if !walk(e, room-1) {
					return false
				}
			}
		}
		return true
	}
	return values, !walk(v, max)
}

// tooMany is the violation for arguments holding more values than accepted.
func tooMany(values, limit int) *Error {
	return rootViolation("arguments hold "+strconv.Itoa(values)+" values, more than the "+
		strconv.Itoa(limit)+" accepted; send fewer", "")
}

// tooDeep is the violation for arguments nested deeper than [MaxDepth].
func tooDeep() *Error {
	return rootViolation("arguments are nested deeper than "+strconv.Itoa(MaxDepth)+
		" levels of arrays and objects; send a flatter value", "")
}
