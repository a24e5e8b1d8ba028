package validation_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/validation"
)

// FuzzFastPath is the fast path's differential fuzz target: a random schema
// of the keywords the fast path handles (built from schemaSeed) times
// random arguments (built from argsSeed, and raw as given), checked with
// agreeJSON: ValidateJSON and Parse return exactly what the reference path
// returns, and the fast path's verdicts never contradict it. Run it with
//
//	go test -run '^$' -fuzz '^FuzzFastPath$' -fuzztime 10m -parallel 1 ./validation
func FuzzFastPath(f *testing.F) {
	f.Add([]byte{}, []byte{}, []byte(`{}`))
	f.Add([]byte{2, 3, 1, 0, 4, 7, 1}, []byte{1, 2, 3, 4, 5, 6, 7, 8}, []byte(`{"a": 1, "a": 2}`))
	f.Add([]byte{9, 9, 9, 1, 2, 3, 4, 5, 6}, []byte{0, 0, 1, 1, 2, 2}, []byte(` {"b": [1.0, "x", null]} `))
	f.Add([]byte{10, 1, 11, 2, 12, 3, 13}, []byte{7, 7, 7, 7, 7}, []byte(`{"c": "\u00e9", "d": 1e2}`))
	f.Add([]byte{14, 5, 3, 8, 1, 0, 2, 9, 4}, []byte{3, 1, 4, 1, 5, 9, 2, 6}, []byte(`{"a": {"b": {"c": []}}}`))
	f.Add([]byte{2, 3, 1, 0, 4, 7, 1}, []byte{2, 7, 1, 8}, []byte(`{"\ud800": 1, "\udc00": 2}`))
	f.Add([]byte{9, 9, 9, 1, 2, 3, 4, 5, 6}, []byte{1, 4, 1, 4}, []byte("\u00a0{\"a\": -0, \"b\": 1e400, \"c\": 1.0}\u2003"))
	f.Add([]byte{10, 1, 11, 2, 12, 3, 13}, []byte{5, 5, 5}, []byte(`"{\"a\": 1}"`))
	f.Fuzz(func(t *testing.T, schemaSeed, argsSeed, raw []byte) {
		g := &seedReader{b: schemaSeed}
		schema := g.schemaDoc()
		s, err := validation.Compile(schema)
		if err != nil {
			return // a pattern or a bound the meta-schema refuses
		}
		args := (&seedReader{b: argsSeed}).args(g.names)
		agreeJSON(t, "schema "+schema, s, []byte(args))
		agreeJSON(t, "schema "+schema, s, raw)
	})
}

// seedReader turns fuzz bytes into choices; past the end every choice is 0.
type seedReader struct {
	b     []byte
	i     int
	names []string
}

func (r *seedReader) pick(n int) int {
	if r.i >= len(r.b) {
		return 0
	}
	c := int(r.b[r.i])
	r.i++
	return c % n
}

func (r *seedReader) from(list ...string) string { return list[r.pick(len(list))] }

var (
	fuzzNames   = []string{"a", "b", "c", "é", "a b", "x-1", "0", "~/"}
	fuzzNumbers = []string{"0", "-0", "1", "1.0", "1e2", "1E+2", "2.5", "-3", "0.1", "10", "-1.5e-3",
		"9007199254740993", "12345678901234567890", "1e401", "123456789012345678", "-123456789012345678", "3", "5", "15"}
	fuzzStrings = []string{`""`, `"a"`, `"b"`, `"é"`, `"\u00e9"`, `"ab"`, `"2024-02-30"`, `"2024-01-31"`,
		`"a@b.c"`, `"x"`, `"\ud800"`, `"123"`, `"a\nb"`, `"1.2.3.4"`, "\"\xff\"", `"\""`, `"c"`, `"aé"`}
	fuzzPatterns = []string{`"^a"`, `"b$"`, `"^[0-9]+$"`, `"é"`, `"^.{2}$"`, `"^x-"`, `"[a-c]"`}
	fuzzFormats  = []string{`"date"`, `"email"`, `"uuid"`, `"date-time"`, `"ipv4"`, `"no-such-format"`, `"regex"`}
	fuzzTypes    = []string{`"string"`, `"integer"`, `"number"`, `"boolean"`, `"null"`, `"object"`, `"array"`,
		`["string", "null"]`, `["integer", "string"]`, `["number", "boolean"]`}
	fuzzDrafts = []string{"", "", `"$schema": "http://json-schema.org/draft-04/schema#", `,
		`"$schema": "http://json-schema.org/draft-06/schema#", `, `"$schema": "http://json-schema.org/draft-07/schema#", `,
		`"$schema": "https://json-schema.org/draft/2019-09/schema", `, `"$schema": "https://json-schema.org/draft/2020-12/schema", `}
)

