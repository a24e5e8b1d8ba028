package validation_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/toolguard/toolguard/validation"
)

// Schemas come from tools: MCP servers, plugins, configuration. These tests
// show that a bad one fails to compile with an error, never a panic, a hang,
// a request or a file read.

func TestBadSchemasFailToCompile(t *testing.T) {
	t.Parallel()
	deep := func(open, close string, n int) string {
		return strings.Repeat(open, n) + `{}` + strings.Repeat(close, n)
	}
	tests := []struct {
		name, schema string
		tooComplex   bool // the error wraps ErrTooComplex
	}{
		{"not JSON", `{"type": `, false},
		{"not a schema", `{"type": 42}`, false},
		{"bad keyword value", `{"minimum": "x"}`, false},
		{"required not an array", `{"required": "a"}`, false},
		{"regex Go cannot compile", `{"pattern": "(?<=x)y"}`, false},
		{"$ref to itself", `{"$ref": "#"}`, false},
		{"$ref loop through definitions", `{"$ref": "#/definitions/a", "definitions": {"a": {"$ref": "#/definitions/b"}, "b": {"$ref": "#/definitions/a"}}}`, false},
		{"$ref loop under a property", `{"properties": {"x": {"$ref": "#/definitions/a"}}, "definitions": {"a": {"$ref": "#/definitions/b"}, "b": {"$ref": "#/definitions/a"}}}`, false},
		{"$ref loop through allOf", `{"$schema": "https://json-schema.org/draft/2020-12/schema", "$defs": {"a": {"allOf": [{"$ref": "#/$defs/a"}]}}, "$ref": "#/$defs/a"}`, false},
		{"$ref loop through anyOf", `{"definitions": {"a": {"anyOf": [{"$ref": "#/definitions/a"}, {"type": "string"}]}}, "properties": {"x": {"$ref": "#/definitions/a"}}}`, false},
		{"$ref to a missing definition", `{"$ref": "#/definitions/missing"}`, false},
		{"$schema not a string", `{"$schema": 42}`, false},
		// Without the depth bound these took minutes: the compiler's cost
		// grows with the cube of the nesting depth.
		{"items nested 2,000 deep", deep(`{"items":`, `}`, 2000), true},
		{"not nested 20,000 deep", deep(`{"not":`, `}`, 20000), true},
		{"properties nested 100 deep", deep(`{"properties":{"a":`, `}}`, 100), true},
		{"billion laughs", laughs(20), true},
		{"recursion that branches", `{"anyOf": [{"type": "array", "items": {"$ref": "#"}}, {"type": "array", "items": {"$ref": "#"}}]}`, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := validation.Compile(tc.schema)
			if err == nil {
				t.Fatalf("Compile(%.80s) = %v, want an error", tc.schema, s)
			}
			if !strings.HasPrefix(err.Error(), "validation: ") {
				t.Errorf("error %q lacks the validation: prefix", err)
			}
			if got := errors.Is(err, validation.ErrTooComplex); got != tc.tooComplex {
				t.Errorf("Compile(%.80s) = %v; errors.Is(ErrTooComplex) = %v, want %v", tc.schema, err, got, tc.tooComplex)
			}
		})
	}
}

// laughs returns a schema of n definitions, each referencing the next twice
// through allOf: 2^n subschema checks per value if it were accepted.
func laughs(n int) string {
	var defs []string
	for i := range n {
		defs = append(defs, fmt.Sprintf(`"d%d": {"allOf": [{"$ref": "#/definitions/d%d"}, {"$ref": "#/definitions/d%d"}]}`, i, i+1, i+1))
	}
	defs = append(defs, fmt.Sprintf(`"d%d": {"type": "string"}`, n))
	return `{"definitions": {` + strings.Join(defs, ", ") + `}, "properties": {"x": {"$ref": "#/definitions/d0"}}}`
}

// TestComplexityBoundKeepsRealSchemas: what real schemas do stays accepted:
// recursion that descends (trees, JSON values), wide anyOf and allOf,
// a moderate fan-out of references, nesting up to the limit.
func TestComplexityBoundKeepsRealSchemas(t *testing.T) {
	t.Parallel()
	var wide []string
	for i := range 10000 {
		wide = append(wide, fmt.Sprintf(`{"const": %d}`, i))
	}
	tests := map[string]string{
		"binary tree":  `{"type": "object", "properties": {"value": {"type": "integer"}, "left": {"$ref": "#"}, "right": {"$ref": "#"}}}`,
		"any JSON":     `{"definitions": {"v": {"anyOf": [{"type": ["string", "number", "boolean", "null"]}, {"type": "array", "items": {"$ref": "#/definitions/v"}}, {"type": "object", "additionalProperties": {"$ref": "#/definitions/v"}}]}}, "type": "object", "additionalProperties": {"$ref": "#/definitions/v"}}`,
		"anyOf 10,000": `{"properties": {"x": {"anyOf": [` + strings.Join(wide, ",") + `]}}}`,
		"laughs 12":    laughs(12),
		"nesting 60":   strings.Repeat(`{"properties":{"a":`, 60) + `{}` + strings.Repeat(`}}`, 60),
	}
	for name, schema := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s, err := validation.Compile(schema)
			if err != nil {
				t.Fatalf("Compile = %v, want it accepted", err)
			}
			if err := s.ValidateJSON([]byte(`{}`)); err != nil {
				t.Errorf("ValidateJSON({}) = %v, want nil", err)
			}
		})
	}
}

