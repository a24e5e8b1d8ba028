package bfcl

import (
	"slices"

	"github.com/toolguard/toolguard/internal/exactjson"
)

// Decode decodes JSON text with numbers as json.Number, as
// validation.DecodeArgs does. It panics on invalid JSON: the corpus is
// checked when loaded.
func Decode(raw []byte) any {
	v, err := exactjson.Decode(raw)
	if err != nil {
		panic("bfcl: " + err.Error())
	}
	return v
}

// Required returns the names listed in a schema's "required".
func Required(schema map[string]any) []string {
	list, _ := schema["required"].([]any)
	var out []string
	for _, r := range list {
		if s, ok := r.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// Property returns the schema of the property name, or nil.
func Property(schema map[string]any, name string) map[string]any {
	props, _ := schema["properties"].(map[string]any)
	p, _ := props[name].(map[string]any)
	return p
}

// Types returns a schema's "type" as a list (nil when it has none).
func Types(schema map[string]any) []string {
	switch t := schema["type"].(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, e := range t {
			s, _ := e.(string)
			out = append(out, s)
		}
		return out
	}
	return nil
}

// SortedKeys returns m's keys in sorted order.
func SortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// AbsentOptional picks the property on which a corruption test adds an
// empty value of JSON type jsonType ("null", "object" or "array") to the
// valid call args: the first property of schema, in sorted order, that is
// not required, not in args, and has a "type" that excludes jsonType, so
// that the schema surely rejects the empty value there. It returns "" and
// the reason when there is none.
func AbsentOptional(schema, args map[string]any, jsonType string) (name, skip string) {
	props, _ := schema["properties"].(map[string]any)
	req := Required(schema)
	optional, absent := 0, 0
	for _, key := range SortedKeys(props) {
		if slices.Contains(req, key) {
			continue
		}
		optional++
		if _, present := args[key]; present {
			continue
		}
		absent++
		types := Types(Property(schema, key))
		if len(types) == 0 || slices.Contains(types, jsonType) {
			continue // the schema may accept the empty value
		}
		return key, ""
	}
	switch {
	case optional == 0:
		return "", "no optional property"
	case absent == 0:
		return "", "every optional property is in the call"
	}
	return "", "every absent optional property is untyped or accepts " + jsonType
}
