package eval_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/corpus"
	"github.com/toolguard/toolguard/examples/eval/internal/eval"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/validation"
)

// loadCorpus returns the unique BFCL calls: shipped, or from the full corpus
// when $TOOLGUARD_CORPUS names it; both hold the same 4,439.
func loadCorpus(t *testing.T) []eval.Case {
	t.Helper()
	d, err := corpus.Open(corpus.BFCL)
	if err != nil {
		t.Fatal(err)
	}
	cases, err := eval.LoadFS(d)
	if err != nil {
		t.Fatal(err)
	}
	return cases
}

// weather has every feature the corruptions need: required keys, an enum,
// a number, a boolean, optional keys of each type, a nested object.
var weather = eval.Case{
	ID:   "weather#0",
	Tool: "get_weather",
	Schema: json.RawMessage(`{
		"type": "object",
		"properties": {
			"city":    {"type": "string"},
			"units":   {"type": "string", "enum": ["celsius", "fahrenheit"]},
			"days":    {"type": "integer"},
			"hourly":  {"type": "boolean"},
			"note":    {"type": "string"},
			"filters": {"type": "object", "properties": {"min": {"type": "number"}}},
			"tags":    {"type": "array", "items": {"type": "string"}},
			"where":   {"type": "object", "properties": {"lat": {"type": "number"}, "lon": {"type": "number"}}, "required": ["lat", "lon"]}
		},
		"required": ["city", "where"]
	}`),
	Args: json.RawMessage(`{"city":"Paris","days":3,"hourly":false,"tags":["sun","wind"],"units":"celsius","where":{"lat":48.85,"lon":2.35}}`),
}

// TestCorruptEveryKind: every kind applies to the weather call, yields a
// call its schema rejects, and leaves the ground truth as it was.
func TestCorruptEveryKind(t *testing.T) {
	t.Parallel()
	p, err := eval.Prepare(weather)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range eval.Kinds {
		t.Run(k.String(), func(t *testing.T) {
			t.Parallel()
			for seed := range uint64(20) {
				c, ok := p.Corrupt(seed, 0, k)
				if !ok {
					t.Fatalf("Corrupt(seed %d, %v) did not apply", seed, k)
				}
				if c.Truth != string(weather.Args) {
					t.Fatalf("Truth = %s, want the case's arguments", c.Truth)
				}
				if c.Judge().ValidateJSON([]byte(c.Truth)) != nil {
					t.Fatalf("ground truth %s fails the corrupted call's schema", c.Truth)
				}
				if c.Judge().ValidateJSON([]byte(c.First)) == nil {
					t.Fatalf("Corrupt(seed %d, %v) = %s, which is valid", seed, k, c.First)
				}
				if open := c.Schema.ValidateJSON([]byte(c.First)) == nil; open != (k == eval.InventedKey) {
					t.Fatalf("Corrupt(seed %d, %v) = %s: valid against the schema sent %v, want %v", seed, k, c.First, open, k == eval.InventedKey)
				}
				if k == eval.Multi {
					if n := len(c.Parts); n < 2 || n > 3 || slices.Contains(c.Parts, eval.Multi) || slices.Contains(c.Parts, eval.InventedKey) {
						t.Fatalf("Multi parts = %v, want 2 or 3 other kinds", c.Parts)
					}
				} else if !slices.Equal(c.Parts, []eval.Kind{k}) {
					t.Fatalf("Parts = %v, want [%v]", c.Parts, k)
				}
			}
		})
	}
}