// TestNothingIsLoaded: a raw TCP listener on loopback counts every
// connection, whatever the protocol; a file holding a valid schema at the
// referenced path would make the schema compile if it were read.
func TestNothingIsLoaded(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			c.Close()
		}
	}()
	addr := ln.Addr().String()

	dir := t.TempDir()
	file := filepath.Join(dir, "defs.json")
	if err := os.WriteFile(file, []byte(`{"type": "string"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := map[string]string{
		"http $ref":               `{"properties": {"x": {"$ref": "http://` + addr + `/defs.json"}}}`,
		"https $ref":              `{"properties": {"x": {"$ref": "https://` + addr + `/defs.json"}}}`,
		"file $ref":               `{"properties": {"x": {"$ref": "file://` + file + `"}}}`,
		"relative $ref":           `{"properties": {"x": {"$ref": "defs.json"}}}`,
		"parent-relative $ref":    `{"properties": {"x": {"$ref": "../defs.json"}}}`,
		"absolute path $ref":      `{"properties": {"x": {"$ref": "` + file + `"}}}`,
		"$id file base":           `{"$id": "file://` + dir + `/", "properties": {"x": {"$ref": "defs.json"}}}`,
		"$id http base":           `{"$id": "http://` + addr + `/", "properties": {"x": {"$ref": "defs.json"}}}`,
		"$ref in allOf":           `{"allOf": [{"$ref": "http://` + addr + `/defs.json"}]}`,
		"$dynamicRef remote":      `{"$schema": "https://json-schema.org/draft/2020-12/schema", "properties": {"x": {"$dynamicRef": "http://` + addr + `/defs.json#meta"}}}`,
		"urn $ref":                `{"properties": {"x": {"$ref": "urn:example:defs"}}}`,
		"remote ref in resources": `{"properties": {"x": {"$ref": "https://example.test/a.json"}}}`,
	}
	for name, schema := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			opts := []validation.Option{}
			if name == "remote ref in resources" {
				// A supplied document that itself refers onwards.
				opts = append(opts, validation.WithResource("https://example.test/a.json", `{"$ref": "http://`+addr+`/b.json"}`))
			}
			s, err := validation.Compile(schema, opts...)
			if !errors.Is(err, validation.ErrRefused) {
				t.Errorf("Compile(%s) = %v, %v; want an error wrapping ErrRefused", schema, s, err)
			}
		})
	}
	t.Run("unknown $schema on loopback", func(t *testing.T) {
		t.Parallel()
		for _, meta := range []string{"http://" + addr + "/meta.json", "https://" + addr + "/meta.json", "file://" + file} {
			s, err := validation.Compile(`{"$schema": "` + meta + `", "type": "object"}`)
			if err != nil || s.IgnoredMetaSchema() != meta {
				t.Errorf("Compile with $schema %s = %v; want it compiled with the $schema ignored", meta, err)
			}
		}
	})
	t.Cleanup(func() {
		ln.Close()
		if n := conns.Load(); n != 0 {
			t.Errorf("the loopback listener accepted %d connections, want 0", n)
		}
	})
}

// TestHugeEnum: an enum of 100,000 values compiles and validates, and the
// message lists 20 of them.
func TestHugeEnum(t *testing.T) {
	t.Parallel()
	vals := make([]string, 100000)
	for i := range vals {
		vals[i] = fmt.Sprintf(`"v%d"`, i)
	}
	s, err := validation.Compile(`{"properties": {"x": {"enum": [` + strings.Join(vals, ",") + `]}}}`)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.ValidateJSON([]byte(`{"x": "v99999"}`)); err != nil {
		t.Errorf("the last enum value is rejected: %v", err)
	}
	got := violations(t, s, `{"x": "nope"}`)
	if len(got) != 1 || !strings.HasSuffix(got[0].Message, `"v19", and 99980 more`) || len(got[0].Message) > 400 {
		t.Errorf("violation = %+v, want one enum violation listing 20 values and 99980 more", got)
	}
}

// TestCatastrophicPatterns: patterns that take exponential time in a
// backtracking engine run in linear time in Go's RE2-style regexp. The
// test has no clock: its proof is that it finishes at all under go test's
// timeout (2^100000 steps would not), and that matching allocates a
// bounded amount independent of the input's length.
func TestCatastrophicPatterns(t *testing.T) {
	n := 100000
	if raceEnabled {
		n = 20000 // the race detector makes 100,000 take 16 s
	}
	long := strings.Repeat("a", n) + "!"
	for _, pattern := range []string{`^(a+)+$`, `^(a|a)*$`, `^(a|aa)+$`, `^(.*a){20}$`} {
		s, err := validation.Compile(`{"properties": {"x": {"type": "string", "pattern": ` + quote(pattern) + `}, "y": {"type": "object", "patternProperties": {` + quote(pattern) + `: {"type": "string"}}}}}`)
		if err != nil {
			t.Fatalf("Compile(pattern %s) = %v", pattern, err)
		}
		v := map[string]any{"x": long, "y": map[string]any{long: 1}}
		var verr error
		allocs := testing.AllocsPerRun(1, func() { verr = s.Validate(v) })
		if verr == nil {
			t.Errorf("pattern %s accepted %d characters ending in '!'", pattern, len(long))
		}
		t.Logf("pattern %s: %v allocations for %d characters", pattern, allocs, len(long))
		if allocs > 400 {
			t.Errorf("pattern %s: %v allocations per validation of a %d-character string, want <= 400", pattern, allocs, len(long))
		}
	}
}

// TestArgumentDepth: arguments up to MaxDepth levels deep are decoded and
// validated; deeper ones, up to and beyond encoding/json's own limit of
// 10,000, are one root violation saying so, even against a recursive schema
// whose validation cost would grow with the cube of the depth.
func TestArgumentDepth(t *testing.T) {
	t.Parallel()
	s, err := validation.Compile(`{"type": ["object", "array", "string"], "additionalProperties": {"$ref": "#"}, "items": {"$ref": "#"}}`)
	if err != nil {
		t.Fatal(err)
	}
	nest := func(levels int) string { // levels counts the root object
		return `{"a":` + strings.Repeat("[", levels-1) + `1` + strings.Repeat("]", levels-1) + `}`
	}
	const want = "arguments are nested deeper than 128 levels of arrays and objects; send a flatter value"
	for _, levels := range []int{validation.MaxDepth, validation.MaxDepth + 1, 10001, 100000} {
		args := []byte(nest(levels))
		err := s.ValidateJSON(args)
		var ve *validation.Error
		if !errors.As(err, &ve) || len(ve.Violations) != 1 {
			t.Fatalf("%d levels: ValidateJSON = %v, want one violation", levels, err)
		}
		v := ve.Violations[0]
		if levels <= validation.MaxDepth {
			// Valid but for the 1 at the bottom, which is no string.
			if v.Keyword != "type" || strings.Count(v.Path, "/0") != levels-1 {
				t.Errorf("%d levels: violation %+v, want a type violation at the bottom", levels, v)
			}
			continue
		}
		if v.Path != "" || v.Keyword != "json" || v.Message != want {
			t.Errorf("%d levels: violation %+v, want the root depth violation", levels, v)
		}
	}
	var deep any = "x"
	for range validation.MaxDepth + 1 {
		deep = []any{deep}
	}
	if err := s.Validate(deep); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Validate(%d nested arrays) = %v, want the depth violation", validation.MaxDepth+1, err)
	}
}

// TestWorkBound: a schema whose subschemas apply many times to each value
// accepts fewer values (MaxWork / applications), so that a 500-way anyOf
// cannot be run against 100,000 keys; ordinary schemas keep MaxValues.
func TestWorkBound(t *testing.T) {
	t.Parallel()
	alts := make([]string, 500)
	for i := range alts {
		alts[i] = fmt.Sprintf(`{"const": %d}`, i)
	}
	wide, err := validation.Compile(`{"anyOf": [` + strings.Join(alts, ",") + `]}`)
	if err != nil {
		t.Fatal(err)
	}
	object := func(keys int) map[string]any {
		m := make(map[string]any, keys)
		for i := range keys {
			m[fmt.Sprintf("k%d", i)] = json.Number("1")
		}
		return m
	}
	// 501 applications to the arguments object: 2^20 / 501 = 2,092 values.
	if got := validation.MaxValuesOf(wide); got != 2092 {
		t.Errorf("MaxValuesOf(500-way anyOf) = %d, want 2092", got)
	}
	for keys, want := range map[int]string{
		2091: `(root): expected 0, got {"k0":1`,
		2092: "(root): arguments hold 2093 values, more than the 2092 accepted; send fewer",
	} {
		v := object(keys)
		b, _ := json.Marshal(v)
		for name, err := range map[string]error{"Validate": wide.Validate(v), "ValidateJSON": wide.ValidateJSON(b)} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s(%d keys) = %.120v, want %q", name, keys, err, want)
			}
		}
	}
	weather, err := validation.Compile(`{"type": "object", "properties": {"city": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}}}}`)
	if err != nil {
		t.Fatal(err)
	}
	if got := validation.MaxValuesOf(weather); got != validation.MaxValues {
		t.Errorf("MaxValuesOf(weather) = %d, want MaxValues", got)
	}
}
