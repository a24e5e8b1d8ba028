// Package repair fixes the slips models make in tool-call arguments, where
// the fix is unambiguous: the arguments wrapped in a Markdown code fence or
// surrounded by prose, trailing commas, Python literals (True, False, None,
// single-quoted strings), the arguments object double-encoded as a JSON
// string, and values sent as strings where the schema wants another type: a
// number ("5"), a boolean ("true", "True") or an array or object, written
// as JSON ("[\"M\", \"L\"]") or as a Python literal ("['M', 'L']").
//
// Nothing else is guessed at. Truncated JSON, unquoted keys or strings,
// comments, several JSON objects in one text, a key given twice, a string
// such as "five" for a number, a single value where an array is wanted and
// an enum member in another letter case are left alone: each has more than
// one plausible reading, and the model is better asked again.
// ToolArgValidation (WithRepair) calls a [Repairer] only for arguments that
// fail, and uses its result only when the repaired arguments then validate,
// so a repair can never turn an invalid call into a different invalid call,
// nor touch a valid one. Repaired arguments are held to
// [validation.DecodeArgs]'s limits.
//
// # Coercions
//
// [Coercions], ToolArgValidation's default, makes only the repairs the
// schema alone decides; [Default] adds the text repairs, [None] makes none.
// Beside pydantic v2's lax mode (its default, with which LangChain
// validates typed tools), for JSON input (model_validate_json, every row
// measured with pydantic 2.13.4):
//
//	sent                          schema wants    Coercions          pydantic lax
//	"5", "-2.5", "1e3" (exactly   integer/number  the number, if it  coerced (int: an
//	  a JSON number)                              then validates     integral string)
//	"true", "false"               boolean         true, false        coerced
//	"True", "FALSE", "tRuE"       boolean         true, false        coerced
//	"[\"M\", \"L\"]" (exactly a   array/object    the array or       refused (only a
//	  JSON array or object)                       object, if it      Json[...] field
//	                                              then validates     decodes a string)
//	"['M', 'L']", "{'a': True}"   array/object    the list or dict,  refused
//	  (a Python list or dict                      if it then
//	  literal)                                    validates
//	the object as a JSON string   the arguments   decoded            refused
//	"yes", "on", "1", "0"         boolean         left (re-asked)    coerced
//	1, 0                          boolean         left               coerced
//	true, false                   integer/number  left               1, 0
//	5.0                           integer         valid as sent      5
//	5, true                       string          left               refused
//	"five"                        integer/number  left               refused
//	"M" (one value)               array           left, never [M]    refused
//	"Celsius" (another case)      enum            left               refused
//
// A coercion is made at a path only where the schema reports a type
// violation at a string, and kept only when the value then satisfies its
// subschema (no violation remains at or below the path) and no violation
// appears elsewhere: "2.5" for an integer, "0" under "minimum": 1, or
// "['M', 5]" for an array of strings stays a string and the model is asked
// again. Nothing inside a decoded array or object is coerced in turn.
//
// A Python literal is read by a strict parser that evaluates nothing. It
// reads lists, dicts with string keys, strings in single or double quotes
// with Python's escapes, True, False, None, numbers as JSON writes them,
// and trailing commas, with the string holding exactly the literal (no
// blanks around it). It refuses everything else Python has (tuples, sets,
// other keys, names, calls, expressions, comments, string prefixes), a key
// given twice, and any text that Python and JSON would read as different
// values: true, false and null, \/ in double quotes, \u escapes of
// surrogate halves, and floats that Python would read as inf or 0. Text
// that is also JSON therefore reads as encoding/json reads it. Nesting and
// size are held to validation's limits ([validation.MaxDepth],
// [validation.MaxValues]) while it reads.
//
// Two repairs that would make more calls valid are not made, by default or
// on request: wrapping a single value into a one-element array ("M" for
// ["M"]) and matching an enum member without regard to case ("Celsius" for
// "celsius"). Both make valid calls that are usually wrong. On BFCL result
// files of 30 model set-ups, measured against BFCL's ground truth, wrapping
// made 172 of 221 such calls valid and 60 of them (35%) equal to BFCL's
// answer; case-folding made 7 of 7 valid and none (0%) equal. The
// coercions above, on the same calls, equal BFCL's answer in 92% (a JSON
// array string, 57 of 62), 85% (a Python list literal, 99 of 117) and 90%
// (a boolean in another case, 43 of 48) of the calls they make valid. A
// re-ask costs less than a silent wrong call; a program whose tools accept
// a single value for a list can write its own [Repairer].
//
// Values the program set are not the model's slips, and no coercion
// touches them: package agent never coerces an injected argument, nor
// arguments a tool middleware set.
//
// repair imports only validation; it never imports middleware.
package repair

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/toolguard/toolguard/internal/exactjson"
	"github.com/toolguard/toolguard/internal/safetext"
	"github.com/toolguard/toolguard/validation"
)

