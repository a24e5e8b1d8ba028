package validation_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/toolguard/toolguard/corpus/bfcl"
	"github.com/toolguard/toolguard/strip"
	"github.com/toolguard/toolguard/validation"
)

// The tests in this file run toolguard's validator over the real-world BFCL
// corpus: the subset shipped in corpus, or the full corpus when
// $TOOLGUARD_CORPUS names it (e.g. TOOLGUARD_CORPUS=../shared/corpus); the
// counts they expect are the loaded corpus's Want figures. Under -short they
// check every shortStride-th call instead of all of them.

const shortStride = 7

// corpusSchemas is the corpus with every tool's schema compiled, once per
// test binary.
type corpusSchemas struct {
	*bfcl.Corpus
	schemas map[string]*validation.Schema // by tool id
	params  map[string]map[string]any     // the tool's "parameters", decoded
	errs    map[string]error              // compile errors by tool id
}

var (
	corpusOnce sync.Once
	corpusVal  *corpusSchemas
)

func openCorpus(t testing.TB) *corpusSchemas {
	t.Helper()
	c, err := bfcl.Load()
	if err != nil {
		t.Fatal(err)
	}
	corpusOnce.Do(func() {
		cs := &corpusSchemas{
			Corpus:  c,
			schemas: make(map[string]*validation.Schema, len(c.Tools)),
			params:  make(map[string]map[string]any, len(c.Tools)),
			errs:    make(map[string]error),
		}
		for _, tool := range c.Tools {
			s, err := validation.Compile(tool.Parameters)
			if err != nil {
				cs.errs[tool.ID] = err
				continue
			}
			cs.schemas[tool.ID] = s
			p, _ := bfcl.Decode(tool.Parameters).(map[string]any)
			cs.params[tool.ID] = p
		}
		corpusVal = cs
	})
	return corpusVal
}

// sample returns calls, or every shortStride-th of them under -short.
func sample[T any](calls []T) []T {
	if !testing.Short() {
		return calls
	}
	var out []T
	for i := 0; i < len(calls); i += shortStride {
		out = append(out, calls[i])
	}
	return out
}

