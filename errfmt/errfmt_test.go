package errfmt_test

import (
	"flag"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/errfmt"
	"github.com/toolguard/toolguard/internal/safetext"
	"github.com/toolguard/toolguard/validation"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s: got\n%s\nwant\n%s", name, got, want)
	}
}

// manyViolations returns n violations at distinct paths, each echoing a
// value of valueBytes bytes that tries to break the text's structure.
func manyViolations(n, valueBytes int) []validation.Violation {
	vs := make([]validation.Violation, n)
	for i := range vs {
		raw := strings.Repeat("\n- /fake: injected\"", valueBytes/19+1)[:valueBytes]
		vs[i] = validation.Violation{
			Path:    "/items/" + string(rune('a'+i%26)) + "/" + strings.Repeat("x", i%7),
			Keyword: "type",
			Message: "expected integer",
			Got:     safetext.Quote(raw, 256),
		}
	}
	return vs
}

func TestFeedbackGolden(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  *validation.Error
		opts errfmt.Options
	}{
		{"two_violations", &validation.Error{Tool: "get_weather", Violations: []validation.Violation{
			{Path: "/units", Keyword: "enum", Message: `expected one of "celsius", "fahrenheit"`, Got: `"kelvin"`},
			{Path: "/city", Keyword: "type", Message: "expected string", Got: "42"},
		}}, errfmt.Options{}},
		{"not_json", &validation.Error{Tool: "search", Violations: []validation.Violation{
			{Keyword: "json", Message: "arguments are not valid JSON: unexpected end of input after byte 12 (truncated?)"},
		}}, errfmt.Options{}},
		{"odd_tool_and_paths", &validation.Error{Tool: "bad\ntool\"name", Violations: []validation.Violation{
			{Path: "/we\"ird\nkey", Keyword: "additionalProperties", Message: `unexpected property; allowed properties: "a"`, Got: "1"},
			{Path: "/to", Keyword: "validate", Message: "must be after\nfrom"},
		}}, errfmt.Options{}},
		{"bounded", &validation.Error{Tool: "bulk", Violations: manyViolations(100, 10_000)}, errfmt.Options{MaxBytes: 1500, MaxValueBytes: 40}},
		{"omitted", &validation.Error{Tool: "bulk", Violations: manyViolations(3, 10), Omitted: 2500}, errfmt.Options{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			golden(t, tc.name, tc.opts.Feedback(tc.err))
		})
	}
}

// TestFeedbackBoundedAndDeterministic: 100 violations with 10 kB values give
// a text within MaxBytes that is byte-identical whatever the input order, and
// whose lines cannot be forged by model values.
func TestFeedbackBoundedAndDeterministic(t *testing.T) {
	t.Parallel()
	vs := manyViolations(100, 10_000)
	first := errfmt.Feedback(&validation.Error{Tool: "bulk", Violations: vs})
	if len(first) > errfmt.DefaultMaxBytes {
		t.Errorf("feedback is %d bytes, want at most %d", len(first), errfmt.DefaultMaxBytes)
	}
	if !strings.Contains(first, "more errors not shown") {
		t.Errorf("feedback does not say some errors were left out")
	}
	for _, line := range strings.Split(first, "\n") {
		if strings.HasPrefix(line, "- /fake") {
			t.Errorf("a model value forged a line: %q", line)
		}
		if len(line) > 400 {
			t.Errorf("line of %d bytes: values are not truncated", len(line))
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 5 {
		shuffled := append([]validation.Violation(nil), vs...)
		r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		if again := errfmt.Feedback(&validation.Error{Tool: "bulk", Violations: shuffled}); again != first {
			t.Fatalf("feedback differs for the same violations in another order")
		}
	}
	for _, max := range []int{1, 256, 1000, 5000} {
		if got := (errfmt.Options{MaxBytes: max}).Feedback(&validation.Error{Tool: "bulk", Violations: vs}); len(got) > max && len(got) > 256 {
			t.Errorf("MaxBytes %d: feedback is %d bytes", max, len(got))
		}
	}
}

// TestFeedbackEndsWithInstruction: the closing line asks for a corrected
// call, and advises omitting optional fields rather than sending null, {}
// or [] only when a violation is about such a value. A call without a tool
// name is never called tool "".
func TestFeedbackEndsWithInstruction(t *testing.T) {
	t.Parallel()
	const omit = " Omit optional fields you have no value for instead of sending null, {} or []."
	cases := []struct {
		name      string
		e         validation.Error
		head, end string
	}{
		{"no empty value", validation.Error{Tool: "t", Violations: []validation.Violation{{Path: "/a", Message: "expected string", Got: "1"}}},
			`Invalid arguments for tool "t": 1 error.`, "Call t again with corrected arguments."},
		{"null sent", validation.Error{Tool: "t", Violations: []validation.Violation{{Path: "/a", Message: "expected string", Got: "null"}}},
			`Invalid arguments for tool "t": 1 error.`, "Call t again with corrected arguments." + omit},
		{"[] sent", validation.Error{Tool: "t", Violations: []validation.Violation{{Path: "/a", Message: "expected string", Got: "1"}, {Path: "/b", Message: "expected object", Got: "[]"}}},
			`Invalid arguments for tool "t": 2 errors.`, "Call t again with corrected arguments." + omit},
		{"no tool name", validation.Error{Violations: []validation.Violation{{Path: "/a", Message: "expected string", Got: "{}"}}},
			`Invalid arguments: 1 error.`, "Call the tool again with corrected arguments." + omit},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := errfmt.Feedback(&tc.e)
			lines := strings.Split(got, "\n")
			if lines[0] != tc.head || lines[len(lines)-1] != tc.end {
				t.Errorf("Feedback(%+v) =\n%s\nwant first line %q, last line %q", tc.e, got, tc.head, tc.end)
			}
			if strings.Contains(got, `""`) {
				t.Errorf("Feedback(%+v) = %q, names tool \"\"", tc.e, got)
			}
		})
	}
}

func TestUnknownTool(t *testing.T) {
	t.Parallel()
	golden(t, "unknown_tool", errfmt.UnknownTool("get_wether", []string{"search", "get_weather", "get_time", "search"}))
	if got := errfmt.UnknownTool("x", nil); got != `Tool "x" does not exist. No tools are available; answer without calling a tool.` {
		t.Errorf("UnknownTool with no tools = %q", got)
	}
}

func TestClosest(t *testing.T) {
	t.Parallel()
	names := []string{"get_weather", "get_time", "search_web", "Search"}
	for name, want := range map[string]string{
		"get_wether": "get_weather", "GET_TIME": "get_time", "search": "Search", "search-web": "search_web", "": "Search",
	} {
		if got := errfmt.Closest(name, names); got != want {
			t.Errorf("Closest(%q) = %q, want %q", name, got, want)
		}
	}
	if got := errfmt.Closest("x", nil); got != "" {
		t.Errorf("Closest with no names = %q, want empty", got)
	}
}