// schemaDoc returns a random object schema of the fast path's keywords,
// with a definition "d" that "$ref"s can reach (recursively too).
func (r *seedReader) schemaDoc() string {
	draft := r.from(fuzzDrafts...)
	def := r.schema(3)
	root := r.objectSchema(3)
	return "{" + draft + `"definitions": {"d": ` + def + `}, "$defs": {"d": ` + def + `}, ` + root[1:]
}

func (r *seedReader) name() string {
	n := fuzzNames[r.pick(len(fuzzNames))]
	r.names = append(r.names, n)
	return n
}

// schema returns a random subschema, nested at most depth more levels.
func (r *seedReader) schema(depth int) string {
	if depth <= 0 {
		return r.scalarSchema()
	}
	switch r.pick(13) {
	case 0, 1:
		return r.scalarSchema()
	case 2, 3:
		return r.objectSchema(depth - 1)
	case 4:
		items := ""
		if r.pick(4) != 0 {
			items = `"items": ` + r.schema(depth-1) + ", "
		}
		return `{` + items + r.keywords(`"minItems": 1`, `"maxItems": 2`, `"type": "array"`) + `}`
	case 5:
		return `{"$ref": "#/definitions/d"}`
	case 6:
		return `{"$ref": "#"}`
	case 7, 8:
		kw := r.from("anyOf", "oneOf", "allOf")
		n := 1 + r.pick(3)
		alts := make([]string, n)
		for i := range alts {
			alts[i] = r.schema(depth - 1)
		}
		return `{"` + kw + `": [` + strings.Join(alts, ", ") + `]}`
	case 9:
		return r.from("true", "false", "{}")
	case 10:
		return `{"$ref": "#/$defs/d", ` + r.keywords(`"type": "object"`, `"minProperties": 1`) + `}`
	case 11: // keywords outside the fast path: their subschema is opaque
		return r.from(`{"type": "array", "uniqueItems": true}`, `{"not": `+r.schema(depth-1)+`}`,
			`{"if": `+r.schema(depth-1)+`, "then": `+r.schema(depth-1)+`}`, `{"items": [`+r.schema(depth-1)+`, {"type": "string"}]}`,
			`{"dependencies": {"a": ["b"]}}`, `{"propertyNames": {"maxLength": 1}}`, `{"allOf": [{"$ref": "#/definitions/d"}, {"not": {}}]}`)
	}
	return r.enumSchema()
}

// keywords returns a random subset of kws, comma-separated.
func (r *seedReader) keywords(kws ...string) string {
	var out []string
	for _, kw := range kws {
		if r.pick(2) == 1 {
			out = append(out, kw)
		}
	}
	if len(out) == 0 {
		return `"title": "t"`
	}
	return strings.Join(out, ", ")
}

func (r *seedReader) scalarSchema() string {
	kws := []string{`"type": ` + r.from(fuzzTypes...)}
	switch r.pick(4) {
	case 0:
		kws = append(kws, `"minLength": `+strconv.Itoa(r.pick(3)), `"maxLength": `+strconv.Itoa(r.pick(4)),
			`"pattern": `+r.from(fuzzPatterns...), `"format": `+r.from(fuzzFormats...))
	case 1:
		n := func() string { return r.from("0", "1", "-1", "2.5", "0.1", "10", "1e2", "-3", "9007199254740993", "3") }
		kws = append(kws, `"minimum": `+n(), `"maximum": `+n(), `"exclusiveMaximum": `+n(),
			`"multipleOf": `+r.from("1", "2", "0.5", "0.1", "3", "1e-2"))
		if r.pick(3) == 0 {
			kws = append(kws, `"exclusiveMinimum": `+n())
		}
	case 2:
		kws = append(kws, `"enum": [`+r.values(3)+`]`)
	case 3:
		kws = append(kws, `"const": `+r.value(1))
	}
	return "{" + r.keywords(kws...) + "}"
}

