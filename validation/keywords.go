package validation

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/toolguard/toolguard/internal/exactjson"
	"github.com/toolguard/toolguard/internal/safetext"
)

// ErrNoKeyword is reported (wrapped) by [Compile] for a schema object that
// has keys but not one JSON Schema keyword, such as {"city": ""}: what a Go
// struct value (Parameters: WeatherArgs{}) marshals to. JSON Schema ignores
// unknown keys, so such a schema would accept any arguments; it is almost
// always a value passed where a schema was meant ([Typed] infers the schema
// of a Go type). The empty schema {} is not refused: it accepts anything on
// purpose.
var ErrNoKeyword = errors.New("validation: schema has no JSON Schema keyword")

// isKeyword reports the keywords of every draft toolguard knows (draft-04 to
// 2020-12) and the OpenAPI schema-object keywords that providers' schemas use.
func isKeyword(key string) bool {
	switch key {
	// Core.
	case "$schema", "$id", "id", "$ref", "$anchor":
		return true
	case "$dynamicRef", "$dynamicAnchor", "$recursiveRef":
		return true
	case "$recursiveAnchor", "$vocabulary", "$comment":
		return true
	case "$defs", "definitions":
		return true
	// Applicators.
	case "allOf", "anyOf", "oneOf", "not", "if":
		return true
	case "then", "else", "dependentSchemas", "dependencies":
		return true
	case "prefixItems", "items", "additionalItems", "contains":
		return true
	case "properties", "patternProperties", "additionalProperties":
		return true
	case "propertyNames", "unevaluatedItems", "unevaluatedProperties":
		return true
	// Validation.
	case "type", "enum", "const", "multipleOf":
		return true
	case "maximum", "exclusiveMaximum", "minimum":
		return true
	case "exclusiveMinimum", "maxLength", "minLength":
		return true
	case "pattern", "maxItems", "minItems", "uniqueItems":
		return true
	case "maxContains", "minContains", "maxProperties":
		return true
	case "minProperties", "required", "dependentRequired":
		return true
	// Annotations, formats, content.
	case "title", "description", "default", "deprecated":
		return true
	case "readOnly", "writeOnly", "examples", "format":
		return true
	case "contentEncoding", "contentMediaType", "contentSchema":
		return true
	// OpenAPI schema objects (Gemini's function declarations use them).
	case "nullable", "discriminator", "example", "xml":
		return true
	case "externalDocs", "propertyOrdering":
		return true
	}
	return false
}

// checkKeywords refuses a root schema object that has keys and no keyword.
func checkKeywords(raw []byte) error {
	if len(raw) == 0 || raw[0] != '{' || bytes.Equal(raw, []byte("{}")) {
		return nil // a boolean schema, or {}
	}
	m, err := exactjson.DecodeObject(raw)
	if err != nil || len(m) == 0 {
		return nil // the compiler reports what is wrong
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		if isKeyword(k) {
			return nil
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	const shown = 5
	quoted := make([]string, 0, shown)
	for _, k := range keys[:min(len(keys), shown)] {
		quoted = append(quoted, safetext.Quote(k, 60))
	}
	more := ""
	if len(keys) > shown {
		more = fmt.Sprintf(" and %d more", len(keys)-shown)
	}
	return fmt.Errorf("%w: its keys (%s%s) are not keywords, so it would accept anything; "+
		"was a Go value passed instead of its schema? (validation.Typed[T]() infers one)",
		ErrNoKeyword, strings.Join(quoted, ", "), more)
}
