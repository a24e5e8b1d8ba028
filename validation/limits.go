package validation

import (
	"errors"
	"strconv"
)

// MaxDepth is the deepest nesting of arrays and objects toolguard accepts,
// in tool-call arguments (DecodeArgs, Validate) and in schema documents
// (Compile). The underlying validator's cost grows faster than linearly with
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
// makes the validator panic — so DecodeArgs refuses a number longer than
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
// up to MaxDepth deep. A schema above the bound is refused by Compile with
// an error wrapping ErrTooComplex. Without it, a 1.4 KB schema of 18
// definitions that each reference the next twice ("allOf": [{"$ref": d},
// {"$ref": d}]) costs 2^18 subschema checks per call, and a 90-byte
// recursive schema ("anyOf" of two "items": {"$ref": "#"}) costs 2^n checks
// for an argument n arrays deep.
const MaxApplications = 1 << 16

// ErrTooComplex is reported (wrapped) by Compile for a schema nested deeper
// than MaxDepth or whose subschemas would apply more than MaxApplications
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

// valueDepthExceeds reports whether a decoded JSON value nests arrays and
// objects deeper than max. It stops as soon as it knows.
func valueDepthExceeds(v any, max int) bool {
	if max < 0 {
		return true
	}
	switch x := v.(type) {
	case map[string]any:
		if max == 0 {
			return true
		}
		for _, e := range x {
			if valueDepthExceeds(e, max-1) {
				return true
			}
		}
	case []any:
		if max == 0 {
			return true
		}
		for _, e := range x {
			if valueDepthExceeds(e, max-1) {
				return true
			}
		}
	}
	return false
}

// tooDeep is the violation for arguments nested deeper than MaxDepth.
func tooDeep() *Error {
	return rootViolation("arguments are nested deeper than "+strconv.Itoa(MaxDepth)+
		" levels of arrays and objects; send a flatter value", "")
}