func TestCorruptExamples(t *testing.T) {
	t.Parallel()
	p, err := eval.Prepare(weather)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		kind eval.Kind
		want func(first string) bool
	}{
		{eval.DoubleEncoded, func(f string) bool { return strings.HasPrefix(f, `"{\"city\": \"Paris\"`) }},
		{eval.CodeFence, func(f string) bool { return strings.HasPrefix(f, "```") && strings.HasSuffix(f, "\n```") }},
		{eval.TrailingProse, func(f string) bool { return strings.HasPrefix(f, `{"city": "Paris"`) && !strings.HasSuffix(f, "}") }},
		{eval.TrailingComma, func(f string) bool { return strings.Contains(f, ",}") || strings.Contains(f, ",]") }},
		{eval.PythonLiteral, func(f string) bool {
			return strings.Contains(f, "'city': 'Paris'") && strings.Contains(f, "'hourly': False")
		}},
		{eval.NumberAsString, func(f string) bool {
			return strings.Contains(f, `"days": "3"`) || strings.Contains(f, `"lat": "48.85"`) || strings.Contains(f, `"lon": "2.35"`)
		}},
		{eval.BoolAsString, func(f string) bool { return strings.Contains(f, `"hourly": "false"`) }},
		{eval.CapitalisedBool, func(f string) bool {
			return strings.Contains(f, `"hourly": "False"`) || strings.Contains(f, `"hourly": "FALSE"`)
		}},
		{eval.ArrayAsJSONString, func(f string) bool { return strings.Contains(f, `"tags": "[\"sun\", \"wind\"]"`) }},
		{eval.ArrayAsPythonString, func(f string) bool { return strings.Contains(f, `"tags": "['sun', 'wind']"`) }},
		{eval.NullOptional, func(f string) bool { return strings.Contains(f, ": null") }},
		{eval.EmptyObject, func(f string) bool { return strings.Contains(f, ": {}") }},
		{eval.EmptyArray, func(f string) bool { return strings.Contains(f, ": []") }},
	}
	for _, tc := range tests {
		c, ok := p.Corrupt(1, 0, tc.kind)
		if !ok || !tc.want(c.First) {
			t.Errorf("Corrupt(%v) = %q, %v; not the corruption expected", tc.kind, c.First, ok)
		}
	}
}

func TestCorruptIsDeterministic(t *testing.T) {
	t.Parallel()
	p, err := eval.Prepare(weather)
	if err != nil {
		t.Fatal(err)
	}
	distinct := map[string]bool{}
	for _, k := range eval.Kinds {
		a, _ := p.Corrupt(42, 7, k)
		b, _ := p.Corrupt(42, 7, k)
		if a.First != b.First || !slices.Equal(a.Parts, b.Parts) {
			t.Errorf("Corrupt(42, 7, %v) = %q then %q", k, a.First, b.First)
		}
		for seed := range uint64(10) {
			c, _ := p.Corrupt(seed, 7, k)
			distinct[k.String()+c.First] = true
		}
	}
	if len(distinct) <= len(eval.Kinds) {
		t.Errorf("ten seeds gave one corruption per kind: the seed is not used")
	}
}

