package validation

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"

	"github.com/toolguard/toolguard/internal/exactjson"
	"github.com/toolguard/toolguard/internal/safetext"
)

// DecodeArgs decodes tool-call arguments: one JSON object, numbers as
// json.Number so that no precision is lost. Empty or all-blank input is the
// empty object. Input that is not JSON, has data after the value, is a JSON
// value other than an object, or has an object with the same key twice
// yields a *[Error] with one violation at the root (keyword "json") whose
// message says what is wrong and gives the parser's reason. So does input
// that nests arrays and objects deeper than [MaxDepth] or holds more than
// [MaxValues] values. A number longer than
// [MaxNumberLength] or with an exponent beyond ±[MaxNumberExponent] is one
// violation (keyword "json") at the number's path.
//
// Duplicate keys are refused because parsers disagree about them:
// encoding/json keeps the last value, other parsers the first, so arguments
// validated as one value could reach the tool as another. Keys are compared
// as decoded ("a" and "\u0061" are the same key).
func DecodeArgs(args []byte) (map[string]any, error) {
	m, _, e := decodeArgs(args)
	if e != nil {
		return nil, e
	}
	return m, nil
}

// decodeArgs is [DecodeArgs], also returning the number of values.
func decodeArgs(args []byte) (map[string]any, int, *Error) {
	trimmed := bytes.TrimSpace(args)
	if len(trimmed) == 0 {
		return map[string]any{}, 1, nil
	}
	v, err := exactjson.Decode(trimmed)
	if err != nil {
		return nil, 0, notJSON(err, trimmed)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, 0, rootViolation("arguments are not a JSON object but "+article(jsonType(v)), safetext.Preview(v, maxGot))
	}
	values, e := scanArgs(trimmed)
	if e != nil {
		return nil, values, e
	}
	return m, values, nil
}

// notJSON reports arguments the JSON parser refused. Got holds the raw text
// as a JSON string: providers are not sent arguments that are not a JSON
// object when a call is replayed (see middleware.ToolCallMessages), so the
// feedback is where the model sees what it sent.
func notJSON(err error, raw []byte) *Error {
	size := len(raw)
	reason := err.Error()
	var syn *json.SyntaxError
	var trailing *exactjson.TrailingDataError
	switch {
	case errors.As(err, &trailing):
		reason = trailing.Error()
	case errors.As(err, &syn) && strings.HasSuffix(syn.Error(), "exceeded max depth"):
		return tooDeep() // encoding/json's own limit, 10,000 levels
	case errors.As(err, &syn):
		reason += " at byte " + strconv.FormatInt(syn.Offset, 10)
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		reason = "unexpected end of input after byte " + strconv.Itoa(size) + " (truncated?)"
	}
	return rootViolation("arguments are not valid JSON: "+safetext.Sanitize(reason, maxMessage), safetext.Quote(string(raw), maxGot))
}

func rootViolation(msg, got string) *Error {
	return &Error{Violations: []Violation{{Path: "", Keyword: "json", Message: msg, Got: got}}}
}

func article(s string) string {
	switch s {
	case "array", "integer", "object":
		return "an " + s
	case "null":
		return s
	}
	return "a " + s
}

// jsonType names the JSON type of a decoded value.
func jsonType(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number:
		if _, err := x.Int64(); err == nil {
			return "integer"
		}
		return "number"
	case float64, float32, int, int64, int32:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "unknown"
}
