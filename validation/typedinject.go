package validation

import (
	"fmt"
	"reflect"

	gjs "github.com/google/jsonschema-go/jsonschema"
)

// InjectedKeyword marks, in a tool's schema, a top-level property whose
// value the program supplies at run time and the model must neither see nor
// set: {"user_id": {"type": "string", "x-toolguard-inject": true}}. [Typed]
// sets it on the property of a field tagged `toolguard:"inject"`;
// toolstage.InjectArgs sets it on raw and MCP schemas. Package agent leaves such
// properties out of the schema sent to the model and fills them from
// toolstage.Inject before the tool runs. Validation ignores the keyword: the
// property is validated like any other.
const InjectedKeyword = "x-toolguard-inject"

// tagInjected is the value of a field's `toolguard` tag that marks it
// injected.
const tagInjected = "inject"

// markInjected sets [InjectedKeyword] on the properties of js whose fields
// of t are tagged `toolguard:"inject"`. A tag on a field that is not a
// top-level property of the arguments, or with another value, is an error.
func markInjected(t reflect.Type, js *gjs.Schema) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nestedInjectTag(t, "", map[reflect.Type]bool{})
	}
	seen := map[reflect.Type]bool{t: true}
	for _, f := range reflect.VisibleFields(t) {
		tag, tagged := f.Tag.Lookup("toolguard")
		if tagged {
			if tag != tagInjected {
				return fmt.Errorf("validation: Typed[%v]: field %s: unknown tag toolguard:%q (the only one is toolguard:%q)", t, f.Name, tag, tagInjected)
			}
			name, ok := fieldName(f)
			prop := js.Properties[name]
			if !ok || prop == nil {
				return fmt.Errorf("validation: Typed[%v]: field %s is tagged toolguard:%q but is not a property of the arguments", t, f.Name, tagInjected)
			}
			if prop.Extra == nil {
				prop.Extra = map[string]any{}
			}
			prop.Extra[InjectedKeyword] = true
			continue
		}
		if f.Anonymous {
			continue // its fields are among the visible ones
		}
		if err := nestedInjectTag(f.Type, t.String()+"."+f.Name, seen); err != nil {
			return err
		}
	}
	return nil
}

// nestedInjectTag reports a `toolguard` tag on a field of a type reachable
// from t (below the top level of the arguments), where injection cannot
// apply.
func nestedInjectTag(t reflect.Type, where string, seen map[reflect.Type]bool) error {
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
		return nestedInjectTag(t.Elem(), where, seen)
	case reflect.Struct:
		if seen[t] {
			return nil
		}
		seen[t] = true
		for _, f := range reflect.VisibleFields(t) {
			if _, tagged := f.Tag.Lookup("toolguard"); tagged {
				return fmt.Errorf("validation: Typed: field %v.%s (in %s) is tagged toolguard: only top-level arguments can be injected", t, f.Name, where)
			}
			if err := nestedInjectTag(f.Type, where, seen); err != nil {
				return err
			}
		}
	}
	return nil
}