// Kind names one kind of repair.
type Kind string

// The repairs a [Repairer] from [Default] or [Only] can make.
const (
	// CodeFence: the arguments came inside a Markdown code fence
	// ("```json ... ```"); the fence is removed.
	CodeFence Kind = "code_fence"
	// Prose: the arguments came with text before or after them; the text
	// is removed. [Only] when the text outside holds no other brace, so
	// there is exactly one object to take.
	Prose Kind = "prose"
	// TrailingComma: a comma before a closing } or ] is removed.
	TrailingComma Kind = "trailing_comma"
	// PythonLiteral: the arguments were written as a Python literal:
	// True, False and None become true, false and null, and single-quoted
	// strings (Python escapes and all) become JSON strings.
	PythonLiteral Kind = "python_literal"
	// DoubleEncoded: the arguments were a JSON string holding a JSON
	// object; the object is used.
	DoubleEncoded Kind = "double_encoded"
	// NumberString: a string holding a JSON number ("5", "-2.5") where the
	// schema wants a number or integer becomes that number.
	NumberString Kind = "number_string"
	// BoolString: "true" or "false" where the schema wants a boolean
	// becomes that boolean.
	BoolString Kind = "bool_string"
	// BoolAnyCase: true or false in another letter case ("True", "FALSE")
	// where the schema wants a boolean becomes that boolean. Only the ASCII
	// letters of the two words count.
	BoolAnyCase Kind = "bool_any_case"
	// JSONString: a string that is exactly a JSON array or object
	// ("[\"M\", \"L\"]") where the schema wants an array or object becomes
	// that array or object. It is held to [validation.DecodeArgs]'s rules: a
	// key twice, or nesting or values beyond its limits, and the string
	// stays.
	JSONString Kind = "json_string"
	// PythonString: a string that is a Python list or dict literal
	// ("['M', 'L']": single quotes, True, False, None) where the schema
	// wants an array or object becomes that list or dict, read by a strict
	// literal parser that evaluates nothing and refuses any text Python and
	// JSON would read two ways (see the package documentation).
	PythonString Kind = "python_string"
)

// Kinds returns every [Kind], in the order a [Repairer] applies them, in a new
// slice.
func Kinds() []Kind {
	return []Kind{CodeFence, Prose, TrailingComma, PythonLiteral, DoubleEncoded,
		NumberString, BoolString, BoolAnyCase, JSONString, PythonString}
}

// Repair is one repair made to a call's arguments.
type Repair struct {
	Kind Kind
	// Path is the JSON Pointer of the repaired value for the kinds that
	// repair one value (NumberString, BoolString, BoolAnyCase, JSONString,
	// PythonString), and "" (the whole arguments) for the other kinds.
	Path string
}

// String renders the repair as its kind, followed by " at " and the path
// for a repair inside the arguments: "code_fence", "number_string at /days".
func (r Repair) String() string {
	if r.Path == "" {
		return string(r.Kind)
	}
	return string(r.Kind) + " at " + safetext.PathLabel(r.Path)
}