func encode(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func violationsOf(t testing.TB, err error) []validation.Violation {
	t.Helper()
	var ve *validation.Error
	if !errors.As(err, &ve) {
		t.Fatalf("error %v (%T) is not a *validation.Error", err, err)
	}
	return ve.Violations
}

func TestBFCLSchemasCompile(t *testing.T) {
	t.Parallel()
	c := openCorpus(t)
	for id, err := range c.errs {
		t.Errorf("Compile(tool %s) = %v, want nil", id, err)
	}
	t.Logf("BFCL: %d/%d schemas compiled", len(c.schemas), len(c.Tools))
	if len(c.Tools) != c.Want.Tools || len(c.schemas) != c.Want.Tools {
		t.Errorf("compiled %d of %d schemas, want %d of %d", len(c.schemas), len(c.Tools), c.Want.Tools, c.Want.Tools)
	}
}

// TestBFCLSchemaQuirks counts the real-world quirks the corpus keeps on
// purpose (see its README), so that TestBFCLSchemasCompile and
// TestBFCLCallsAccepted are known to cover them: tools with no properties, a
// non-standard "optional" keyword, "required" naming a property that
// "properties" lacks, and defaults that do not match their own "type".
func TestBFCLSchemaQuirks(t *testing.T) {
	t.Parallel()
	c := openCorpus(t)
	quirks := map[string]map[string]bool{}
	note := func(kind, id string) {
		if quirks[kind] == nil {
			quirks[kind] = map[string]bool{}
		}
		quirks[kind][id] = true
	}
	for id, params := range c.params {
		if props, _ := params["properties"].(map[string]any); len(props) == 0 {
			note("no properties", id)
		}
		walkSchemas(params, func(s map[string]any) {
			if _, ok := s["optional"]; ok {
				note("optional keyword", id)
			}
			if req := bfcl.Required(s); len(req) > 0 {
				props, _ := s["properties"].(map[string]any)
				for _, r := range req {
					if _, ok := props[r]; !ok {
						note("required names a missing property", id)
					}
				}
			}
			if d, ok := s["default"]; ok {
				if typ, ok := s["type"].(string); ok && !hasJSONType(d, typ) {
					note("default of another type", id)
				}
			}
		})
	}
	calls := map[string]int{}
	for _, call := range c.Calls {
		for kind, ids := range quirks {
			if ids[call.SchemaRef] {
				calls[kind]++
			}
		}
	}
	want := map[string]int{
		"no properties":                     c.Pick(80, 29),
		"optional keyword":                  c.Pick(44, 24),
		"required names a missing property": 1,
		"default of another type":           c.Pick(308, 93),
	}
	for _, kind := range bfcl.SortedKeys(want) {
		t.Logf("BFCL quirk %q: %d tools, %d ground-truth calls against them", kind, len(quirks[kind]), calls[kind])
		if len(quirks[kind]) != want[kind] {
			t.Errorf("quirk %q: %d tools, want %d", kind, len(quirks[kind]), want[kind])
		}
	}
}

// walkSchemas calls f on s and on every subschema under properties, items
// and additionalProperties.
func walkSchemas(s map[string]any, f func(map[string]any)) {
	f(s)
	props, _ := s["properties"].(map[string]any)
	for _, p := range props {
		if p, ok := p.(map[string]any); ok {
			walkSchemas(p, f)
		}
	}
	for _, k := range []string{"items", "additionalProperties"} {
		if sub, ok := s[k].(map[string]any); ok {
			walkSchemas(sub, f)
		}
	}
}

// hasJSONType reports whether decoded JSON v has JSON Schema type typ.
func hasJSONType(v any, typ string) bool {
	switch x := v.(type) {
	case nil:
		return typ == "null"
	case bool:
		return typ == "boolean"
	case string:
		return typ == "string"
	case []any:
		return typ == "array"
	case map[string]any:
		return typ == "object"
	case json.Number:
		if typ == "number" {
			return true
		}
		if typ != "integer" {
			return false
		}
		r, ok := new(big.Rat).SetString(string(x))
		return ok && r.IsInt()
	}
	return false
}

func TestBFCLCallsAccepted(t *testing.T) {
	t.Parallel()
	c := openCorpus(t)
	calls := sample(c.Calls)
	accepted := 0
	for _, call := range calls {
		s := c.schemas[call.SchemaRef]
		if s == nil {
			t.Errorf("call %s: schema %s did not compile", call.ID, call.SchemaRef)
			continue
		}
		if err := s.ValidateJSON(call.Args); err != nil {
			t.Errorf("false positive: call %s (%s) %s: ValidateJSON = %v, want nil", call.ID, call.Tool, call.Args, err)
			continue
		}
		accepted++
	}
	t.Logf("BFCL: %d/%d ground-truth calls accepted (0 false positives means all)", accepted, len(calls))
	if accepted != len(calls) {
		t.Errorf("accepted %d of %d calls, want all", accepted, len(calls))
	}
	if !testing.Short() && accepted != c.Want.Calls {
		t.Errorf("accepted %d calls, want %d", accepted, c.Want.Calls)
	}
}

// TestBFCLViolations checks the 330 ground-truth calls that break their own
// schema: every one is rejected, toolguard's violations and the errors
// python-jsonschema reported correspond one to one (same keyword, same
// place), and SchemaAwareStrip repairs exactly the 106
// that BFCL marks valid_after_strip_top_level, removing only top-level empty
// values.
func TestBFCLViolations(t *testing.T) {
	t.Parallel()
	c := openCorpus(t)
	rejected, repaired, pyMatched, pyErrors, ours := 0, 0, 0, 0, 0
	for _, call := range c.Violations {
		s := c.schemas[call.SchemaRef]
		err := s.ValidateJSON(call.Args)
		if err == nil {
			t.Errorf("violation %s (%s) %s accepted, want rejected", call.ID, call.Tool, call.Args)
			continue
		}
		rejected++
		got := violationsOf(t, err)
		for _, pe := range call.Errors {
			pyErrors++
			if matchesPython(got, pe) {
				pyMatched++
			} else {
				t.Errorf("violation %s: python-jsonschema reports %s at %q (%s); toolguard reports %v", call.ID, pe.Validator, pe.Path, pe.Message, got)
			}
		}
		for _, v := range got {
			ours++
			if !slices.ContainsFunc(call.Errors, func(pe bfcl.PythonError) bool { return matchesPython([]validation.Violation{v}, pe) }) {
				t.Errorf("violation %s: toolguard reports %v, python-jsonschema does not: %+v", call.ID, v, call.Errors)
			}
		}

		v, derr := validation.DecodeArgs(call.Args)
		if derr != nil {
			t.Fatalf("DecodeArgs(%s) = %v", call.Args, derr)
		}
		topEmpty := map[string]bool{}
		for k, e := range v {
			if strip.IsEmpty(e) {
				topEmpty["/"+k] = true
			}
		}
		removed, serr := schemaAwareStrip(v, s)
		for _, p := range removed {
			if !topEmpty[p] {
				t.Errorf("violation %s: SchemaAwareStrip removed %q, not a top-level empty value", call.ID, p)
			}
		}
		if serr == nil {
			repaired++
			if again := s.Validate(v); again != nil {
				t.Errorf("violation %s: SchemaAwareStrip said valid, Validate = %v", call.ID, again)
			}
		}
		if (serr == nil) != call.ValidAfterStripTopLevel {
			t.Errorf("violation %s: after SchemaAwareStrip (removed %q) error = %v; BFCL valid_after_strip_top_level = %v",
				call.ID, removed, serr, call.ValidAfterStripTopLevel)
		}
	}
	t.Logf("BFCL: %d/%d violations rejected; %d/%d python-jsonschema errors matched by %d toolguard violations; %d repaired by SchemaAwareStrip (BFCL marks %d valid_after_strip_top_level)",
		rejected, len(c.Violations), pyMatched, pyErrors, ours, repaired, c.Want.StripRepairable)
	if rejected != c.Want.Violations || repaired != c.Want.StripRepairable || pyMatched != pyErrors || ours != pyErrors {
		t.Errorf("rejected %d, repaired %d, matched %d/%d python errors with %d violations; want %d, %d, all with as many",
			rejected, repaired, pyMatched, pyErrors, ours, c.Want.Violations, c.Want.StripRepairable)
	}
}

// matchesPython reports whether got has a violation for python-jsonschema's
// error pe: the same keyword at the same place. python-jsonschema reports a
// missing required property at the object that lacks it, toolguard at the
// property itself.
func matchesPython(got []validation.Violation, pe bfcl.PythonError) bool {
	want := ""
	if pe.Path != "" {
		want = "/" + pe.Path
	}
	for _, v := range got {
		if v.Keyword != pe.Validator {
			continue
		}
		if v.Path == want {
			return true
		}
		if pe.Validator == "required" && strings.HasPrefix(v.Path, want+"/") && !strings.Contains(v.Path[len(want)+1:], "/") {
			return true
		}
	}
	return false
}

// corruption is a deterministic way to break a valid call.
type corruption struct {
	name string
	// apply corrupts args, a decoded copy of a valid call, in place, and
	// returns the top-level property it changed, or "" and the reason when
	// the call offers nothing to corrupt this way (the case is skipped and
	// counted by reason).
	apply func(params, args map[string]any) (name, skip string)
	// repaired: SchemaAwareStrip must remove exactly the changed key and
	// leave the original call. Otherwise the corrupted call must stay
	// rejected with violations at the changed key only.
	repaired bool
	// keyword is a keyword that must be among the violations.
	keyword string
	// corrupted is how many calls offer something to corrupt this way, of
	// the full corpus's 9,523 and of the 4,439 shipped (checked on full
	// runs, not under -short).
	corrupted [2]int
}

// corruptions of a valid call. Each picks the first property, in sorted
// order, that qualifies:
//
//   - drop-required: the first name in "required" (all are present in a
//     valid call) is deleted. Expect exactly one violation: required at
//     /name. Skipped when the tool has no required property.
//   - change-type: the first property present in the call whose schema has
//     a single "type" (a string, not a list) gets a value of another JSON
//     type: 42 for "string", the string "toolguard-wrong-type" for any other
//     type. Expect a type violation at /name and no violation elsewhere.
//     Skipped when no present property has a single type.
//   - break-enum: the first property present in the call whose schema has an
//     "enum" of strings gets the string "toolguard-not-in-enum". Expect an
//     enum violation at /name and no violation elsewhere.
//   - null / {} / [] on an absent optional key: the first property of the
//     schema that is not required, not in the call, and has a "type" that
//     excludes the empty value's JSON type gets that empty value. Expect
//     rejection, then SchemaAwareStrip removes exactly /name and the result
//     is valid and equal to the original call. Skipped when no such property
//     exists.
var corruptions = []corruption{
	{name: "drop-required", keyword: "required", corrupted: [2]int{8659, 4184}, apply: func(params, args map[string]any) (string, string) {
		req := bfcl.Required(params)
		slices.Sort(req)
		for _, name := range req {
			if _, ok := args[name]; ok {
				delete(args, name)
				return name, ""
			}
		}
		return "", "no required property"
	}},
	{name: "change-type", keyword: "type", corrupted: [2]int{8938, 4371}, apply: func(params, args map[string]any) (string, string) {
		for _, name := range bfcl.SortedKeys(args) {
			typ, ok := bfcl.Property(params, name)["type"].(string)
			if !ok {
				continue
			}
			if typ == "string" {
				args[name] = json.Number("42")
			} else {
				args[name] = "toolguard-wrong-type"
			}
			return name, ""
		}
		return "", "no property in the call has a single type"
	}},
	{name: "break-enum", keyword: "enum", corrupted: [2]int{988, 954}, apply: func(params, args map[string]any) (string, string) {
		for _, name := range bfcl.SortedKeys(args) {
			enum, ok := bfcl.Property(params, name)["enum"].([]any)
			if !ok || len(enum) == 0 || !allStrings(enum) {
				continue
			}
			args[name] = "toolguard-not-in-enum"
			return name, ""
		}
		return "", "no property in the call has a string enum"
	}},
	emptyOnOptional("null-on-optional", nil, "null", [2]int{568, 353}),
	emptyOnOptional("object-on-optional", map[string]any{}, "object", [2]int{568, 353}),
	emptyOnOptional("array-on-optional", []any{}, "array", [2]int{448, 294}),
}

func emptyOnOptional(name string, empty any, jsonType string, corrupted [2]int) corruption {
	return corruption{name: name, repaired: true, keyword: "type", corrupted: corrupted, apply: func(params, args map[string]any) (string, string) {
		key, skip := bfcl.AbsentOptional(params, args, jsonType)
		if key != "" {
			args[key] = empty
		}
		return key, skip
	}}
}

func allStrings(vs []any) bool {
	for _, v := range vs {
		if _, ok := v.(string); !ok {
			return false
		}
	}
	return true
}

// TestBFCLCorruptions corrupts every ground-truth call in each of the ways
// listed on corruptions and checks that the result is rejected, or rejected
// and then repaired by SchemaAwareStrip, counting the calls each way cannot
// corrupt by reason.
func TestBFCLCorruptions(t *testing.T) {
	t.Parallel()
	c := openCorpus(t)
	calls := sample(c.Calls)
	for _, tc := range corruptions {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			corrupted, skipped, caught := 0, 0, 0
			skips := map[string]int{}
			for _, call := range calls {
				s, params := c.schemas[call.SchemaRef], c.params[call.SchemaRef]
				args := bfcl.Decode(call.Args).(map[string]any)
				name, why := tc.apply(params, args)
				if name == "" {
					skipped++
					skips[why]++
					continue
				}
				corrupted++
				if checkCorruption(t, tc, call, s, args, name) {
					caught++
				}
			}
			verb := "rejected"
			if tc.repaired {
				verb = "rejected and repaired by SchemaAwareStrip"
			}
			t.Logf("BFCL %s: %d calls, %d corrupted, %d %s, %d skipped %v",
				tc.name, len(calls), corrupted, caught, verb, skipped, skips)
			if caught != corrupted || corrupted+skipped != len(calls) {
				t.Errorf("%d of %d corrupted calls %s, want all", caught, corrupted, verb)
			}
			if want := c.Pick(tc.corrupted[0], tc.corrupted[1]); !testing.Short() && corrupted != want {
				t.Errorf("%d calls corrupted, want %d", corrupted, want)
			}
		})
	}
}

