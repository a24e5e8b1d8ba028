package middleware_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/errfmt"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/internal/safetext"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/fakemodel"
	"github.com/toolguard/toolguard/strip"
	"github.com/toolguard/toolguard/validation"
)

// numbersTool takes numbers beyond float64 and int64.
var numbersTool = tool("measure", `{"type": "object", "properties": {
	"big": {"type": "integer", "maximum": 9007199254740992},
	"huge": {"type": "number"}, "tiny": {"type": "number"}, "precise": {"type": "number"},
	"id": {"type": "integer"}, "opt": {"type": "string"}},
	"required": ["big"], "additionalProperties": false}`)

// Bad arguments from the model, each through ToolArgValidation end to end.
// Each must come back to the model as feedback naming the reason, bounded
// in size, with no panic; failing open it hands the call on, failing closed
// it returns an error carrying the same reason.
func TestBadArgumentsEndToEnd(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("a", 10<<20) // 10 MB
	if raceEnabled || testing.Short() {
		big = big[:1<<20] // 1 MB: the race detector makes 10 MB take 20 s
	}
	tests := []struct {
		name string
		tool llms.Tool
		args string
		want string // in the feedback; "" = the call is valid
	}{
		{"invalid UTF-8 outside strings", weatherTool, "{\"city\": \xff}",
			`- (root): arguments are not valid JSON: invalid character 'ÿ' looking for beginning of value at byte 10`},
		{"invalid UTF-8 inside a string is U+FFFD, as for any Go tool", weatherTool, "{\"city\": \"Par\xffis\"}", ""},
		{"invalid UTF-8 echoed as U+FFFD", weatherTool, "{\"city\": \"Paris\", \"days\": \"\xff\xfe\"}",
			"- /days: expected integer, got \"\uFFFD\uFFFD\""},
		{"truncated", weatherTool, `{"city": "Par`,
			"- (root): arguments are not valid JSON: unexpected end of input after byte 13 (truncated?)"},
		{"truncated after a key", weatherTool, `{"city": "Paris", "days"`,
			"- (root): arguments are not valid JSON: unexpected end of input after byte 24 (truncated?)"},
		{"duplicate keys", weatherTool, `{"city": "Paris", "city": 1}`,
			`- (root): arguments are ambiguous JSON: the key "city" appears more than once in the object at (root) (byte 18); send each key once`},
		{"duplicate keys, escaped", weatherTool, `{"city": "Paris", "c\u0069ty": "Rome"}`,
			`the key "city" appears more than once`},
		{"10 MB string", weatherTool, `{"city": "Paris", "days": "` + big + `"}`,
			`- /days: expected integer, got "` + strings.Repeat("a", 79) + `…`},
		{"10 MB key", weatherTool, `{"city": "Paris", "` + big + `": 1}`,
			`: unexpected property; allowed properties: "city", "days", "note", "tags", "units", got 1`},
		{"nesting 100,000 deep", weatherTool, `{"city": ` + strings.Repeat("[", 100000) + strings.Repeat("]", 100000) + `}`,
			"- (root): arguments are nested deeper than 128 levels of arrays and objects; send a flatter value"},
		{"nesting 200 deep", weatherTool, `{"city": ` + strings.Repeat(`{"a":`, 199) + `1` + strings.Repeat("}", 199) + `}`,
			"- (root): arguments are nested deeper than 128 levels of arrays and objects; send a flatter value"},
		{"NaN", weatherTool, `{"city": "Paris", "days": NaN}`,
			"- (root): arguments are not valid JSON: invalid character 'N' looking for beginning of value at byte 27"},
		{"Infinity", weatherTool, `{"city": "Paris", "days": Infinity}`,
			"invalid character 'I' looking for beginning of value"},
		{"-Infinity", weatherTool, `{"city": "Paris", "days": -Infinity}`,
			"invalid character 'I' in numeric literal"},
		{"exponent too large to check", weatherTool, `{"city": "Paris", "days": 1e999999}`,
			"- /days: number out of range: at most 100 characters and an exponent within ±400 are accepted, got 1e999999"},
		{"integer beyond float64 precision checked exactly", numbersTool, `{"big": 9007199254740993}`,
			"- /big: expected a number <= 9007199254740992, got 9007199254740993"},
		{"fraction is no integer however long", numbersTool, `{"big": 1, "id": 12345678901234567890.5}`,
			"- /id: expected integer, got 12345678901234567890.5"},
		{"array at the top", weatherTool, `["Paris"]`, `- (root): arguments are not a JSON object but an array, got ["Paris"]`},
		{"string at the top", weatherTool, `"Paris"`, `- (root): arguments are not a JSON object but a string, got "Paris"`},
		{"null at the top", weatherTool, `null`, `- (root): arguments are not a JSON object but null, got null`},
		{"number at the top", weatherTool, `42`, `- (root): arguments are not a JSON object but an integer, got 42`},
		{"empty is {}", weatherTool, ``, `- /city: missing required property (string)`},
		{"data after the object", weatherTool, `{"city": "Paris"} {"city": "Rome"}`,
			"- (root): arguments are not valid JSON: unexpected data after the JSON value at byte 17"},
		{"byte order mark", weatherTool, "\ufeff{\"city\": \"Paris\"}", "invalid character 'ï' looking for beginning of value at byte 1"},
		{"raw line break in a string", weatherTool, "{\"city\": \"Pa\nris\"}", `invalid character '\n' in string literal at byte 13`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fixed := `{"city": "Paris"}`
			if tc.tool.Function.Name == "measure" {
				fixed = `{"big": 1}`
			}
			name := tc.tool.Function.Name
			m := fakemodel.New(fakemodel.ToolCalls(fakemodel.Call(name, tc.args)), fakemodel.ToolCalls(fakemodel.Call(name, fixed)))
			resp, err := run(t, m, []llms.Tool{tc.tool}, middleware.ToolArgValidation())
			if err != nil {
				t.Fatal(err)
			}
			reqs := m.Requests()
			if tc.want == "" {
				if len(reqs) != 1 || args(resp, 0) != tc.args {
					t.Errorf("valid call: %d model calls, arguments %q; want 1 call, arguments untouched", len(reqs), args(resp, 0))
				}
				return
			}
			if len(reqs) != 2 {
				t.Fatalf("model calls = %d, want 2 (a re-ask)", len(reqs))
			}
			feedback := lastToolMessage(t, reqs[1].Messages)
			checkBoundedFeedback(t, feedback)
			if !strings.Contains(feedback, tc.want) {
				t.Errorf("feedback:\n%s\nwant it to contain %q", feedback, tc.want)
			}
			if got := args(resp, 0); got != fixed {
				t.Errorf("final arguments = %q, want the corrected call", got)
			}

			// No retries, failing closed: an error with the same reason.
			m = fakemodel.New(fakemodel.ToolCalls(fakemodel.Call(name, tc.args)))
			_, err = run(t, m, []llms.Tool{tc.tool}, middleware.ToolArgValidation(guard.WithMaxRetries(0), guard.WithFailClosed()))
			var ite *guard.InvalidToolCallsError
			var ve *validation.Error
			if !errors.As(err, &ite) || !errors.As(err, &ve) || len(ve.Violations) == 0 {
				t.Fatalf("fail closed: error = %v, want *InvalidToolCallsError wrapping *validation.Error", err)
			}
			if n := len(err.Error()); n > 8<<10 {
				t.Errorf("fail closed: error text is %d bytes, want <= 8 KiB", n)
			}
			// No retries, failing open: the call is handed on as sent.
			m = fakemodel.New(fakemodel.ToolCalls(fakemodel.Call(name, tc.args)))
			resp, err = run(t, m, []llms.Tool{tc.tool}, middleware.ToolArgValidation(guard.WithMaxRetries(0)))
			if err != nil || len(resp.Choices[0].ToolCalls) != 1 {
				t.Fatalf("fail open: %v, %v; want the response", resp, err)
			}
		})
	}
}

