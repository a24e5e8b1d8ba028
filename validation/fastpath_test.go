package validation_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"reflect"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/corpus/bfcl"
	"github.com/toolguard/toolguard/internal/exactjson"
	"github.com/toolguard/toolguard/validation"
)

// The fast path (fastcompile.go) answers only "valid"; every other call
// goes to the reference path, which decides and reports. These tests prove,
// on every input they have, that ValidateJSON and Parse return exactly what
// the reference path alone returns, and that the fast path's own verdicts
// ("pass", and "fail" which it uses inside oneOf) never contradict it.

// fastTally counts the fast path's verdicts.
type fastTally map[string]int

// agreeJSON checks s on tool-call arguments args: ValidateJSON and Parse
// equal their reference-path versions, and the fast path's verdict, when it
// gives one, is the reference path's. It returns the verdict.
func agreeJSON(t *testing.T, what string, s *validation.Schema, args []byte) string {
	t.Helper()
	want := validation.ValidateJSONReference(s, args)
	got := s.ValidateJSON(args)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s: ValidateJSON(%s) = %v, want %v (the reference path's)", what, args, got, want)
	}
	wantV, wantE := validation.ParseReference(s, args)
	gotV, gotE := s.Parse(args)
	if !reflect.DeepEqual(gotV, wantV) || !reflect.DeepEqual(gotE, wantE) {
		t.Errorf("%s: Parse(%s) = %v, %v, want %v, %v (the reference path's)", what, args, gotV, gotE, wantV, wantE)
	}
	trimmed := bytes.TrimSpace(args)
	if len(trimmed) == 0 {
		trimmed = []byte("{}")
	}
	verdict := validation.FastVerdict(s, trimmed)
	if trimmed[0] != '{' {
		return verdict // ValidateJSON does not ask the fast path
	}
	checkVerdict(t, what, args, verdict, want == nil)
	return verdict
}

// checkVerdict fails t when the fast path's verdict contradicts the
// reference path's.
func checkVerdict(t *testing.T, what string, data []byte, verdict string, valid bool) {
	t.Helper()
	if verdict == "pass" && !valid || verdict == "fail" && valid {
		t.Errorf("%s: the fast path says %s on %s, the reference path says valid=%v", what, verdict, data, valid)
	}
}

// TestFastPathAgreesBFCL runs every BFCL call, every violation and every
// corruption of TestBFCLCorruptions through both paths.
func TestFastPathAgreesBFCL(t *testing.T) {
	t.Parallel()
	c := openCorpus(t)
	valid, invalid, corrupted := fastTally{}, fastTally{}, fastTally{}
	for _, call := range c.Calls {
		valid[agreeJSON(t, "call "+call.ID, c.schemas[call.SchemaRef], call.Args)]++
	}
	for _, call := range c.Violations {
		invalid[agreeJSON(t, "violation "+call.ID, c.schemas[call.SchemaRef], call.Args)]++
	}
	for _, tc := range corruptions {
		for _, call := range sample(c.Calls) {
			args := bfcl.Decode(call.Args).(map[string]any)
			if name, _ := tc.apply(c.params[call.SchemaRef], args); name == "" {
				continue
			}
			b, err := exactjson.Encode(args)
			if err != nil {
				t.Fatal(err)
			}
			corrupted[agreeJSON(t, tc.name+" of call "+call.ID, c.schemas[call.SchemaRef], b)]++
		}
	}
	t.Logf("fast path verdicts: %d calls %v; %d violations %v; corruptions %v",
		len(c.Calls), valid, len(c.Violations), invalid, corrupted)
	// Every shipped schema is inside the fast path, and it decides every
	// valid call alone; a keyword or a value it stops handling shows here.
	if valid["pass"] != len(c.Calls) {
		t.Errorf("the fast path accepts %d of %d valid calls, want all", valid["pass"], len(c.Calls))
	}
}