// TestCorruptSkipsWhatDoesNotApply: a call with nothing to corrupt is
// skipped, not counted as fixed.
func TestCorruptSkipsWhatDoesNotApply(t *testing.T) {
	t.Parallel()
	p, err := eval.Prepare(eval.Case{ID: "free#0", Tool: "free", Schema: json.RawMessage(`{"type":"object"}`), Args: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	applies := []eval.Kind{eval.DoubleEncoded, eval.CodeFence, eval.TrailingProse}
	for _, k := range eval.Kinds {
		_, ok := p.Corrupt(1, 0, k)
		if want := slices.Contains(applies, k); ok != want {
			t.Errorf("Corrupt(%v) on {} with an open schema applied = %v, want %v", k, ok, want)
		}
	}
}

// threeErrors has three independent value errors.
func threeErrors(t *testing.T) eval.Corrupted {
	t.Helper()
	s, err := validation.Compile(weather.Schema)
	if err != nil {
		t.Fatal(err)
	}
	return eval.Corrupted{
		Kind:   eval.Multi,
		Truth:  string(weather.Args),
		First:  `{"city":7,"days":"3","hourly":false,"units":"Celsius","where":{"lat":48.85,"lon":2.35}}`,
		Schema: s,
	}
}

func mw(opts ...guard.ValidationOption) middleware.Middleware {
	return middleware.ToolArgValidation(append([]guard.ValidationOption{guard.WithMaxRetries(eval.MaxRetries)}, opts...)...)
}

// TestFeedbackDecidesTheRounds pins the simulator through the middleware,
// so the evaluation cannot flatter itself: feedback naming every error
// costs one re-ask, first-error-only feedback one per error (three errors
// do not fit in two re-asks), feedback without paths fixes nothing, and
// non-JSON arguments are fixed only when the feedback says why.
func TestFeedbackDecidesTheRounds(t *testing.T) {
	t.Parallel()
	two := threeErrors(t)
	two.First = `{"city":7,"days":3,"hourly":false,"units":"Celsius","where":{"lat":48.85,"lon":2.35}}` // no coercion applies
	fence := threeErrors(t)
	fence.First = "```json\n" + fence.Truth + "\n```"
	three := threeErrors(t)
	three.First = `{"city":7,"days":"three","hourly":false,"units":"Celsius","where":{"lat":48.85,"lon":2.35}}` // none coerced
	coercedOnly := threeErrors(t)                                                                               // "3" for days is coerced: the feedback names the other two
	vague := func(*validation.Error) string { return "Invalid arguments. Fix all errors and try again." }
	noWhy := func(*validation.Error) string { return "(root): the arguments are not valid JSON." }

	tests := []struct {
		name  string
		mw    middleware.Middleware
		cor   eval.Corrupted
		calls int
		valid bool
	}{
		{"all errors named: one re-ask", mw(), threeErrors(t), 2, true},
		{"LangChain format names all: one re-ask", mw(guard.WithFeedback(eval.LangChain)), threeErrors(t), 2, true},
		{"first error only, two errors: two re-asks", mw(guard.WithFeedback(eval.FirstError)), two, 3, true},
		{"first error only, three errors: out of re-asks", mw(guard.WithFeedback(eval.FirstError)), three, 3, false},
		{"first error only, two errors and a coercion: two re-asks", mw(guard.WithFeedback(eval.FirstError)), coercedOnly, 3, true},
		{"no path in the feedback: nothing fixed", mw(guard.WithFeedback(vague)), threeErrors(t), 3, false},
		{"not JSON, told why: one re-ask", mw(), fence, 2, true},
		{"not JSON, not told why: nothing fixed", mw(guard.WithFeedback(noWhy)), fence, 3, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out, err := eval.Attempt(context.Background(), tc.mw, weather.Tool, tc.cor)
			if err != nil {
				t.Fatal(err)
			}
			if out.ModelCalls != tc.calls || out.Valid != tc.valid {
				t.Errorf("Attempt = %d model calls, valid %v (final %s); want %d, %v",
					out.ModelCalls, out.Valid, out.Final, tc.calls, tc.valid)
			}
			if len(out.Feedback) != out.ModelCalls-1 {
				t.Errorf("feedback messages = %d, want one per re-ask (%d)", len(out.Feedback), out.ModelCalls-1)
			}
		})
	}
}

func TestFeedbackFormats(t *testing.T) {
	t.Parallel()
	e := &validation.Error{Tool: "get_weather", Violations: []validation.Violation{
		{Path: "/city", Keyword: "type", Message: "expected string", Got: "7"},
		{Path: "/filters/0/it's", Keyword: "required", Message: "missing required property (string)"},
		{Path: "/units", Keyword: "enum", Message: `expected one of "celsius", "fahrenheit"`, Got: `"Celsius"`},
		{Path: "/verbose", Keyword: "additionalProperties", Message: `unexpected property; allowed properties: "city"`, Got: "true"},
	}}
	wantFirst := `jsonschema: '/city' does not validate with file:///tool.json#/properties/city/type: expected string, but got integer`
	if got := eval.FirstError(e); got != wantFirst {
		t.Errorf("FirstError = %q, want %q", got, wantFirst)
	}
	for _, tc := range []struct {
		v    validation.Violation
		want string
	}{
		{e.Violations[1], `jsonschema: '/filters/0/it\'s' does not validate with file:///tool.json#/properties/filters/items/required: missing properties: 'it\'s'`},
		{e.Violations[2], `jsonschema: '/units' does not validate with file:///tool.json#/properties/units/enum: value must be one of "celsius", "fahrenheit"`},
		{e.Violations[3], `jsonschema: '/verbose' does not validate with file:///tool.json#/additionalProperties: additionalProperties 'verbose' not allowed`},
		{validation.Violation{Keyword: "json", Message: "arguments are not valid JSON: x"}, "arguments are not valid JSON: x"},
	} {
		if got := eval.FirstError(&validation.Error{Violations: []validation.Violation{tc.v}}); got != tc.want {
			t.Errorf("FirstError(%v) = %q, want %q", tc.v, got, tc.want)
		}
	}

	wantLC := "Tool 'get_weather' argument validation failed. Fix the following errors and retry:\n" +
		"• [city] Input should be a valid string\n" +
		"• [filters → 0 → it's] Field required\n" +
		"• [units] Input should be 'celsius' or 'fahrenheit'\n" +
		"• [verbose] Extra inputs are not permitted"
	if got := eval.LangChain(e); got != wantLC {
		t.Errorf("LangChain =\n%s\nwant\n%s", got, wantLC)
	}
}

// TestMarkdownModelCallsSaved: each row says how many fewer model calls
// its configuration made than the first row's on the same calls.
func TestMarkdownModelCallsSaved(t *testing.T) {
	t.Parallel()
	r := &eval.Report{Seed: 1, Cases: 3, Configs: []string{"none", "some", "worse"}, Kinds: []eval.KindReport{
		{Kind: eval.BoolAsString, Applicable: 3, ByConfig: []eval.Stats{
			{Calls: 3, Valid: 3, ModelCalls: 6},
			{Calls: 3, Valid: 3, ModelCalls: 4, NoCall: 2},
			{Calls: 3, Valid: 3, ModelCalls: 1007},
		}},
	}}
	var b strings.Builder
	if err := r.Markdown(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| configuration | calls ending valid | model calls per call | fixed with no model call | model calls saved | feedback bytes (median / p95) |",
		"| none | 100.0% | 2.00 | 0.0% | 0 | – |",
		"| some | 100.0% | 1.33 | 66.7% | 2 | – |",
		"| worse | 100.0% | 335.67 | 0.0% | -1,001 | – |",
		"Model calls saved: how many fewer model calls a configuration made than the first, none, on the same calls.",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("Markdown lacks %q:\n%s", want, b.String())
		}
	}
}

