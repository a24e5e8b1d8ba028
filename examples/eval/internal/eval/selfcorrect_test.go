package eval_test

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/examples/eval/internal/eval"
	"github.com/toolguard/toolguard/middleware/fakemodel"
)

// sameJSON reports whether a and b hold equal JSON values.
func sameJSON(t *testing.T, a, b string) bool {
	t.Helper()
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return a == b
	}
	return reflect.DeepEqual(x, y)
}

const (
	truth = `{"city":"Paris","days":3,"units":"celsius"}`
	// Three errors: wrong type, number as string, enum; plus an extra key.
	broken = `{"city":75001,"days":"3","units":"kelvin","verbose":true}`
)

// allErrors is feedback in toolguard's default format naming every error.
const allErrors = `Invalid arguments for tool "get_weather": 4 errors.
- /city: expected string, got 75001
- /days: expected integer, got "3"
- /units: expected one of "celsius", "fahrenheit", got "kelvin"
- /verbose: unexpected property; allowed properties: "city", "days", "units", got true
Call get_weather again with corrected arguments.`

// TestCorrectAllErrorsNamedFixesInOneRound pins rule (1): feedback naming
// every error's path fixes the call in one re-ask.
func TestCorrectAllErrorsNamedFixesInOneRound(t *testing.T) {
	t.Parallel()
	got := eval.Correct(truth, broken, allErrors)
	if !sameJSON(t, got, truth) {
		t.Fatalf("Correct(all errors named) = %s, want %s", got, truth)
	}
}

// firstDiff names the first path (in sorted order) where prev differs from
// truth, the way first-error-only feedback does.
func firstDiff(t *testing.T, truth, prev string) string {
	t.Helper()
	var a, b map[string]any
	if err := json.Unmarshal([]byte(truth), &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(prev), &b); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !reflect.DeepEqual(a[k], b[k]) {
			return "jsonschema: '/" + k + "' does not validate with file:///tool.json#/properties/" + k + "/type: expected something else"
		}
	}
	return ""
}

// TestCorrectFirstErrorOnlyCostsOneRoundPerError pins rule (2): feedback
// that names one error per round needs one re-ask per error.
func TestCorrectFirstErrorOnlyCostsOneRoundPerError(t *testing.T) {
	t.Parallel()
	prev, rounds := broken, 0
	for ; rounds < 10; rounds++ {
		fb := firstDiff(t, truth, prev)
		if fb == "" {
			break
		}
		next := eval.Correct(truth, prev, fb)
		if sameJSON(t, next, prev) {
			t.Fatalf("round %d: Correct(%q) changed nothing", rounds+1, fb)
		}
		prev = next
	}
	if rounds != 4 {
		t.Fatalf("first-error-only feedback took %d rounds for 4 errors, want 4", rounds)
	}
}

// TestCorrectNoPathFixesNothing pins rule (3): feedback without a path
// leaves the arguments as they were, however urgent it sounds.
func TestCorrectNoPathFixesNothing(t *testing.T) {
	t.Parallel()
	for _, fb := range []string{
		"",
		"The arguments are invalid. Please fix all errors and call the tool again.",
		"city must be a string; units must be celsius or fahrenheit",
		"jsonschema: does not validate with file:///tool.json#/properties/city/type: expected string",
		"- (root): missing properties: 'city'",
	} {
		if got := eval.Correct(truth, broken, fb); !sameJSON(t, got, broken) {
			t.Errorf("Correct(feedback %q) = %s, want the arguments unchanged", fb, got)
		}
	}
}

