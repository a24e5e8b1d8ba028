package validation

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"

	gjs "github.com/google/jsonschema-go/jsonschema"
	"github.com/toolguard/toolguard/internal/jsonptr"
	"github.com/toolguard/toolguard/internal/safetext"
)

// SchemaProvider is implemented by named Go types that describe their own
// JSON Schema — an enum, bounds, a format — for [Typed] to use wherever the
// type appears, instead of the schema inferred from its kind:
//
//	type Unit string
//
//	func (Unit) JSONSchema() *jsonschema.Schema {
//		return &jsonschema.Schema{Type: "string", Enum: []any{"celsius", "fahrenheit"}}
//	}
//
// jsonschema is github.com/google/jsonschema-go/jsonschema, the schema
// library of the official MCP Go SDK, so one type serves both. The method is
// called once, on the zero value, when the enclosing schema is inferred.
type SchemaProvider interface {
	JSONSchema() *gjs.Schema
}

// Validator is implemented by argument types with checks a JSON Schema
// cannot express. [Typed] schemas call Validate after the arguments pass the
// schema and decode into the type, on T and on every field, element and map
// value whose type has the method; a non-nil error becomes a violation at
// that value's path (the root for T) or, for an error made with
// [FieldError], at the path it names below it. A value that does not decode
// into its Go type is likewise a violation at its own path.
type Validator interface {
	Validate() error
}

// FieldError returns an error for a Validate method that points the model at
// one argument: path is a JSON Pointer such as "/end_date".
func FieldError(path, message string) error {
	return &Error{Violations: []Violation{{Path: path, Keyword: "validate", Message: safetext.Sanitize(message, maxMessage)}}}
}

type typedEntry struct {
	once   sync.Once
	schema *Schema
	err    error
}

var typedCache sync.Map // reflect.Type -> *typedEntry

// Typed returns the schema of tool arguments decoded into T, inferred once
// per type with github.com/google/jsonschema-go and cached:
//
//   - properties are the fields' json names; a field tagged omitempty or
//     omitzero is optional, every other field is required;
//   - a field's `jsonschema:"..."` tag is its description;
//   - a named type implementing [SchemaProvider] supplies its own schema
//     (enums, bounds, formats); time.Time is a "date-time" string, big.Int
//     an integer, slog.Level a level name;
//   - structs allow no additional properties;
//   - a top-level field tagged `toolguard:"inject"` is an injected
//     argument, marked with [InjectedKeyword]: package agent keeps it out
//     of the schema sent to the model and fills it before the tool runs
//     (toolstage.Inject); this schema keeps it, so the value is validated, and
//     Validate sees it. The tag on a deeper field, or with another value,
//     makes Typed panic;
//   - everything is inlined (no "$ref") and every property has a single
//     "type" (pointers and slices do not add "null"), which is what OpenAI,
//     Anthropic and Gemini accept alike.
//
// Validating against a typed schema checks the inferred schema, then decodes
// the arguments into T and, if T or *T implements [Validator], calls Validate.
//
// Typed panics if T cannot be expressed as a JSON Schema (channels, funcs,
// cyclic types) or is not a JSON object (a struct or a map with string keys).
func Typed[T any]() *Schema {
	t := reflect.TypeFor[T]()
	e, _ := typedCache.LoadOrStore(t, &typedEntry{})
	entry := e.(*typedEntry)
	entry.once.Do(func() { entry.schema, entry.err = inferTyped[T](t) })
	if entry.err != nil {
		panic(entry.err.Error())
	}
	return entry.schema
}

func inferTyped[T any](t reflect.Type) (*Schema, error) {
	types := stdSchemas()
	maps.Copy(types, providedSchemas(t))
	js, err := gjs.ForType(t, &gjs.ForOptions{TypeSchemas: types})
	if err != nil {
		return nil, fmt.Errorf("validation: Typed[%v]: %v", t, err)
	}
	singleTypes(js)
	if err := markInjected(t, js); err != nil {
		return nil, err
	}
	if js.Type != "object" {
		return nil, fmt.Errorf("validation: Typed[%v]: tool arguments are a JSON object, so T must be a struct or a map with string keys", t)
	}
	raw, err := json.Marshal(js)
	if err != nil {
		return nil, fmt.Errorf("validation: Typed[%v]: %v", t, err)
	}
	s, err := Compile(raw, WithDefaultDraft(Draft2020))
	if err != nil {
		return nil, fmt.Errorf("validation: Typed[%v]: the inferred schema does not compile: %w", t, err)
	}
	s.typed = &typedHook{decode: decodeTyped[T]}
	return s, nil
}

