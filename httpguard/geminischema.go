package httpguard

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// geminiSchemaToJSONSchema converts a Gemini function declaration's
// parameters, an OpenAPI 3.0 subset (https://ai.google.dev/api/caching#Schema),
// into the JSON Schema that means the same:
//
//   - type: upper-case names (STRING, NUMBER, INTEGER, BOOLEAN, ARRAY,
//     OBJECT, NULL) become JSON Schema's lower-case ones; TYPE_UNSPECIFIED
//     is no type; the Type enum's numbers (0 to 7), which proto JSON with
//     enum-encoding=int carries (generative-ai-go's REST client, and so
//     langchaingo's googleai, sends them), stand for the same names;
//   - nullable: true adds "null" to the type (and null to an enum), as
//     OpenAPI 3.0 means it;
//   - format: kept where JSON Schema has the format (date-time, date,
//     time, email, uuid, …); Gemini's "enum" and the numeric int32, int64,
//     float and double, which JSON Schema does not define, are dropped;
//   - minItems, maxItems, minLength, maxLength, minProperties,
//     maxProperties: int64 in the proto, so a string in proto JSON ("3")
//     becomes a number, and a number that is an integer written with a
//     fraction or an exponent (3.0, 3e0) the integer;
//   - properties, items, anyOf: converted recursively; required, enum,
//     minimum, maximum, pattern, title, description, default kept;
//   - example becomes examples: [example]; propertyOrdering, an ordering
//     hint for generation, is dropped;
//   - any other member is kept as it is.
func geminiSchemaToJSONSchema(raw json.RawMessage) (json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("%w: gemini schema: %v", errJSON, err)
	}
	out, err := convertGeminiSchema(v, "")
	if err != nil {
		return nil, err
	}
	return marshal(out)
}

// jsonSchemaFormat reports whether f is a format of JSON Schema's
// vocabulary; Gemini's own (enum, int32, …) are not among them.
func jsonSchemaFormat(f string) bool {
	switch f {
	case "date-time", "date", "time", "duration", "email",
		"idn-email", "hostname", "idn-hostname", "ipv4", "ipv6",
		"uri", "uri-reference", "iri", "iri-reference", "uuid",
		"uri-template", "json-pointer", "relative-json-pointer", "regex":
		return true
	}
	return false
}

// geminiCountKey reports whether k is a keyword whose value Gemini reads
// as an int64 count (geminiCount).
func geminiCountKey(k string) bool {
	switch k {
	case "minItems", "maxItems", "minLength", "maxLength", "minProperties", "maxProperties":
		return true
	}
	return false
}

func convertGeminiSchema(v any, at string) (any, error) {
	s, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("httpguard: gemini schema at %q is not an object", "/"+at)
	}
	out := make(map[string]any, len(s))
	for k, val := range s {
		var err error
		switch {
		case k == "nullable" || k == "propertyOrdering":
		case k == "type":
			var t string
			if t, err = convertGeminiType(val, at); err == nil && t != "" {
				out["type"] = t
			}
		case k == "format":
			if f, ok := val.(string); ok && jsonSchemaFormat(f) {
				out["format"] = f
			}
		case geminiCountKey(k):
			n, cerr := geminiCount(val)
			if cerr != nil {
				return nil, fmt.Errorf("httpguard: gemini schema at %q: %s: %w", "/"+at, k, cerr)
			}
			out[k] = n
		case k == "properties":
			out[k], err = convertGeminiProperties(val, at)
		case k == "items":
			out[k], err = convertGeminiSchema(val, at+"items/")
		case k == "anyOf":
			out[k], err = convertGeminiAnyOf(val, at)
		case k == "example":
			out["examples"] = []any{val}
		default:
			out[k] = val
		}
		if err != nil {
			return nil, err
		}
	}
	if n, ok := s["nullable"].(bool); ok && n {
		allowNull(out)
	}
	return out, nil
}

// convertGeminiType is a Gemini type (a name in any case, or a Type
// number) as JSON Schema names it; "" for TYPE_UNSPECIFIED, which
// constrains nothing.
func convertGeminiType(val any, at string) (string, error) {
	t, ok := geminiType(val)
	if !ok {
		return "", fmt.Errorf("httpguard: gemini schema at %q: type is neither a name nor a Type number", "/"+at)
	}
	t = strings.ToLower(t)
	switch t {
	case "type_unspecified", "":
		return "", nil
	case "string", "number", "integer", "boolean", "array", "object", "null":
		return t, nil
	}
	return "", fmt.Errorf("httpguard: gemini schema at %q: unknown type %q", "/"+at, t)
}