// TestCorrectRootRule pins rule (4): arguments that are not a JSON object
// are replaced by the ground truth only when the feedback says they are not
// JSON (or not an object) and why.
func TestCorrectRootRule(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, prev, feedback string
		fixed                bool
	}{
		{"not JSON, with reason", "```json\n{}\n```",
			"- (root): arguments are not valid JSON: invalid character '`' looking for beginning of value at byte 1", true},
		{"not JSON, pydantic wording", `{'city': 'Paris'}`, "• [] Invalid JSON: key must be a string at line 1 column 2", true},
		{"not an object, with what it is", `"{\"city\":\"Paris\"}"`,
			`- (root): arguments are not a JSON object but a string, got "{\"city\"…`, true},
		{"not JSON, no reason", `{"city": "Paris",}`, "The arguments are not valid JSON.", false},
		{"not JSON, reason on the next line", `{"city": "Paris",}`, "arguments are not valid JSON:\ntrailing comma", false},
		{"root named, no explanation", `{"city": "Paris",}`, "- (root): expected object", false},
		{"parser text only", `{"city": "Paris",}`, "invalid character '}' looking for beginning of object key string", false},
		{"object is never replaced wholesale", `{"city": 1}`, "arguments are not valid JSON: unexpected end", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := eval.Correct(truth, tc.prev, tc.feedback)
			if fixed := sameJSON(t, got, truth); fixed != tc.fixed {
				t.Fatalf("Correct(%q, %q) = %s, fixed %v, want fixed %v", tc.prev, tc.feedback, got, fixed, tc.fixed)
			}
			if !tc.fixed && !sameJSON(t, got, tc.prev) {
				t.Fatalf("Correct(%q, %q) = %s, want prev unchanged", tc.prev, tc.feedback, got)
			}
		})
	}
}

func TestCorrectPathsAreExact(t *testing.T) {
	t.Parallel()
	const truth = `{"a":{"b":1,"c":2},"s":"x","list":[1,2]}`
	tests := []struct {
		name, prev, feedback, want string
	}{
		{"a parent path sets the whole subtree", `{"a":{"b":"1","c":"2"},"s":"x","list":[1,2]}`,
			"- /a: expected object", truth},
		{"a child path fixes only the child", `{"a":{"b":"1","c":"2"},"s":"x","list":[1,2]}`,
			"- /a/b: expected integer", `{"a":{"b":1,"c":"2"},"s":"x","list":[1,2]}`},
		{"a child path under a wrong parent is ignored", `{"a":"oops","s":"x","list":[1,2]}`,
			"- /a/b: missing", `{"a":"oops","s":"x","list":[1,2]}`},
		{"an extra key is removed", `{"a":{"b":1,"c":2},"s":"x","list":[1,2],"z":true}`,
			"- /z: unexpected property", truth},
		{"a missing key is added", `{"a":{"b":1,"c":2},"list":[1,2]}`, "- /s: missing required property", truth},
		{"an array element", `{"a":{"b":1,"c":2},"s":"x","list":[1,"2"]}`, "- /list/1: expected integer", truth},
		{"a prefix of a key is not the key", `{"a":{"b":1,"c":2},"s":"x","list":[1,2],"zz":1}`,
			"- /z: unexpected property", `{"a":{"b":1,"c":2},"s":"x","list":[1,2],"zz":1}`},
		{"a pointer in a URL is not read", `{"a":{"b":1,"c":2},"s":3,"list":[1,2]}`,
			"jsonschema: does not validate with file:///tool.json#/s/type", `{"a":{"b":1,"c":2},"s":3,"list":[1,2]}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := eval.Correct(truth, tc.prev, tc.feedback); !sameJSON(t, got, tc.want) {
				t.Fatalf("Correct(%s, %q) = %s, want %s", tc.prev, tc.feedback, got, tc.want)
			}
		})
	}
}

func TestFeedbackPaths(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, feedback string
		want           []string
	}{
		{"toolguard lines", "- /city: expected string\n- /units: expected one of", []string{"/city", "/units"}},
		{"quoted pointer", `- "/my key": expected string`, []string{"/my key"}},
		{"jsonschema v5", `jsonschema: '/a/b' does not validate with file:///t.json#/properties/a/type: x`, []string{"/a/b"}},
		{"v5 escaped quote", `jsonschema: '/it\'s' does not validate`, []string{"/it's"}},
		{"langchain arrows", "• [filters → 0 → name] Field required\n• [city] Input should be a valid string",
			[]string{"/filters/0/name", "/city"}},
		{"langchain escapes", "• [a/b → c~d] Field required", []string{"/a~1b/c~0d"}},
		{"root", "- (root): arguments are not valid JSON", []string{""}},
		{"none", "Invalid arguments. Try again.", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := eval.FeedbackPaths(tc.feedback)
			for _, w := range tc.want {
				if !slices.Contains(got, w) {
					t.Errorf("FeedbackPaths(%q) = %q, want it to contain %q", tc.feedback, got, w)
				}
			}
			if tc.want == nil && len(got) > 0 {
				t.Errorf("FeedbackPaths(%q) = %q, want none", tc.feedback, got)
			}
		})
	}
}