// TestFastPathAgreesSuite runs every case of the JSON-Schema-Test-Suite
// (every draft, optional tests included) whose schema compiles through both
// paths: the fast path on the instance's JSON text, the
// reference path on the decoded instance (Schema.Check).
func TestFastPathAgreesSuite(t *testing.T) {
	t.Parallel()
	suite := openSuite(t)
	drafts := map[string]validation.Draft{
		"draft4": validation.Draft4, "draft6": validation.Draft6, "draft7": validation.Draft7,
		"draft2019-09": validation.Draft2019, "draft2020-12": validation.Draft2020,
	}
	remotes := suiteRemotes(t, suite)
	tally := fastTally{}
	claimed := 0
	for dir, draft := range drafts {
		var files []string
		err := fs.WalkDir(suite, path.Join("tests", dir), func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && path.Ext(p) == ".json" {
				files = append(files, p)
			}
			return err
		})
		if err != nil {
			continue // a draft the shipped subset does not hold
		}
		opts := append(remotes, validation.WithDefaultDraft(draft))
		for _, file := range files {
			b, err := fs.ReadFile(suite, file)
			if err != nil {
				t.Fatal(err)
			}
			var groups []suiteGroup
			dec := json.NewDecoder(bytes.NewReader(b))
			dec.UseNumber()
			if err := dec.Decode(&groups); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			for _, g := range groups {
				s, err := validation.Compile(g.Schema, opts...)
				if err != nil {
					continue
				}
				for _, tc := range g.Tests {
					data, err := exactjson.Encode(tc.Data)
					if err != nil {
						t.Fatal(err)
					}
					verdict := validation.FastVerdict(s, data)
					tally[verdict]++
					if verdict == "unsupported" {
						continue
					}
					claimed++
					what := file + ": " + g.Description + " / " + tc.Description
					checkVerdict(t, what, data, verdict, s.Check(tc.Data) == nil)
					if bytes.HasPrefix(data, []byte("{")) {
						agreeJSON(t, what, s, data)
					}
				}
			}
		}
	}
	t.Logf("JSON-Schema-Test-Suite: %d cases whose schema compiles; fast path verdicts %v", claimed, tally)
	if claimed == 0 {
		t.Error("no suite case is inside the fast path")
	}
}

// TestFastPathEdges runs the inputs where a one-pass decoder is most likely
// to part from encoding/json and the reference path's checks through both
// paths, and pins which ones the fast path leaves to the reference path.
func TestFastPathEdges(t *testing.T) {
	t.Parallel()
	s, err := validation.Compile(`{"type": "object", "properties": {"a": {"type": "string", "pattern": "^[a-zé]*$", "maxLength": 3},
		"n": {"type": "integer", "minimum": -5, "maximum": 1e2}, "e": {"enum": ["x", 1, null]},
		"o": {"oneOf": [{"type": "integer"}, {"type": "number", "minimum": 2}]},
		"p": {"oneOf": [{"type": "object"}, {"properties": {"k": {"type": "string"}}}]}}, "required": ["a"]}`)
	if err != nil {
		t.Fatal(err)
	}
	wide := func(dup bool) string {
		var b strings.Builder
		b.WriteString(`{"a": "x"`)
		for i := range 40 {
			fmt.Fprintf(&b, `, "k%d": %d`, i, i)
		}
		if dup {
			b.WriteString(`, "k7": 0`)
		}
		return b.String() + "}"
	}
	tests := []struct {
		name, args, verdict string
	}{
		{"valid", `{"a": "ab", "n": 5, "e": null}`, "pass"},
		{"blank means {}", " \n", "fail"},
		{"unicode blanks around", "\u00a0{\"a\": \"\"}\u2003", "pass"},
		{"escaped string", `{"a": "\u00e9\u00e9"}`, "pass"},
		{"escaped key is the same key", `{"a": "x", "\u0061": "y"}`, "defer"},
		{"duplicate key", `{"a": "x", "a": "x"}`, "defer"},
		{"duplicate among many keys", wide(true), "defer"},
		{"many keys", wide(false), "pass"},
		{"invalid UTF-8", "{\"a\": \"\xff\"}", "defer"},
		{"control character in a string", "{\"a\": \"\x01\"}", "defer"},
		{"bad escape", `{"a": "\x"}`, "defer"},
		{"integer written 1.0", `{"a": "", "n": 1.0}`, "pass"},
		{"integer written 1e2", `{"a": "", "n": 1e2}`, "pass"},
		{"above maximum", `{"a": "", "n": 100.5}`, "fail"},
		{"-0", `{"a": "", "n": -0}`, "pass"},
		{"number too long", `{"a": "", "x": 1` + strings.Repeat("0", 120) + `}`, "defer"},
		{"exponent too big", `{"a": "", "x": 1e401}`, "defer"},
		{"leading zero", `{"a": "", "n": 01}`, "defer"},
		{"enum number by value", `{"a": "", "e": 1.0}`, "pass"},
		{"oneOf both match", `{"a": "", "o": 3}`, "fail"},
		{"oneOf one matches", `{"a": "", "o": 2.5}`, "pass"},
		{"oneOf whose last alternative fails inside", `{"a": "", "p": {"k": 1}, "k": 2}`, "pass"},
		{"trailing data", `{"a": ""} {}`, "defer"},
		{"trailing comma", `{"a": "",}`, "defer"},
		{"not an object", `["a"]`, "fail"}, // ValidateJSON does not ask the fast path
		{"too deep", `{"a": "", "x": ` + strings.Repeat("[", 200) + strings.Repeat("]", 200) + `}`, "defer"},
		{"missing required", `{"n": 1}`, "fail"},
		{"truncated", `{"a": "x`, "defer"},
		{"lone surrogates decode to one key", `{"a": "", "\ud800": 1, "\udc00": 2}`, "defer"},
		{"escaped quote in a key", `{"a": "", "x\"y": 1}`, "pass"},
		{"integer beyond int64", `{"a": "", "n": -99999999999999999999}`, "fail"},
		{"integer of 18 digits", `{"a": "", "n": 100000000000000000}`, "fail"},
		{"escaped pattern character", `{"a": "\u00e9\u0041"}`, "fail"},
		{"duplicate key in a nested object", `{"a": "", "p": {"k": "x", "\u006b": "y"}}`, "defer"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := agreeJSON(t, tc.name, s, []byte(tc.args)); got != tc.verdict {
				t.Errorf("FastVerdict(%q) = %s, want %s", tc.args, got, tc.verdict)
			}
		})
	}
}