// providedSchemas collects the schemas of the named types reachable from t
// that implement [SchemaProvider].
func providedSchemas(t reflect.Type) map[reflect.Type]*gjs.Schema {
	found := map[reflect.Type]*gjs.Schema{}
	seen := map[reflect.Type]bool{}
	provider := reflect.TypeFor[SchemaProvider]()
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		if seen[t] {
			return
		}
		seen[t] = true
		if t.Name() != "" && t.Kind() != reflect.Pointer {
			var p SchemaProvider
			switch {
			case t.Implements(provider):
				p, _ = reflect.Zero(t).Interface().(SchemaProvider)
			case reflect.PointerTo(t).Implements(provider):
				p, _ = reflect.New(t).Interface().(SchemaProvider)
			}
			if p != nil {
				if s := p.JSONSchema(); s != nil {
					found[t] = s
					return
				}
			}
		}
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array:
			walk(t.Elem())
		case reflect.Map:
			walk(t.Elem())
		case reflect.Struct:
			for _, f := range reflect.VisibleFields(t) {
				if f.IsExported() {
					walk(f.Type)
				}
			}
		}
	}
	walk(t)
	return found
}

var (
	schemaPtrType   = reflect.TypeFor[*gjs.Schema]()
	schemaSliceType = reflect.TypeFor[[]*gjs.Schema]()
	schemaMapType   = reflect.TypeFor[map[string]*gjs.Schema]()
)

// singleTypes rewrites the ["null", X] type lists jsonschema-go gives pointers
// and slices into X, in s and every sub-schema: Gemini's function
// declarations take a single type, and a model never needs to send null for
// an argument (it omits it).
func singleTypes(s *gjs.Schema) {
	if s == nil {
		return
	}
	if len(s.Types) == 2 && slices.Contains(s.Types, "null") {
		s.Type = s.Types[0]
		if s.Type == "null" {
			s.Type = s.Types[1]
		}
		s.Types = nil
	}
	v := reflect.ValueOf(s).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Type() {
		case schemaPtrType:
			singleTypes(f.Interface().(*gjs.Schema))
		case schemaSliceType:
			for _, c := range f.Interface().([]*gjs.Schema) {
				singleTypes(c)
			}
		case schemaMapType:
			for _, c := range f.Interface().(map[string]*gjs.Schema) {
				singleTypes(c)
			}
		}
	}
}

// typedHook checks what a JSON Schema cannot: that the arguments decode into
// the Go type, and the type's own Validate method.
type typedHook struct {
	decode func(raw []byte) *Error
}

func (h *typedHook) check(v any, raw []byte) *Error {
	if raw == nil {
		b, err := json.Marshal(v)
		if err != nil {
			return &Error{Violations: []Violation{{Keyword: "json", Message: "arguments cannot be encoded: " + safetext.Sanitize(err.Error(), maxMessage)}}}
		}
		raw = b
	}
	return h.decode(raw)
}

// decodeTyped decodes raw into a T and runs the Validate methods of its
// fields, elements and map values (at their paths) and of T itself (at the
// root); see validateFields.
func decodeTyped[T any](raw []byte) *Error {
	var x T
	if len(strings.TrimSpace(string(raw))) > 0 {
		if err := json.Unmarshal(raw, &x); err != nil {
			return &Error{Violations: []Violation{decodeViolation(reflect.TypeFor[T](), raw, err)}}
		}
	}
	var out []Violation
	root := reflect.ValueOf(&x).Elem()
	validateFields(root, "", &out)
	callValidate(root, "", &out)
	if len(out) == 0 {
		return nil
	}
	slices.SortFunc(out, compareViolations)
	return &Error{Violations: out}
}

// decodeViolation turns a json.Unmarshal error into a violation at the path
// of the value that could not be decoded into t's part: the one the error
// names, else the one found by decoding part by part (locateDecodeError),
// else the root.
func decodeViolation(t reflect.Type, raw []byte, err error) Violation {
	if f := locateDecodeError(t, raw, ""); f != nil {
		return f.violation()
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		path := ""
		if te.Field != "" {
			for _, tok := range strings.Split(te.Field, ".") {
				path += "/" + jsonptr.Escape(tok)
			}
		}
		return Violation{Path: path, Keyword: "type",
			Message: "expected a value that fits Go type " + te.Type.String() + " (got " + safetext.Sanitize(te.Value, 60) + ")"}
	}
	return Violation{Keyword: "type", Message: "arguments do not decode into the Go type: " + safetext.Sanitize(err.Error(), maxMessage)}
}
