package validation

import (
	"encoding"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/toolguard/toolguard/internal/jsonptr"
	"github.com/toolguard/toolguard/internal/safetext"
)

// decodeFailure is a value that does not decode into its Go type.
type decodeFailure struct {
	path string // JSON Pointer
	typ  reflect.Type
	raw  json.RawMessage
	err  error
}

// locateDecodeError finds the value of raw that cannot be decoded into a Go
// value of type t: it decodes field by field, element by element, and
// returns the innermost value that fails, or nil when no single value is to
// blame.
func locateDecodeError(t reflect.Type, raw json.RawMessage, path string) *decodeFailure {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if string(raw) == "null" {
		return nil
	}
	pt := reflect.PointerTo(t)
	if pt.Implements(reflect.TypeFor[json.Unmarshaler]()) || pt.Implements(reflect.TypeFor[encoding.TextUnmarshaler]()) {
		return decodeLeaf(t, raw, path)
	}
	switch t.Kind() {
	case reflect.Struct:
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) != nil {
			return decodeLeaf(t, raw, path)
		}
		for _, key := range slices.Sorted(func(yield func(string) bool) {
			for k := range m {
				if !yield(k) {
					return
				}
			}
		}) {
			if field, found := jsonField(t, key); found {
				if f := locateDecodeError(field.Type, m[key], path+"/"+jsonptr.Escape(key)); f != nil {
					return f
				}
			}
		}
	case reflect.Slice, reflect.Array:
		var list []json.RawMessage
		if json.Unmarshal(raw, &list) != nil {
			return decodeLeaf(t, raw, path)
		}
		for i, e := range list {
			if f := locateDecodeError(t.Elem(), e, path+"/"+strconv.Itoa(i)); f != nil {
				return f
			}
		}
	case reflect.Map:
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) != nil {
			return decodeLeaf(t, raw, path)
		}
		for k, e := range m {
			if f := locateDecodeError(t.Elem(), e, path+"/"+jsonptr.Escape(k)); f != nil {
				return f
			}
		}
	default:
		return decodeLeaf(t, raw, path)
	}
	return nil
}

// decodeLeaf decodes raw into a new t and reports the error at path.
func decodeLeaf(t reflect.Type, raw json.RawMessage, path string) *decodeFailure {
	if err := json.Unmarshal(raw, reflect.New(t).Interface()); err != nil {
		return &decodeFailure{path: path, typ: t, raw: raw, err: err}
	}
	return nil
}

// jsonField returns the exported field of struct type t that encoding/json
// decodes the object key into: the exact json name first, then one that
// matches without regard to case.
func jsonField(t reflect.Type, key string) (reflect.StructField, bool) {
	var fold *reflect.StructField
	for _, f := range reflect.VisibleFields(t) {
		name, ok := fieldName(f)
		if !ok {
			continue
		}
		if name == key {
			return f, true
		}
		if fold == nil && strings.EqualFold(name, key) {
			fold = &f
		}
	}
	if fold != nil {
		return *fold, true
	}
	return reflect.StructField{}, false
}

// fieldName is f's JSON object key, false for a field encoding/json skips
// or whose fields are promoted (an untagged embedded struct).
func fieldName(f reflect.StructField) (string, bool) {
	tag := f.Tag.Get("json")
	if tag == "-" || !f.IsExported() {
		return "", false
	}
	name, _, _ := strings.Cut(tag, ",")
	if name != "" {
		return name, true
	}
	ft := f.Type
	if ft.Kind() == reflect.Pointer {
		ft = ft.Elem()
	}
	if f.Anonymous && ft.Kind() == reflect.Struct {
		return "", false
	}
	return f.Name, true
}

// exampleTime renders a time layout as an example a model can follow,
// instead of Go's reference-time layout text.
var exampleTime = time.Date(2026, time.March, 14, 15, 9, 26, 0, time.UTC)

// violation describes the value that does not decode.
func (f *decodeFailure) violation() Violation {
	path, t, err := f.path, f.typ, f.err
	got := safetext.Sanitize(string(f.raw), 60)
	if t == reflect.TypeFor[time.Time]() {
		return Violation{Path: path, Keyword: "format",
			Message: "expected a date-time string in RFC 3339 format, such as " + strconv.Quote(exampleTime.Format(time.RFC3339)) + " (got " + got + ")"}
	}
	var pe *time.ParseError
	if errors.As(err, &pe) {
		example := exampleTime.Format(strings.Trim(pe.Layout, `"`))
		return Violation{Path: path, Keyword: "format",
			Message: "expected a date/time written like " + strconv.Quote(example) + " (got " + got + ")"}
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return Violation{Path: path, Keyword: "type", Message: "expected a value that fits Go type " + t.String() + " (got " + got + ")"}
	}
	return Violation{Path: path, Keyword: "type",
		Message: "expected a value that fits Go type " + t.String() + " (got " + got + "): " + safetext.Sanitize(err.Error(), maxMessage)}
}

// validateFields calls Validate on every value below v (a decoded argument
// value) whose type implements [Validator] — struct fields, slice and
// array elements, map values — and adds the errors to out at the value's
// path; the paths of a [FieldError] are relative to that value.
func validateFields(v reflect.Value, path string, out *[]Violation) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			validateFields(v.Elem(), path, out)
		}
		return
	case reflect.Struct:
		for _, f := range reflect.VisibleFields(v.Type()) {
			if name, ok := fieldName(f); ok {
				fv := v.FieldByIndex(f.Index)
				p := path + "/" + jsonptr.Escape(name)
				callValidate(fv, p, out)
				validateFields(fv, p, out)
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			p := path + "/" + strconv.Itoa(i)
			callValidate(v.Index(i), p, out)
			validateFields(v.Index(i), p, out)
		}
	case reflect.Map:
		if v.Type().Key().Kind() != reflect.String {
			return
		}
		iter := v.MapRange()
		for iter.Next() {
			p := path + "/" + jsonptr.Escape(iter.Key().String())
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(iter.Value())
			callValidate(e, p, out)
			validateFields(e, p, out)
		}
	}
}

// callValidate calls v's Validate method (value or pointer receiver), if it
// has one, and adds its error to out at path.
func callValidate(v reflect.Value, path string, out *[]Violation) {
	var val Validator
	switch {
	case v.Kind() == reflect.Pointer && v.IsNil():
		return
	case v.CanAddr() && v.Addr().Type().Implements(reflect.TypeFor[Validator]()):
		val, _ = v.Addr().Interface().(Validator)
	case v.CanInterface():
		val, _ = v.Interface().(Validator)
	}
	if val == nil {
		return
	}
	if err := val.Validate(); err != nil {
		*out = append(*out, validatorViolations(err, path)...)
	}
}

// validatorViolations turns a Validate error into violations at path: a
// [FieldError]'s (or any *[Error]'s) paths below it, else one at path.
func validatorViolations(err error, path string) []Violation {
	var ve *Error
	if errors.As(err, &ve) && len(ve.Violations) > 0 {
		out := slices.Clone(ve.Violations)
		for i := range out {
			out[i].Path = path + out[i].Path
		}
		return out
	}
	return []Violation{{Path: path, Keyword: "validate", Message: safetext.Sanitize(err.Error(), maxMessage)}}
}