// checkCorruption checks one corrupted call and reports whether it was
// caught as tc says.
func checkCorruption(t *testing.T, tc corruption, call bfcl.Call, s *validation.Schema, args map[string]any, name string) bool {
	t.Helper()
	raw := encode(args)
	err := s.ValidateJSON(raw)
	if err == nil {
		t.Errorf("%s: call %s (%s) corrupted at %q: %s accepted, want rejected", tc.name, call.ID, call.Tool, name, raw)
		return false
	}
	got := violationsOf(t, err)
	path := "/" + strings.ReplaceAll(strings.ReplaceAll(name, "~", "~0"), "/", "~1")
	hasKeyword := false
	for _, v := range got {
		if v.Path != path {
			t.Errorf("%s: call %s corrupted at %q: violation %+v elsewhere; all: %v", tc.name, call.ID, name, v, got)
			return false
		}
		hasKeyword = hasKeyword || v.Keyword == tc.keyword
	}
	if !hasKeyword {
		t.Errorf("%s: call %s corrupted at %q: violations %v lack keyword %q", tc.name, call.ID, name, got, tc.keyword)
		return false
	}
	if tc.name == "drop-required" && len(got) != 1 {
		t.Errorf("%s: call %s: violations %v, want exactly one", tc.name, call.ID, got)
		return false
	}
	if !tc.repaired {
		return true
	}
	v, derr := validation.DecodeArgs(raw)
	if derr != nil {
		t.Fatalf("DecodeArgs(%s) = %v", raw, derr)
	}
	removed, serr := schemaAwareStrip(v, s)
	if serr != nil || !slices.Equal(removed, []string{path}) {
		t.Errorf("%s: call %s: SchemaAwareStrip(%s) = %q, %v; want [%q], nil", tc.name, call.ID, raw, removed, serr, path)
		return false
	}
	if want := bfcl.Decode(call.Args); !reflect.DeepEqual(any(v), want) {
		t.Errorf("%s: call %s: stripped to %s, want the original %s", tc.name, call.ID, encode(v), call.Args)
		return false
	}
	return true
}

