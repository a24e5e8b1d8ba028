// Package repair fixes the formatting slips models make in tool-call
// arguments, where the fix is unambiguous: the arguments wrapped in a
// Markdown code fence or surrounded by prose, trailing commas, Python
// literals (True, False, None, single-quoted strings), the arguments object
// double-encoded as a JSON string, and numbers or booleans sent as strings
// ("5", "true") where the schema wants a number, integer or boolean.
//
// Nothing else is guessed at. Truncated JSON, unquoted keys or strings,
// comments, several JSON objects in one text, a key given twice, and a
// string such as "five" for a number are left alone: each has more than one
// plausible reading, and the model is better asked again. ToolArgValidation (WithRepair) calls
// a [Repairer] only for arguments that fail, and uses its result only when
// the repaired arguments then validate, so a repair can never turn an
// invalid call into a different invalid call. Repaired arguments are held
// to [validation.DecodeArgs]'s limits (depth, number of values, number
// length), checked by decoding them with it.
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
)

// Kinds returns every [Kind], in the order a [Repairer] applies them, in a new
// slice.
func Kinds() []Kind {
	return []Kind{CodeFence, Prose, TrailingComma, PythonLiteral, DoubleEncoded, NumberString, BoolString}
}

// Repair is one repair made to a call's arguments.
type Repair struct {
	Kind Kind
	// Path is the JSON Pointer of the repaired value for NumberString and
	// BoolString, and "" (the whole arguments) for the other kinds.
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

// Only returns a [Repairer] that makes only the given kinds of repair. It
// panics on a [Kind] it does not know.
func Only(kinds ...Kind) Repairer {
	r := &repairer{on: make(map[Kind]bool, len(kinds))}
	for _, k := range kinds {
		switch k {
		case CodeFence, Prose, TrailingComma, PythonLiteral, DoubleEncoded, NumberString, BoolString:
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

// Repair implements [Repairer]: text repairs first (fence, prose, trailing
// commas, Python literals, double encoding), then, with a schema, number
// and boolean strings that the schema rejects.
func (r *repairer) Repair(args []byte, schema *validation.Schema) (map[string]any, []Repair) {
	v, reps, ok := r.repairText(args)
	if !ok || !withinLimits(v) {
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
	if err != nil {
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