// Repairer repairs tool-call arguments.
//
// [Repair] is given arguments that are not a JSON object or fail schema (nil
// when the tool has no schema). It returns the repaired arguments, decoded
// as by [validation.DecodeArgs] (numbers as json.Number), and the repairs it
// made, or nil and no repairs when it cannot repair args unambiguously. The
// repaired arguments need not validate: the caller checks. Implementations
// must be safe for concurrent use and must not keep args or the result.
type Repairer interface {
	Repair(args []byte, schema *validation.Schema) (map[string]any, []Repair)
}

// Default returns a [Repairer] that makes every [Kind] of repair.
func Default() Repairer { return Only(Kinds()...) }

// Coercions returns a [Repairer] that makes only the repairs the schema alone
// decides: [DoubleEncoded], the arguments object sent as a JSON string; and,
// where the schema rejects a string, [NumberString] and [BoolString], "5" or
// "true" where it wants a number, integer or boolean, [BoolAnyCase], "True"
// or "FALSE" where it wants a boolean, and [JSONString] and [PythonString],
// "[\"M\", \"L\"]" or "['M', 'L']" where it wants an array or object. It
// is ToolArgValidation's default. It never rewrites the text of the
// arguments when it is not JSON (code fences, prose, trailing commas, Python
// literals: [Default] does), never wraps a single value into an array and
// never matches an enum without regard to case; see the package
// documentation, "Coercions", for all of it beside pydantic's lax mode.
func Coercions() Repairer {
	return Only(DoubleEncoded, NumberString, BoolString, BoolAnyCase, JSONString, PythonString)
}

// None returns a [Repairer] that repairs nothing: with it, ToolArgValidation
// (WithRepair(repair.None())) re-asks the model for every call that fails,
// as it did before coercions were on by default.
func None() Repairer { return Only() }

// Only returns a [Repairer] that makes only the given kinds of repair. It
// panics on a [Kind] it does not know.
func Only(kinds ...Kind) Repairer {
	r := &repairer{on: make(map[Kind]bool, len(kinds))}
	for _, k := range kinds {
		switch k {
		case CodeFence, Prose, TrailingComma, PythonLiteral, DoubleEncoded,
			NumberString, BoolString, BoolAnyCase, JSONString, PythonString:
			r.on[k] = true
		default:
			panic(fmt.Sprintf("repair: Only(%q): unknown kind", k))
		}
	}
	return r
}

type repairer struct {
	on map[Kind]bool
}

func (r *repairer) enabled(k Kind) bool { return r.on[k] }

// coercesValues reports whether r makes one of the repairs of one value
// inside the arguments, where the schema reports a type violation at a
// string.
func (r *repairer) coercesValues() bool {
	return r.enabled(NumberString) || r.enabled(BoolString) || r.enabled(BoolAnyCase) ||
		r.enabled(JSONString) || r.enabled(PythonString)
}

// Repair implements [Repairer]: text repairs first (fence, prose, trailing
// commas, Python literals, double encoding), then, with a schema, the
// strings the schema rejects that spell a number, a boolean, an array or an
// object.
func (r *repairer) Repair(args []byte, schema *validation.Schema) (map[string]any, []Repair) {
	if !r.mayRepair(args) {
		return nil, nil
	}
	v, reps, ok := r.repairText(args)
	if !ok || len(reps) > 0 && !withinLimits(v) { // text as sent was decoded within the limits
		return nil, nil
	}
	if schema != nil {
		reps = append(reps, r.repairValues(v, schema)...)
	}
	if len(reps) == 0 || !withinLimits(v) { // again: a string may have become a number
		return nil, nil
	}
	return v, reps
}

