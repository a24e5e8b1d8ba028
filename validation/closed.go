package validation

import (
	"bytes"

	"github.com/toolguard/toolguard/internal/exactjson"
)

// WithClosedObjects makes [Compile] treat every object schema that lists its
// properties, and says nothing about others, as closed: as if it declared
// "additionalProperties": false, the way OpenAI's strict mode wants every
// object declared. A call that invents a parameter the tool does not have
// is then a violation at the invented key, where an open schema (most MCP
// and BFCL schemas) lets it through.
//
// An object schema is closed when it has a non-empty "properties", every
// name its "required" lists is among them, and it has none of
// "additionalProperties", "patternProperties", "unevaluatedProperties",
// "$ref", "allOf", "anyOf", "oneOf", "if", "dependentSchemas" or
// "dependencies": each of those either already says what other keys may
// do, or combines the schema with another whose properties it cannot see,
// so that closing it would reject keys the other allows. For the same
// reason nothing is closed inside "allOf", "if", "then", "else", "not",
// "dependentSchemas" or "dependencies", and "$defs" and "definitions" are
// closed only in a schema without "allOf" and without a "$ref" beside other
// keywords. A free-form object ({"type": "object"} without properties) stays
// free-form. Everywhere else (properties, items, prefixItems, anyOf and oneOf
// of a schema that is not itself an object schema, additionalProperties,
// patternProperties) the rule applies at every depth.
//
// The schema's JSON (Schema.MarshalJSON) is the closed one, so a schema
// compiled this way tells a model what it enforces. A *Schema given to
// Compile is returned as is, closed or not. [Typed] schemas are always
// closed.
func WithClosedObjects() Option {
	return func(c *compileConfig) { c.closeObjects = true }
}

// closeObjects returns raw with "additionalProperties": false added to every
// object schema [WithClosedObjects] closes, or raw itself when it closes
// none or raw is not a JSON object.
func closeObjects(raw []byte) []byte {
	doc, err := exactjson.Decode(raw)
	root, ok := doc.(map[string]any)
	if err != nil || !ok {
		return raw
	}
	c := closer{defs: !bytes.Contains(raw, []byte(`"allOf"`)) && !refBesideKeywords(root)}
	if !c.close(root, false) {
		return raw
	}
	out, err := exactjson.Encode(root)
	if err != nil {
		return raw
	}
	return out
}

type closer struct {
	defs bool // close inside $defs and definitions
}

// combining are the keywords that combine a schema with another one whose
// properties it cannot see.
var combining = []string{"$ref", "allOf", "anyOf", "oneOf", "if", "dependentSchemas", "dependencies"}

// close closes s and its subschemas in place; combined says s is combined
// with another schema (an allOf branch), so s itself stays open. It reports
// whether it changed anything.
func (c closer) close(s map[string]any, combined bool) bool {
	changed := false
	object := isObjectSchema(s)
	if object && !combined && closable(s) {
		s["additionalProperties"] = false
		changed = true
	}
	each := func(v any, combined bool) {
		switch x := v.(type) {
		case map[string]any:
			if c.close(x, combined) {
				changed = true
			}
		case []any:
			for _, e := range x {
				if m, ok := e.(map[string]any); ok && c.close(m, combined) {
					changed = true
				}
			}
		}
	}
	eachValue := func(v any) {
		if m, ok := v.(map[string]any); ok {
			for _, sub := range m {
				each(sub, false)
			}
		}
	}
	eachValue(s["properties"])
	eachValue(s["patternProperties"])
	each(s["additionalProperties"], false)
	each(s["items"], false)
	each(s["additionalItems"], false)
	each(s["prefixItems"], false)
	// The branches of anyOf and oneOf are alternatives, unless s holds
	// properties of its own that each branch is combined with.
	_, ownProps := s["properties"]
	each(s["anyOf"], object || ownProps)
	each(s["oneOf"], object || ownProps)
	if c.defs {
		eachValue(s["$defs"])
		eachValue(s["definitions"])
	}
	return changed
}

// isObjectSchema reports whether s describes objects: its type is or
// includes "object", or it has no type and lists properties.
func isObjectSchema(s map[string]any) bool {
	switch t := s["type"].(type) {
	case string:
		return t == "object"
	case []any:
		for _, e := range t {
			if e == "object" {
				return true
			}
		}
		return false
	case nil:
		_, ok := s["properties"]
		return ok
	}
	return false
}

// closable reports whether an object schema may be closed: see
// [WithClosedObjects].
func closable(s map[string]any) bool {
	props, _ := s["properties"].(map[string]any)
	if len(props) == 0 {
		return false
	}
	for _, k := range append([]string{"additionalProperties", "patternProperties", "unevaluatedProperties"}, combining...) {
		if _, ok := s[k]; ok {
			return false
		}
	}
	if req, ok := s["required"].([]any); ok {
		for _, r := range req {
			name, _ := r.(string)
			if _, declared := props[name]; !declared {
				return false
			}
		}
	}
	return true
}

// refBesideKeywords reports whether some schema in v has "$ref" and other
// keywords beside it (allowed from draft 2019-09 on), so that the
// referenced definition is combined with them.
func refBesideKeywords(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		if _, ok := x["$ref"]; ok && len(x) > 1 {
			for k := range x {
				if k != "$ref" && k != "description" && k != "title" && k != "$comment" {
					return true
				}
			}
		}
		for _, e := range x {
			if refBesideKeywords(e) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if refBesideKeywords(e) {
				return true
			}
		}
	}
	return false
}