func lastToolMessage(t *testing.T, msgs []llms.MessageContent) string {
	t.Helper()
	last := msgs[len(msgs)-1]
	if last.Role != llms.ChatMessageTypeTool || len(last.Parts) != 1 {
		t.Fatalf("last message %+v, want one tool message", last)
	}
	return last.Parts[0].(llms.ToolCallResponse).Content
}

// checkBoundedFeedback: errfmt's bound holds, the text is valid UTF-8, and
// model-supplied text broke no line.
func checkBoundedFeedback(t *testing.T, feedback string) {
	t.Helper()
	if len(feedback) > errfmt.DefaultMaxBytes {
		t.Errorf("feedback is %d bytes, want <= %d", len(feedback), errfmt.DefaultMaxBytes)
	}
	if !utf8.ValidString(feedback) {
		t.Errorf("feedback is not valid UTF-8: %q", feedback)
	}
	for i, line := range strings.Split(feedback, "\n") {
		if i > 0 && !strings.HasPrefix(line, "- ") && !strings.HasPrefix(line, "Call ") {
			t.Errorf("feedback line %d = %q: model text broke a line", i, line)
		}
	}
}

// TestBadArgumentsBoundedMemory: large and deep arguments cost memory in
// proportion to their size, measured with runtime.MemStats around whole
// calls (no clock). The limit per case is generous, and still catches
// anything quadratic.
func TestBadArgumentsBoundedMemory(t *testing.T) {
	// Not parallel: MemStats counts every goroutine's allocations.
	if raceEnabled || testing.Short() {
		t.Skip("allocation figures are measured without -race and -short")
	}
	const mb = 1 << 20
	invalid := make([]string, validation.MaxValues-4)
	for i := range invalid {
		invalid[i] = "{}"
	}
	cases := []struct {
		name, args string
		limit      uint64
	}{
		// fakemodel copies the request (the 10 MB call is in the re-ask)
		// and the response; decoding and validating cost a few times more.
		{"10 MB string, invalid", `{"city": "Paris", "days": "` + strings.Repeat("a", 10*mb) + `"}`, 400 * mb},
		{"10 MB string, valid", `{"city": "` + strings.Repeat("a", 10*mb) + `"}`, 400 * mb},
		{"nesting 100,000 deep", `{"city": ` + strings.Repeat("[", 100000) + strings.Repeat("]", 100000) + `}`, 8 * mb},
		// Refused by the value count before validation.
		{"10 MB of empty values", `{"city": 1, "tags": [` + strings.Repeat(`{}, `, 10*mb/4) + `{}], "note": null}`, 400 * mb},
		{"10 MB of big numbers", `{"city": "Paris", "tags": [` + strings.Repeat(`1e400, `, 10*mb/7) + `1]}`, 400 * mb},
		// The worst accepted: every value invalid. The validator's own
		// errors cost about 1.5 KB per value, twice.
		{"100,000 invalid values", `{"city": 1, "tags": [` + strings.Join(invalid, ",") + `], "note": null}`, 600 * mb},
	}
	for _, tc := range cases {
		m := fakemodel.New(fakemodel.ToolCalls(fakemodel.Call("get_weather", tc.args)), fakemodel.ToolCalls(fakemodel.Call("get_weather", `{"city": "Paris"}`)))
		llm := middleware.Wrap(m, middleware.ToolArgValidation())
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		if _, err := llm.GenerateContent(context.Background(), question, llms.WithTools([]llms.Tool{weatherTool})); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		runtime.ReadMemStats(&after)
		allocated := after.TotalAlloc - before.TotalAlloc
		if allocated > tc.limit {
			t.Errorf("%s (%d bytes): allocated %d bytes, want <= %d", tc.name, len(tc.args), allocated, tc.limit)
		}
		t.Logf("%s: %d bytes in, %d bytes allocated (%.1fx)", tc.name, len(tc.args), allocated, float64(allocated)/float64(len(tc.args)))
	}
}