// convertGeminiProperties converts each schema of a properties object.
func convertGeminiProperties(val any, at string) (any, error) {
	props, ok := val.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("httpguard: gemini schema at %q: properties is not an object", "/"+at)
	}
	conv := make(map[string]any, len(props))
	for name, p := range props {
		c, err := convertGeminiSchema(p, at+"properties/"+name+"/")
		if err != nil {
			return nil, err
		}
		conv[name] = c
	}
	return conv, nil
}

// convertGeminiAnyOf converts each schema of an anyOf list.
func convertGeminiAnyOf(val any, at string) (any, error) {
	list, ok := val.([]any)
	if !ok {
		return nil, fmt.Errorf("httpguard: gemini schema at %q: anyOf is not an array", "/"+at)
	}
	conv := make([]any, len(list))
	for i, p := range list {
		c, err := convertGeminiSchema(p, at+"anyOf/"+strconv.Itoa(i)+"/")
		if err != nil {
			return nil, err
		}
		conv[i] = c
	}
	return conv, nil
}

// allowNull makes the converted schema out take null too, as Gemini's
// nullable says: null added to its type, its enum and its anyOf.
func allowNull(out map[string]any) {
	if t, ok := out["type"].(string); ok {
		out["type"] = []any{t, "null"}
	}
	if e, ok := out["enum"].([]any); ok {
		out["enum"] = append(e, nil)
	}
	if a, ok := out["anyOf"].([]any); ok {
		out["anyOf"] = append(a, map[string]any{"type": "null"})
	}
}

// geminiTypes are the names of the Type enum, by number
// (https://ai.google.dev/api/caching#Type).
var geminiTypes = [...]string{"TYPE_UNSPECIFIED", "STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT", "NULL"}

// geminiType reads a schema's type: its name, or its number in the Type
// enum.
func geminiType(v any) (string, bool) {
	switch t := v.(type) {
	case string:
		return t, true
	case json.Number:
		if n, err := strconv.Atoi(t.String()); err == nil && n >= 0 && n < len(geminiTypes) {
			return geminiTypes[n], true
		}
	}
	return "", false
}

// geminiCount reads an int64 count, a JSON number or a decimal string, as
// proto JSON reads an int64: a number with a fraction or an exponent that
// is an integer all the same (3.0, 3e0) is that integer, as it is in JSON
// Schema too; any other fraction, or a count past int64, is refused.
func geminiCount(v any) (json.Number, error) {
	var s string
	switch n := v.(type) {
	case json.Number:
		s = n.String()
	case string:
		s = n
	default:
		return "", fmt.Errorf("not an integer: %v", v)
	}
	if _, err := strconv.ParseInt(s, 10, 64); err == nil {
		return json.Number(s), nil
	}
	if n, ok := integerText(s); ok {
		return json.Number(n), nil
	}
	return "", fmt.Errorf("not an integer: %q", s)
}

// integerText returns the int64 a decimal number with a fraction or an
// exponent stands for, in plain digits, when it is an integer; ok is false
// for any other text. Read exactly, digit by digit: no float rounding, and
// no exponent large enough to cost memory (past ±400 the number cannot be
// a nonzero int64 anyway).
func integerText(s string) (string, bool) {
	mant, exp := s, 0
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		e, err := strconv.Atoi(s[i+1:])
		if err != nil || e < -400 || e > 400 {
			return "", false
		}
		mant, exp = s[:i], e
	}
	neg := strings.HasPrefix(mant, "-")
	if neg {
		mant = mant[1:]
	}
	ip, fp, _ := strings.Cut(mant, ".")
	digits := ip + fp
	if ip == "" || strings.Trim(digits, "0123456789") != "" {
		return "", false
	}
	point := len(ip) + exp // the integer part is digits[:point]
	if point < 0 {
		point = 0
	}
	for point > len(digits) {
		digits += "0"
	}
	if strings.Trim(digits[point:], "0") != "" {
		return "", false // a fraction
	}
	n := strings.TrimLeft(digits[:point], "0")
	if n == "" {
		return "0", true
	}
	if neg {
		n = "-" + n
	}
	if _, err := strconv.ParseInt(n, 10, 64); err != nil {
		return "", false
	}
	return n, true
}