func TestPercentile(t *testing.T) {
	t.Parallel()
	vals := []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, tc := range []struct{ p, want int }{{50, 5}, {95, 10}, {10, 1}, {100, 10}} {
		if got := eval.Percentile(vals, tc.p); got != tc.want {
			t.Errorf("Percentile(1..10, %d) = %d, want %d", tc.p, got, tc.want)
		}
	}
	if got := eval.Percentile(nil, 50); got != 0 {
		t.Errorf("Percentile(nil) = %d, want 0", got)
	}
}

func TestLoad(t *testing.T) {
	t.Parallel()
	cases := loadCorpus(t)
	if len(cases) != 4439 {
		t.Errorf("Load found %d unique (schema, arguments) pairs, want 4,439 (corpus README)", len(cases))
	}
}

// TestRunSample runs the evaluation on a sample of the corpus: the report
// does not depend on the number of workers, and its numbers are sane.
func TestRunSample(t *testing.T) {
	t.Parallel()
	cases := loadCorpus(t)
	n := 120
	if testing.Short() {
		n = 40
	}
	cases = cases[:n]
	render := func(workers int) (string, *eval.Report) {
		r, err := eval.Run(context.Background(), cases, eval.Options{Seed: 3, Workers: workers})
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		if err := r.Markdown(&b); err != nil {
			t.Fatal(err)
		}
		return b.String(), r
	}
	one, r := render(1)
	if many, _ := render(4); many != one {
		t.Fatalf("the report depends on the number of workers:\n%s\nvs\n%s", one, many)
	}
	old, def, rep, strict, first := r.Overall(0), r.Overall(1), r.Overall(2), r.Overall(3), r.Overall(5)
	if strict.Valid*100 < strict.Calls*99 {
		t.Errorf("strict: %d of %d calls end valid, want >= 99%%", strict.Valid, strict.Calls)
	}
	if def.NoCall <= old.NoCall || def.ModelCalls >= old.ModelCalls {
		t.Errorf("default: %d fixed without a model call and %d model calls, no repair %d and %d; want coercions to save calls",
			def.NoCall, def.ModelCalls, old.NoCall, old.ModelCalls)
	}
	if rep.NoCall <= def.NoCall || rep.ModelCalls >= def.ModelCalls {
		t.Errorf("repair: %d fixed without a model call and %d model calls, default %d and %d; want repair to save calls",
			rep.NoCall, rep.ModelCalls, def.NoCall, def.ModelCalls)
	}
	if first.ModelCalls < def.ModelCalls || first.Valid > def.Valid {
		t.Errorf("first-error-only feedback did better than all errors: %+v vs %+v", first, def)
	}
	for _, want := range []string{"#### All corrupted calls", "| default (coercions) |", "| closed objects (WithClosedObjects) |", "#### invented key (open schema)", "#### 2–3 corruptions at once"} {
		if !strings.Contains(one, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}
