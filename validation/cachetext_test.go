package validation_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/validation"
)

// cacheTextCases are schema texts whose compiled forms differ, or whose
// texts differ only in what compaction removes, and texts that do not
// compile: what a cache recognizing texts must keep apart.
var cacheTextCases = []string{
	`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`,
	`{ "type": "object", "properties": { "city": { "type": "string" } }, "required": [ "city" ] }`,
	"{\n\t\"type\": \"object\",\n\t\"properties\": {\"city\": {\"type\": \"string\"}},\n\t\"required\": [\"city\"]\n}\n",
	`{"type":"object","properties":{"city":{"type":"string"}},"required":["town"]}`,
	`{"type":"object","properties":{"city":{"type":"integer"}}}`,
	`{"type":"object","properties":{"city":{"type":"string","description":"a \" b"}}}`,
	`{"type":"object","properties":{"city":{"type":"string","description":"a  b"}}}`,
	`{"type":"object","properties":{"city":{"type":"string","description":"a b"}}}`,
	`{"$schema":"https://example.com/unknown","type":"object"}`,
	`{"type":"object"}`,
	`{"type":"object"} `,
	`true`,
	`false`,
	``,
	` `,
	`{`,
	`{"type":"object"}{}`,
	`{"city":""}`,
	`{"type":"object","properties":{"a":{"$ref":"https://example.com/x.json"}}}`,
	strings.Repeat(`{"items":`, 200) + `{}` + strings.Repeat(`}`, 200),
	`{"type":"object","properties":{"x":{"type":"string","pattern":"("}}}`,
}

// checkCacheAgainstCompile gets every schema of seq, in order, from one
// small cache (so that texts are evicted and come back) and holds each
// answer to Compile's, which compiles the schema afresh: the same schema
// text (String), the same ignored meta-schema, the same error. A cache
// that handed one text another's entry fails it.
func checkCacheAgainstCompile(t *testing.T, seq []any) {
	t.Helper()
	c := validation.NewCacheSize(8)
	for i, schema := range seq {
		got, err := c.Get(schema)
		want, werr := validation.Compile(schema)
		switch {
		case (err == nil) != (werr == nil):
			t.Fatalf("Get(%d: %.80q) error = %v, Compile's = %v", i, schema, err, werr)
		case err != nil:
			if !sameCompileError(err, werr) {
				t.Fatalf("Get(%d: %.80q) = %v, Compile's = %v", i, schema, err, werr)
			}
		case got.String() != want.String() || got.IgnoredMetaSchema() != want.IgnoredMetaSchema():
			t.Fatalf("Get(%d: %.80q) = %s (ignored %q), Compile's = %s (ignored %q)",
				i, schema, got, got.IgnoredMetaSchema(), want, want.IgnoredMetaSchema())
		}
	}
}

// sameCompileError reports whether a and b are the same error of Compile:
// the same text, or both the schema compiler's refusal, which names one
// of the violations it found, not always the same one.
func sameCompileError(a, b error) bool {
	for _, sentinel := range []error{validation.ErrTooComplex, validation.ErrNoKeyword, validation.ErrRefused} {
		if errors.Is(a, sentinel) != errors.Is(b, sentinel) {
			return false
		}
	}
	const compiler = "validation: compile: jsonschema toolguard:///tool-schema.json compilation failed: "
	return a.Error() == b.Error() || strings.HasPrefix(a.Error(), compiler) && strings.HasPrefix(b.Error(), compiler)
}

// textForms returns text as each form a schema's JSON text may take, each
// a fresh value (so that Get cannot recognize it by its identity).
func textForms(text string) []any {
	return []any{text, []byte(text), json.RawMessage(text), string([]byte(text))}
}

