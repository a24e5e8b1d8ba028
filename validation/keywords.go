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

// schemaKeywords are the keywords of every draft toolguard knows (draft-04 to
// 2020-12) and the OpenAPI schema-object keywords that providers' schemas use.
var schemaKeywords = map[string]bool{
	// Core.
	"$schema": true, "$id": true, "id": true, "$ref": true, "$anchor": true,
	"$dynamicRef": true, "$dynamicAnchor": true, "$recursiveRef": true,
	"$recursiveAnchor": true, "$vocabulary": true, "$comment": true,
	"$defs": true, "definitions": true,
	// Applicators.
	"allOf": true, "anyOf": true, "oneOf": true, "not": true, "if": true,
	"then": true, "else": true, "dependentSchemas": true, "dependencies": true,
	"prefixItems": true, "items": true, "additionalItems": true, "contains": true,
	"properties": true, "patternProperties": true, "additionalProperties": true,
	"propertyNames": true, "unevaluatedItems": true, "unevaluatedProperties": true,
	// Validation.
	"type": true, "enum": true, "const": true, "multipleOf": true,
	"maximum": true, "exclusiveMaximum": true, "minimum": true,
	"exclusiveMinimum": true, "maxLength": true, "minLength": true,
	"pattern": true, "maxItems": true, "minItems": true, "uniqueItems": true,
	"maxContains": true, "minContains": true, "maxProperties": true,
	"minProperties": true, "required": true, "dependentRequired": true,
	// Annotations, formats, content.
	"title": true, "description": true, "default": true, "deprecated": true,
	"readOnly": true, "writeOnly": true, "examples": true, "format": true,
	"contentEncoding": true, "contentMediaType": true, "contentSchema": true,
	// OpenAPI schema objects (Gemini's function declarations use them).
	"nullable": true, "discriminator": true, "example": true, "xml": true,
	"externalDocs": true, "propertyOrdering": true,
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
		if schemaKeywords[k] {
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