// TestFastPathOpaque checks that a keyword outside the fast path sends only
// the values it applies to to the reference path.
func TestFastPathOpaque(t *testing.T) {
	t.Parallel()
	s, err := validation.Compile(`{"type": "object", "properties": {"city": {"type": "string"},
		"tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": true}}, "required": ["city"]}`)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ args, verdict string }{
		{`{"city": "Paris"}`, "pass"},
		{`{"city": 1}`, "fail"},
		{`{"city": "Paris", "tags": ["a", "b"]}`, "defer"},
		{`{"city": "Paris", "tags": ["a", "a"]}`, "defer"},
	}
	for _, tc := range tests {
		if got := agreeJSON(t, tc.args, s, []byte(tc.args)); got != tc.verdict {
			t.Errorf("FastVerdict(%s) = %s, want %s", tc.args, got, tc.verdict)
		}
	}
}

// TestFastPathClosedObjects runs schemas compiled WithClosedObjects (the
// closed additionalProperties it adds, nested, in anyOf branches and in
// $defs reached by $ref) through both paths: an invented key at any depth
// must never pass the fast path.
func TestFastPathClosedObjects(t *testing.T) {
	t.Parallel()
	s, err := validation.Compile(`{"type": "object", "properties": {
		"a": {"type": "object", "properties": {"b": {"type": "integer"}}},
		"l": {"type": "array", "items": {"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]}},
		"u": {"anyOf": [{"type": "object", "properties": {"p": {"type": "integer"}}}, {"type": "string"}]},
		"r": {"$ref": "#/$defs/d"}},
		"$defs": {"d": {"type": "object", "properties": {"q": {"type": "boolean"}}}}}`, validation.WithClosedObjects())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ args, verdict string }{
		{`{"a": {"b": 1}, "l": [{"x": "y"}], "u": {"p": 1}, "r": {"q": true}}`, "pass"},
		{`{"z": 1}`, "fail"},
		{`{"a": {"b": 1, "c": 2}}`, "fail"},
		{`{"l": [{"x": "y", "extra": 1}]}`, "fail"},
		{`{"u": {"p": 1, "extra": 1}}`, "fail"},
		{`{"u": "s"}`, "pass"},
		{`{"r": {"q": true, "extra": 1}}`, "fail"},
		{`{"a": {"\u0062": 1}}`, "pass"},
		{`{"a": {"b": 1, "\u0062": 2}}`, "defer"},
	}
	for _, tc := range tests {
		if got := agreeJSON(t, "closed", s, []byte(tc.args)); got != tc.verdict {
			t.Errorf("fast path verdict on %s = %s, want %s", tc.args, got, tc.verdict)
		}
	}
}