// TestSelfCorrectingStep runs the step as a model: the first call sends the
// corrupted arguments, a re-ask is corrected from its feedback and the
// replayed call, and feedback for another tool is ignored.
func TestSelfCorrectingStep(t *testing.T) {
	t.Parallel()
	step := eval.SelfCorrecting("get_weather", truth, broken)
	m := fakemodel.New(step, step, step, step)
	ctx := context.Background()
	human := llms.TextParts(llms.ChatMessageTypeHuman, "Weather in Paris?")

	resp, err := m.GenerateContent(ctx, []llms.MessageContent{human})
	if err != nil {
		t.Fatal(err)
	}
	call := resp.Choices[0].ToolCalls[0]
	if call.FunctionCall.Name != "get_weather" || call.FunctionCall.Arguments != broken {
		t.Fatalf("first call = %s(%s), want get_weather(%s)", call.FunctionCall.Name, call.FunctionCall.Arguments, broken)
	}

	reask := func(tool, feedback string) string {
		t.Helper()
		msgs := []llms.MessageContent{human,
			{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{call}},
			{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{
				llms.ToolCallResponse{ToolCallID: call.ID, Name: tool, Content: feedback}}},
		}
		resp, err := m.GenerateContent(ctx, msgs)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Choices[0].ToolCalls[0].FunctionCall.Arguments
	}
	if got := reask("other_tool", allErrors); got != broken {
		t.Errorf("re-ask with feedback for another tool = %s, want the first arguments %s", got, broken)
	}
	if got := reask("get_weather", allErrors); !sameJSON(t, got, truth) {
		t.Errorf("re-ask with every error named = %s, want %s", got, truth)
	}
	if got := reask("get_weather", "- /units: expected one of"); !strings.Contains(got, `"city":75001`) || !strings.Contains(got, `"units":"celsius"`) {
		t.Errorf("re-ask naming /units = %s, want only /units fixed", got)
	}
}

// TestCorrectEmptyObject: {} is both what a model sends when it drops its
// only argument and what the middleware replays for arguments that were not
// a JSON object. Path feedback fixes the first; only a not-JSON explanation
// replaces it wholesale.
func TestCorrectEmptyObject(t *testing.T) {
	t.Parallel()
	const truth = `{"city":"Paris"}`
	if got := eval.Correct(truth, `{}`, "- /city: missing required property (string)"); !sameJSON(t, got, truth) {
		t.Errorf("Correct({}, missing /city) = %s, want %s", got, truth)
	}
	if got := eval.Correct(truth, `{}`, "- (root): arguments are not valid JSON: unexpected end of input after byte 9 (truncated?)"); !sameJSON(t, got, truth) {
		t.Errorf("Correct({} replayed for broken JSON, told why) = %s, want %s", got, truth)
	}
	if got := eval.Correct(truth, `{}`, "Something is wrong."); !sameJSON(t, got, `{}`) {
		t.Errorf("Correct({}, no path, no reason) = %s, want {} unchanged", got)
	}
}
