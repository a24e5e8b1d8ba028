package eval

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/toolguard/toolguard/internal/jsonptr"
	"github.com/toolguard/toolguard/validation"
)

// Arguments that are not JSON, or not an object, get the same message in
// every format: the decoder's "arguments are not valid JSON: <reason>". A
// validator cannot report them (jsonschema v5 and python-jsonschema take
// decoded values), so each integration writes its own; giving the baselines
// toolguard's message favours them, and keeps the comparison about schema
// violations.

// FirstError is feedback the way a naive use of jsonschema v5 produces it:
// the text of ValidationError.Error(), which names only the first failing
// leaf:
//
//	jsonschema: '/city' does not validate with file:///tool.json#/properties/city/type: expected string, but got number
//
// Messages use v5's wording for the keywords it words differently (type,
// required, enum, additionalProperties) and toolguard's otherwise. Two
// liberties, both in the baseline's favour: the first violation is
// toolguard's first in path order (v5's first leaf follows keyword
// evaluation order), and a missing or unexpected property is located at
// the property's own path, where v5 puts it at the parent object with the
// name in the message only.
func FirstError(e *validation.Error) string {
	if len(e.Violations) == 0 {
		return "jsonschema: validation failed"
	}
	v := e.Violations[0]
	if v.Keyword == "json" {
		return v.Message
	}
	msg := v.Message
	name := jsonptr.Last(v.Path)
	kwloc := keywordLocation(v.Path) + "/" + v.Keyword
	switch v.Keyword {
	case "type":
		msg += ", but got " + gotType(v.Got)
	case "required":
		msg = "missing properties: " + v5quote(name)
		kwloc = keywordLocation(jsonptr.Parent(v.Path)) + "/required"
	case "enum":
		msg = "value must be one of " + strings.TrimPrefix(msg, "expected one of ")
	case "additionalProperties":
		msg = "additionalProperties " + v5quote(name) + " not allowed"
		kwloc = keywordLocation(jsonptr.Parent(v.Path)) + "/additionalProperties"
	}
	return fmt.Sprintf("jsonschema: %s does not validate with file:///tool.json#%s: %s", v5quote(v.Path), kwloc, msg)
}

// v5quote quotes s the way jsonschema v5 quotes instance locations.
func v5quote(s string) string {
	q := fmt.Sprintf("%q", s)
	q = strings.ReplaceAll(q, `\"`, `"`)
	q = strings.ReplaceAll(q, `'`, `\'`)
	return "'" + q[1:len(q)-1] + "'"
}

// keywordLocation is the schema location of the value at ptr, assuming
// plain "properties" nesting and "items" for array elements.
func keywordLocation(ptr string) string {
	if ptr == "" {
		return ""
	}
	var b strings.Builder
	for _, tok := range strings.Split(ptr[1:], "/") {
		if tok != "" && strings.Trim(tok, "0123456789") == "" {
			b.WriteString("/items")
			continue
		}
		b.WriteString("/properties/")
		b.WriteString(tok)
	}
	return b.String()
}

// gotType names the JSON type of a violation's Got preview, as v5 does.
func gotType(got string) string {
	switch {
	case got == "":
		return "null"
	case got[0] == '"':
		return "string"
	case got[0] == '{':
		return "object"
	case got[0] == '[':
		return "array"
	case got == "true" || got == "false":
		return "boolean"
	case got == "null":
		return "null"
	case strings.ContainsAny(got, ".eE"):
		return "number"
	}
	return "integer"
}

// LangChain is feedback in the format of LangChain's ToolArgValidation
// middleware proposal:
//
//	Tool 'get_weather' argument validation failed. Fix the following errors and retry:
//	• [city] Input should be a valid string
//	• [filters → 0 → name] Field required
//
// Locations are pydantic "loc" tuples joined with " → " (a JSON Pointer's
// tokens, unescaped; the root is "[]"), and messages are pydantic v2's for
// the keywords pydantic has words for (missing, type, literal, extra) and
// toolguard's otherwise.
func LangChain(e *validation.Error) string {
	var b strings.Builder
	b.WriteString("Tool '")
	b.WriteString(e.Tool)
	b.WriteString("' argument validation failed. Fix the following errors and retry:")
	for _, v := range e.Violations {
		b.WriteString("\n• [")
		b.WriteString(arrowLoc(v.Path))
		b.WriteString("] ")
		b.WriteString(pydanticMessage(v))
	}
	return b.String()
}

func arrowLoc(ptr string) string {
	if ptr == "" {
		return ""
	}
	return strings.Join(jsonptr.Tokens(ptr), " → ")
}

// pydanticType is pydantic v2's wording for a JSON type.
func pydanticType(t string) (string, bool) {
	switch t {
	case "string":
		return "a valid string", true
	case "integer":
		return "a valid integer", true
	case "number":
		return "a valid number", true
	case "boolean":
		return "a valid boolean", true
	case "array":
		return "a valid list", true
	case "object":
		return "a valid dictionary", true
	case "null":
		return "None", true
	}
	return "", false
}

func pydanticMessage(v validation.Violation) string {
	switch v.Keyword {
	case "required":
		return "Field required"
	case "additionalProperties":
		return "Extra inputs are not permitted"
	case "type":
		first, _, _ := strings.Cut(strings.TrimPrefix(v.Message, "expected "), " or ")
		if t, ok := pydanticType(first); ok {
			return "Input should be " + t
		}
	case "enum":
		list := strings.TrimPrefix(v.Message, "expected one of ")
		var vals []any
		if err := json.Unmarshal([]byte("["+list+"]"), &vals); err == nil && len(vals) > 0 {
			parts := make([]string, len(vals))
			for i, x := range vals {
				parts[i] = pyLiteral(x)
			}
			if len(parts) == 1 {
				return "Input should be " + parts[0]
			}
			return "Input should be " + strings.Join(parts[:len(parts)-1], ", ") + " or " + parts[len(parts)-1]
		}
	}
	return v.Message
}

func pyLiteral(x any) string {
	switch v := x.(type) {
	case string:
		return pyRepr(v)
	case bool:
		if v {
			return "True"
		}
		return "False"
	case nil:
		return "None"
	}
	return string(marshal(x))
}