// TestBigNumbersWrittenBackExactly: when stripping rewrites the arguments,
// numbers beyond float64 and int64 keep every digit as sent.
func TestBigNumbersWrittenBackExactly(t *testing.T) {
	t.Parallel()
	const sent = `{"big": 123, "id": 123456789012345678901234567890, "huge": 1e400, "tiny": -4.9E-400, "precise": 0.1000000000000000055511151231257827, "opt": null}`
	const want = `{"big":123,"huge":1e400,"id":123456789012345678901234567890,"precise":0.1000000000000000055511151231257827,"tiny":-4.9E-400}`
	for _, mode := range []strip.Mode{strip.SchemaAware, strip.Recursive} {
		m := fakemodel.New(fakemodel.ToolCalls(fakemodel.Call("measure", sent)))
		resp, err := run(t, m, []llms.Tool{numbersTool}, middleware.ToolArgValidation(guard.WithStripEmpty(mode)))
		if err != nil {
			t.Fatal(err)
		}
		if got := args(resp, 0); got != want {
			t.Errorf("%v: written back %s, want %s", mode, got, want)
		}
	}
}

// TestOddToolNames: whatever a tool is called, by the developer or by the
// model, the feedback quotes it and stays bounded.
func TestOddToolNames(t *testing.T) {
	t.Parallel()
	names := []string{"", "get weather", "a\nb", `say "hi"\`, "météo", "\x00\x1b[31m", "../../etc/passwd", strings.Repeat("x", 10000), "\xff\xfe", "\u2028"}
	for _, name := range names {
		t.Run(fmt.Sprintf("%.20q", name), func(t *testing.T) {
			t.Parallel()
			known := tool(name, weatherParams)
			m := fakemodel.New(
				fakemodel.ToolCalls(fakemodel.Call(name, `{"city": 1}`), fakemodel.Call(name+"?", `{}`)),
				fakemodel.ToolCalls(fakemodel.Call(name, `{"city": "Paris"}`)))
			resp, err := run(t, m, []llms.Tool{known}, middleware.ToolArgValidation(guard.WithUnknownTools(guard.UnknownReject)))
			if err != nil {
				t.Fatal(err)
			}
			if args(resp, 0) != `{"city": "Paris"}` {
				t.Errorf("final arguments %q, want the corrected call", args(resp, 0))
			}
			msgs := m.Requests()[1].Messages
			invalid := msgs[len(msgs)-3].Parts[0].(llms.ToolCallResponse).Content
			unknown := msgs[len(msgs)-1].Parts[0].(llms.ToolCallResponse).Content
			checkBoundedFeedback(t, invalid)
			head := "Invalid arguments for tool " + safetext.Quote(name, 64)
			if name == "" {
				head = "Invalid arguments" // never tool ""
			}
			if !strings.HasPrefix(invalid, head+": 1 error.\n- /city: expected string, got 1\n") {
				t.Errorf("feedback:\n%s\nwant the quoted name", invalid)
			}
			if !strings.HasPrefix(unknown, "Tool "+safetext.Quote(name+"?", 64)+" does not exist.") || len(unknown) > errfmt.DefaultMaxBytes ||
				strings.ContainsAny(unknown, "\n\x00\x1b") {
				t.Errorf("unknown-tool answer:\n%s\nwant the quoted name on one bounded line", unknown)
			}
		})
	}
}

// TestOddResponses: responses without choices, with nil choices, with nil
// FunctionCalls or with nothing but text pass or are re-asked; none panics.
func TestOddResponses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		resp   *llms.ContentResponse
		reasks bool
	}{
		{"no choices", &llms.ContentResponse{}, false},
		{"nil choice", &llms.ContentResponse{Choices: []*llms.ContentChoice{nil}}, false},
		{"nil choices around a call", &llms.ContentResponse{Choices: []*llms.ContentChoice{nil, {ToolCalls: []llms.ToolCall{
			{ID: "a", FunctionCall: &llms.FunctionCall{Name: "get_weather", Arguments: `{"city": 1}`}}}}, nil}}, true},
		{"nil FunctionCall", &llms.ContentResponse{Choices: []*llms.ContentChoice{{ToolCalls: []llms.ToolCall{{ID: "a"}}}}}, true},
		{"nil FunctionCall and no id", &llms.ContentResponse{Choices: []*llms.ContentChoice{{ToolCalls: []llms.ToolCall{{}}}}}, true},
		{"empty function name", &llms.ContentResponse{Choices: []*llms.ContentChoice{{ToolCalls: []llms.ToolCall{
			{FunctionCall: &llms.FunctionCall{}}}}}}, false},
		{"legacy FuncCall only", &llms.ContentResponse{Choices: []*llms.ContentChoice{{
			FuncCall: &llms.FunctionCall{Name: "get_weather", Arguments: `[]`}}}}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := fakemodel.New(fakemodel.Response(tc.resp), fakemodel.Text("done"))
			resp, err := run(t, m, []llms.Tool{weatherTool}, middleware.ToolArgValidation())
			if err != nil || resp == nil {
				t.Fatalf("GenerateContent = %v, %v", resp, err)
			}
			if got := len(m.Requests()) == 2; got != tc.reasks {
				t.Errorf("re-asked = %v, want %v", got, tc.reasks)
			}
		})
	}
}

// TestThousandToolCalls: one response with 1,000 tool calls, every other
// one invalid, is replayed call by call with unique ids, each answer
// bounded.
func TestThousandToolCalls(t *testing.T) {
	t.Parallel()
	const n = 1000
	calls := make([]llms.ToolCall, n)
	for i := range calls {
		a := fmt.Sprintf(`{"city": "c%d"}`, i)
		if i%2 == 1 {
			a = fmt.Sprintf(`{"city": %d, "units": "kelvin", "extra": %q}`, i, strings.Repeat("x", 1000))
		}
		calls[i] = llms.ToolCall{Type: "function", FunctionCall: &llms.FunctionCall{Name: "get_weather", Arguments: a}}
	}
	m := fakemodel.New(
		fakemodel.Response(&llms.ContentResponse{Choices: []*llms.ContentChoice{{ToolCalls: calls}}}),
		fakemodel.ToolCalls(fakemodel.Call("get_weather", `{"city": "Paris"}`)))
	if _, err := run(t, m, []llms.Tool{weatherTool}, middleware.ToolArgValidation()); err != nil {
		t.Fatal(err)
	}
	replay := m.Requests()[1].Messages[len(question):]
	if len(replay) != 2*n {
		t.Fatalf("replay has %d messages, want %d", len(replay), 2*n)
	}
	ids := map[string]bool{}
	total := 0
	for i := 0; i < len(replay); i += 2 {
		tc := replay[i].Parts[len(replay[i].Parts)-1].(llms.ToolCall)
		answer := replay[i+1].Parts[0].(llms.ToolCallResponse)
		if tc.ID == "" || ids[tc.ID] || answer.ToolCallID != tc.ID {
			t.Fatalf("call %d: id %q (answer %q), want unique, non-empty and answered", i/2, tc.ID, answer.ToolCallID)
		}
		ids[tc.ID] = true
		if i/2%2 == 1 {
			checkBoundedFeedback(t, answer.Content)
			if !strings.Contains(answer.Content, "3 errors") {
				t.Errorf("call %d: feedback %q, want 3 errors", i/2, answer.Content)
			}
		} else if answer.Content != notExecuted {
			t.Errorf("call %d: answer %q, want NotExecuted", i/2, answer.Content)
		}
		total += len(answer.Content)
	}
	t.Logf("1,000 calls: %d bytes of tool messages in the re-ask", total)
}

// TestBadSchemasDoNotBreakOtherTools: tools whose schema cannot be compiled
// — a remote $ref, exponential fan-out, not JSON — pass unvalidated with an
// event (fail open), a schema with an unknown $schema is enforced with the
// default draft, and the other tools are validated as usual.
func TestBadSchemasDoNotBreakOtherTools(t *testing.T) {
	t.Parallel()
	var defs []string
	for i := range 20 {
		defs = append(defs, fmt.Sprintf(`"d%d": {"allOf": [{"$ref": "#/definitions/d%d"}, {"$ref": "#/definitions/d%d"}]}`, i, i+1, i+1))
	}
	laughs := `{"definitions": {` + strings.Join(defs, ",") + `, "d20": {}}, "$ref": "#/definitions/d0"}`
	tools := []llms.Tool{
		tool("remote", `{"properties": {"x": {"$ref": "https://127.0.0.1:9/x.json"}}}`),
		tool("laughs", laughs),
		tool("not_json", `{"type": `),
		tool("future", `{"$schema": "https://json-schema.org/draft/2030-01/schema", "properties": {"x": {"type": "string"}}}`),
		weatherTool,
	}
	bad := []llms.ToolCall{fakemodel.Call("remote", `{"x": 1}`), fakemodel.Call("laughs", `{"x": 1}`),
		fakemodel.Call("not_json", `{"x": 1}`), fakemodel.Call("future", `{"x": 1}`), fakemodel.Call("get_weather", `{"city": 1}`)}
	good := []llms.ToolCall{fakemodel.Call("remote", `{"x": 1}`), fakemodel.Call("laughs", `{"x": 1}`),
		fakemodel.Call("not_json", `{"x": 1}`), fakemodel.Call("future", `{"x": "y"}`), fakemodel.Call("get_weather", `{"city": "Paris"}`)}
	m := fakemodel.New(fakemodel.ToolCalls(bad...), fakemodel.ToolCalls(good...))
	rec := &recorder{}
	if _, err := run(t, m, tools, middleware.ToolArgValidation(guard.WithEventHandler(rec.handle))); err != nil {
		t.Fatal(err)
	}
	if n := len(m.Requests()); n != 2 {
		t.Fatalf("model calls = %d, want 2", n)
	}
	msgs := m.Requests()[1].Messages
	answers := map[string]string{}
	for _, mc := range msgs[len(question):] {
		if r, ok := mc.Parts[0].(llms.ToolCallResponse); ok {
			answers[r.Name] = r.Content
		}
	}
	for _, name := range []string{"remote", "laughs", "not_json"} {
		if answers[name] != notExecuted {
			t.Errorf("%s: answer %q, want it passed (NotExecuted as a sibling)", name, answers[name])
		}
	}
	if !strings.Contains(answers["future"], "- /x: expected string, got 1") || !strings.Contains(answers["get_weather"], "- /city: expected string, got 1") {
		t.Errorf("answers %q, want future and get_weather validated", answers)
	}
	schemaErrs := map[string]error{}
	fallback := false
	rec.mu.Lock()
	for _, e := range rec.events {
		switch e.Kind {
		case guard.EventSchemaError:
			schemaErrs[e.Tool] = e.Err
		case guard.EventSchemaFallback:
			fallback = fallback || e.Tool == "future"
		}
	}
	rec.mu.Unlock()
	if !errors.Is(schemaErrs["remote"], validation.ErrRefused) || !errors.Is(schemaErrs["laughs"], validation.ErrTooComplex) ||
		schemaErrs["not_json"] == nil || len(schemaErrs) != 3 {
		t.Errorf("schema error events %v, want remote (refused), laughs (too complex) and not_json", schemaErrs)
	}
	if !fallback {
		t.Errorf("no EventSchemaFallback for the tool with an unknown $schema")
	}
}