func (r *seedReader) enumSchema() string {
	return `{"enum": [` + r.values(4) + `]}`
}

func (r *seedReader) objectSchema(depth int) string {
	n := r.pick(4)
	props := make([]string, 0, n)
	var required []string
	for range n {
		name := r.name()
		props = append(props, strconv.Quote(name)+": "+r.schema(depth))
		if r.pick(2) == 1 {
			required = append(required, strconv.Quote(name))
		}
	}
	kws := []string{`"type": "object"`, `"properties": {` + strings.Join(props, ", ") + `}`}
	if len(required) > 0 { // draft 4 refuses an empty list
		kws = append(kws, `"required": [`+strings.Join(required, ", ")+`]`)
	}
	switch r.pick(4) {
	case 0:
		kws = append(kws, `"additionalProperties": false`)
	case 1:
		kws = append(kws, `"additionalProperties": `+r.schema(depth-1))
	case 2:
		kws = append(kws, `"patternProperties": {`+r.from(fuzzPatterns...)+`: `+r.schema(depth-1)+`}`)
	}
	if r.pick(3) == 0 {
		kws = append(kws, `"minProperties": `+strconv.Itoa(r.pick(3)), `"maxProperties": `+strconv.Itoa(r.pick(4)))
	}
	return "{" + r.keywords(kws...) + "}"
}

// values returns up to n random JSON values, comma-separated.
func (r *seedReader) values(n int) string {
	k := 1 + r.pick(n)
	vs := make([]string, k)
	for i := range vs {
		vs[i] = r.value(1)
	}
	return strings.Join(vs, ", ")
}

// value returns a random JSON value nested at most depth levels.
func (r *seedReader) value(depth int) string {
	switch r.pick(8) {
	case 0, 1:
		return r.from(fuzzStrings...)
	case 2, 3:
		return r.from(fuzzNumbers...)
	case 4:
		return r.from("true", "false", "null")
	case 5:
		if depth > 0 {
			return "[" + r.values(3) + "]"
		}
	case 6:
		if depth > 0 {
			return r.object(depth-1, nil)
		}
	}
	return r.from(fuzzStrings...)
}

// args returns random arguments: an object whose keys come mostly from
// names (the schema's properties), with blanks, escapes and, now and
// then, a duplicate key or a stray byte.
func (r *seedReader) args(names []string) string {
	return r.from("", " ", "\n") + r.object(3, names) + r.from("", "", "", " ", "x", "}")
}

func (r *seedReader) object(depth int, names []string) string {
	n := r.pick(5)
	members := make([]string, 0, n)
	for range n {
		var key string
		switch {
		case len(names) > 0 && r.pick(3) != 0:
			key = strconv.Quote(names[r.pick(len(names))])
		case r.pick(4) == 0 && len(members) > 0:
			m := members[r.pick(len(members))]
			key = m[:strings.Index(m, ":")] // a duplicate
		default:
			key = r.from(`"a"`, `"\u0061"`, `"b"`, `"é"`, `"x-1"`, `"z"`, `"a b"`, `"~/"`)
		}
		var val string
		switch {
		case depth > 0 && r.pick(4) == 0:
			val = r.object(depth-1, names)
		case depth > 0 && r.pick(4) == 0:
			items := make([]string, r.pick(4))
			for i := range items {
				items[i] = r.value(depth - 1)
			}
			val = "[" + strings.Join(items, r.from(",", " , ")) + "]"
		default:
			val = r.value(0)
		}
		members = append(members, key+r.from(":", " : ")+val)
	}
	return "{" + strings.Join(members, r.from(",", ", ", ",\n")) + "}"
}