// TestCacheTextMatchesCompile: a cache fed each case in every text form,
// twice over and interleaved, gives what Compile gives for each.
func TestCacheTextMatchesCompile(t *testing.T) {
	t.Parallel()
	var seq []any
	for range 2 {
		for _, text := range cacheTextCases {
			seq = append(seq, textForms(text)...)
		}
		for i := len(cacheTextCases) - 1; i >= 0; i-- {
			seq = append(seq, []byte(cacheTextCases[i]), cacheTextCases[i])
		}
	}
	checkCacheAgainstCompile(t, seq)
}

// TestCacheTextFindsCompiled: a schema text in a fresh slice each time (a
// request's tool, as a proxy reads it) is compiled once, whatever its
// form, and one whose text differs only in white space shares the
// compiled schema of the compact one.
func TestCacheTextFindsCompiled(t *testing.T) {
	t.Parallel()
	c := validation.NewCache()
	first, err := c.Get([]byte(cacheTextCases[0]))
	if err != nil {
		t.Fatal(err)
	}
	for i, schema := range append(append(textForms(cacheTextCases[0]), textForms(cacheTextCases[1])...), textForms(cacheTextCases[2])...) {
		got, err := c.Get(schema)
		if err != nil || got != first {
			t.Fatalf("Get(%d: %q) = %p, %v, want the schema compiled first (%p)", i, schema, got, err, first)
		}
	}
	other, err := c.Get([]byte(cacheTextCases[3]))
	if err != nil || other == first {
		t.Fatalf("Get(%q) = %p, %v: want another schema than %p", cacheTextCases[3], other, err, first)
	}
	if n := c.Len(); n != 2 {
		t.Errorf("Len() = %d, want 2", n)
	}
}

// FuzzCacheText holds a cache's answers for schema texts, in every form
// and in an order that brings texts back, to Compile's.
func FuzzCacheText(f *testing.F) {
	for i, a := range cacheTextCases {
		f.Add(a, cacheTextCases[(i+1)%len(cacheTextCases)])
	}
	for _, s := range wireSchemas(f) {
		f.Add(s, cacheTextCases[0])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		seq := append(textForms(a), textForms(b)...)
		seq = append(seq, []byte(a), json.RawMessage(b), a, b)
		checkCacheAgainstCompile(t, seq)
	})
}

// wireSchemas returns the tool schemas of the recorded requests under
// testdata/wire, as they are written there, and each request whole.
func wireSchemas(f *testing.F) []string {
	files, err := filepath.Glob("../testdata/wire/*/*request*.json")
	if err != nil || len(files) == 0 {
		f.Fatalf("no recorded requests: %v", err)
	}
	var out []string
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, string(data))
		var walk func(json.RawMessage)
		walk = func(raw json.RawMessage) {
			var obj map[string]json.RawMessage
			if json.Unmarshal(raw, &obj) == nil {
				for k, v := range obj {
					switch k {
					case "parameters", "input_schema", "parametersJsonSchema", "json":
						out = append(out, string(v))
					}
					walk(v)
				}
				return
			}
			var arr []json.RawMessage
			if json.Unmarshal(raw, &arr) == nil {
				for _, v := range arr {
					walk(v)
				}
			}
		}
		walk(data)
	}
	return out
}

// BenchmarkCacheGet looks up a compiled schema: "fresh-text" is a tool's
// schema as a proxy reads it from each request (the same text in a new
// slice every time), "same-map" a schema value the caller keeps,
// "rebuilt-map" one it rebuilds for every call.
func BenchmarkCacheGet(b *testing.B) {
	text := cacheTextCases[0]
	fresh := make([]any, 64) // boxed before the loop, which then allocates nothing itself
	for i := range fresh {
		fresh[i] = json.RawMessage(text)
	}
	kept := weatherSchema()
	for _, bc := range []struct {
		name   string
		schema func(i int) any
	}{
		{"fresh-text", func(i int) any { return fresh[i%len(fresh)] }},
		{"same-map", func(int) any { return kept }},
		{"rebuilt-map", func(int) any { return weatherSchema() }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			c := validation.NewCache()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := c.Get(bc.schema(i)); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}