// TestBFCLEmptyValuesKept checks the ground-truth calls that carry an empty
// value ([] or {} or null) legitimately, in a field the schema accepts it
// in: SchemaAwareStrip removes nothing from them, and when such a call also
// has a null on an absent optional key, it removes that null and nothing
// else. RecursiveStrip, LangChain's rule, removes the legitimate values too;
// the test logs how many calls it breaks.
func TestBFCLEmptyValuesKept(t *testing.T) {
	t.Parallel()
	c := openCorpus(t)
	withEmpty, brokenByRecursive, withNull := 0, 0, 0
	nullOnOptional := corruptions[slices.IndexFunc(corruptions, func(c corruption) bool { return c.name == "null-on-optional" })]
	for _, call := range c.Calls {
		if !call.HasEmptyValues {
			continue
		}
		withEmpty++
		s, params := c.schemas[call.SchemaRef], c.params[call.SchemaRef]
		v, err := validation.DecodeArgs(call.Args)
		if err != nil {
			t.Fatalf("DecodeArgs(%s) = %v", call.Args, err)
		}
		if removed, serr := schemaAwareStrip(v, s); len(removed) > 0 || serr != nil {
			t.Errorf("call %s %s: SchemaAwareStrip = %q, %v; want nothing removed, nil", call.ID, call.Args, removed, serr)
		}
		if !reflect.DeepEqual(any(v), bfcl.Decode(call.Args)) {
			t.Errorf("call %s: SchemaAwareStrip changed %s to %s", call.ID, call.Args, encode(v))
		}

		rec := bfcl.Decode(call.Args)
		if removed := strip.RecursiveStrip(rec); len(removed) == 0 {
			t.Errorf("call %s %s is marked has_empty_values but RecursiveStrip removes nothing", call.ID, call.Args)
		}
		if s.Validate(rec) != nil {
			brokenByRecursive++
		}

		args := bfcl.Decode(call.Args).(map[string]any)
		if name, _ := nullOnOptional.apply(params, args); name != "" {
			withNull++
			checkCorruption(t, nullOnOptional, call, s, args, name)
		}
	}
	t.Logf("BFCL: %d calls with legitimate empty values: SchemaAwareStrip kept all; RecursiveStrip makes %d of them invalid; %d also got a null on an optional key, stripped alone",
		withEmpty, brokenByRecursive, withNull)
	if withEmpty != c.Want.CallsWithEmptyValue {
		t.Errorf("%d calls have has_empty_values, want %d", withEmpty, c.Want.CallsWithEmptyValue)
	}
}

// TestBFCLCorpusSizes checks that the loader sees the corpus as published
// (bfcl.Full) or as shipped (bfcl.Shipped).
func TestBFCLCorpusSizes(t *testing.T) {
	t.Parallel()
	c := openCorpus(t)
	got := fmt.Sprint(len(c.Tools), len(c.Calls), len(c.UniqueCalls()), len(c.Violations))
	want := fmt.Sprint(c.Want.Tools, c.Want.Calls, c.Want.UniqueCalls, c.Want.Violations)
	if got != want {
		t.Errorf("corpus sizes (tools calls unique violations) = %s, want %s", got, want)
	}
	t.Logf("BFCL corpus from %s: %+v", c.Source, c.Want)
}

// schemaAwareStrip runs strip.SchemaAwareStrip on v's violations against s
// and returns what it removed and the remaining violations as an error.
func schemaAwareStrip(v any, s *validation.Schema) ([]string, error) {
	e := s.Check(v)
	if e == nil {
		return nil, nil
	}
	removed, remaining := strip.SchemaAwareStrip(v, s, e.Violations)
	if len(remaining) == 0 {
		return removed, nil
	}
	return removed, &validation.Error{Violations: remaining}
}