// mayRepair is a scan of args, without decoding, that is false only when
// no enabled kind can apply: with the text repairs off, the arguments are
// not a JSON string (DoubleEncoded), and hold no string that could spell a
// number (a quote then a minus sign or a digit), true or false (in any
// case, for BoolAnyCase), an array or an object (a quote then [ or {), and
// no \u escape that could hide one. It keeps the coercions from decoding
// and validating again a call that fails for another reason.
func (r *repairer) mayRepair(args []byte) bool {
	if r.enabled(CodeFence) || r.enabled(Prose) || r.enabled(TrailingComma) || r.enabled(PythonLiteral) {
		return true
	}
	t := bytes.TrimSpace(args)
	if r.enabled(DoubleEncoded) && len(t) > 0 && t[0] == '"' {
		return true
	}
	if !r.coercesValues() {
		return false
	}
	if bytes.Contains(t, []byte(`\u`)) {
		return true
	}
	word := func(rest []byte, w string) bool {
		if len(rest) <= len(w) || rest[len(w)] != '"' {
			return false
		}
		if r.enabled(BoolAnyCase) {
			return asciiFold(string(rest[:len(w)]), w)
		}
		return string(rest[:len(w)]) == w
	}
	boolWords := r.enabled(BoolString) || r.enabled(BoolAnyCase)
	containers := r.enabled(JSONString) || r.enabled(PythonString)
	for i := bytes.IndexByte(t, '"'); i >= 0 && i+1 < len(t); {
		rest := t[i+1:]
		switch c := rest[0]; {
		case r.enabled(NumberString) && (c == '-' || c >= '0' && c <= '9'),
			boolWords && (word(rest, "true") || word(rest, "false")),
			containers && (c == '[' || c == '{'):
			return true
		}
		j := bytes.IndexByte(rest, '"')
		if j < 0 {
			break
		}
		i += 1 + j
	}
	return false
}

// withinLimits reports whether v, re-encoded, passes what
// [validation.DecodeArgs] enforces on any arguments (depth, number of values,
// number range), so that repaired arguments are held to the same limits as
// arguments that needed no repair.
func withinLimits(v map[string]any) bool {
	b, err := json.Marshal(v)
	if err != nil {
		return false
	}
	_, err = validation.DecodeArgs(b)
	return err == nil
}

// repairText returns args decoded as a JSON object, after the text repairs
// it needed, or false.
func (r *repairer) repairText(args []byte) (map[string]any, []Repair, bool) {
	text := bytes.TrimSpace(args)
	var reps []Repair
	v, err := decodeStrict(text)
	if err != nil && (r.enabled(CodeFence) || r.enabled(Prose)) {
		if inner, prose, ok := unfence(text); ok && r.enabled(CodeFence) && (!prose || r.enabled(Prose)) {
			reps = append(reps, Repair{Kind: CodeFence})
			if prose {
				reps = append(reps, Repair{Kind: Prose})
			}
			text = inner
		} else if obj, ok := soleObject(text); ok && r.enabled(Prose) && len(obj) < len(text) {
			reps = append(reps, Repair{Kind: Prose})
			text = obj
		}
		v, err = decodeStrict(text)
	}
	if err != nil && !r.enabled(TrailingComma) && !r.enabled(PythonLiteral) {
		return nil, nil, false // not JSON, and no repair that reads other text
	}
	if err != nil {
		lv, used, ok := parseLenient(text)
		if !ok || (used.trailingComma && !r.enabled(TrailingComma)) || (used.python && !r.enabled(PythonLiteral)) {
			return nil, nil, false
		}
		if used.trailingComma {
			reps = append(reps, Repair{Kind: TrailingComma})
		}
		if used.python {
			reps = append(reps, Repair{Kind: PythonLiteral})
		}
		v = lv
	}
	if s, isString := v.(string); isString && r.enabled(DoubleEncoded) {
		inner, err := decodeStrict(bytes.TrimSpace([]byte(s)))
		if _, isObject := inner.(map[string]any); err == nil && isObject {
			reps = append(reps, Repair{Kind: DoubleEncoded})
			v = inner
		}
	}
	obj, ok := v.(map[string]any)
	if !ok || obj == nil {
		return nil, nil, false
	}
	return obj, reps, true
}

// decodeStrict decodes exactly one JSON value, numbers as json.Number. An
// object is held to [validation.DecodeArgs]'s limits: a key twice has two
// readings (encoding/json keeps the last, other parsers the first), and no
// repair guesses between them.
func decodeStrict(b []byte) (any, error) {
	if b = bytes.TrimSpace(b); len(b) > 0 && b[0] == '{' {
		m, err := validation.DecodeArgs(b)
		if err != nil {
			return nil, err
		}
		return m, nil
	}
	return exactjson.Decode(b)
}
