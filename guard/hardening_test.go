package guard_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/toolguard/toolguard/errfmt"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/internal/safetext"
	"github.com/toolguard/toolguard/strip"
	"github.com/toolguard/toolguard/validation"
)

// numbersTool takes numbers beyond float64 and int64.
var numbersTool = guard.Tool{Name: "measure", Schema: `{"type": "object", "properties": {
	"big": {"type": "integer", "maximum": 9007199254740992},
	"huge": {"type": "number"}, "tiny": {"type": "number"}, "precise": {"type": "number"},
	"id": {"type": "integer"}, "opt": {"type": "string"}},
	"required": ["big"], "additionalProperties": false}`}

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
		tool guard.Tool
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
			if tc.tool.Name == "measure" {
				fixed = `{"big": 1}`
			}
			name := tc.tool.Name
			m := newScript(callsStep(call(name, tc.args)), callsStep(call(name, fixed)))
			resp, err := run(m, question(tc.tool), toolArgValidation())
			if err != nil {
				t.Fatal(err)
			}
			reqs := m.requests()
			if tc.want == "" {
				if len(reqs) != 1 || args(resp, 0) != tc.args {
					t.Errorf("valid call: %d model calls, arguments %q; want 1 call, arguments untouched", len(reqs), args(resp, 0))
				}
				return
			}
			if len(reqs) != 2 {
				t.Fatalf("model calls = %d, want 2 (a re-ask)", len(reqs))
			}
			feedback := lastToolMessage(t, reqs[1].Msgs)
			checkBoundedFeedback(t, feedback)
			if !strings.Contains(feedback, tc.want) {
				t.Errorf("feedback:\n%s\nwant it to contain %q", feedback, tc.want)
			}
			if got := args(resp, 0); got != fixed {
				t.Errorf("final arguments = %q, want the corrected call", got)
			}

			// No retries, failing closed: an error with the same reason.
			m = newScript(callsStep(call(name, tc.args)))
			_, err = run(m, question(tc.tool), toolArgValidation(guard.WithMaxRetries(0), guard.WithFailClosed()))
			var ite *guard.InvalidToolCallsError
			var ve *validation.Error
			if !errors.As(err, &ite) || !errors.As(err, &ve) || len(ve.Violations) == 0 {
				t.Fatalf("fail closed: error = %v, want *InvalidToolCallsError wrapping *validation.Error", err)
			}
			if n := len(err.Error()); n > 8<<10 {
				t.Errorf("fail closed: error text is %d bytes, want <= 8 KiB", n)
			}
			// No retries, failing open: the call is handed on as sent.
			m = newScript(callsStep(call(name, tc.args)))
			resp, err = run(m, question(tc.tool), toolArgValidation(guard.WithMaxRetries(0)))
			if err != nil || len(resp.Calls) != 1 {
				t.Fatalf("fail open: %v, %v; want the response", resp, err)
			}
		})
	}
}

// lastToolMessage returns the content of the tool result that ends msgs.
func lastToolMessage(t *testing.T, msgs []msg) string {
	t.Helper()
	last := msgs[len(msgs)-1]
	if last.Role != roleTool {
		t.Fatalf("last message %+v, want a tool result", last)
	}
	return last.Text
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
		// The script keeps the request (the 10 MB call is in the re-ask);
		// decoding and validating cost a few times more.
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
		m := newScript(callsStep(call("get_weather", tc.args)), callsStep(call("get_weather", `{"city": "Paris"}`)))
		llm := wrap(m, toolArgValidation())
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		if _, err := llm(context.Background(), question(weatherTool)); err != nil {
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
		m := newScript(callsStep(call("measure", sent)))
		resp, err := run(m, question(numbersTool), toolArgValidation(guard.WithStripEmpty(mode)))
		if err != nil {
			t.Fatal(err)
		}
		if got := string(resp.Calls[0].Args); got != want {
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
			known := guard.Tool{Name: name, Schema: weatherSchema}
			m := newScript(
				callsStep(call(name, `{"city": 1}`), call(name+"?", `{}`)),
				callsStep(call(name, `{"city": "Paris"}`)))
			resp, err := run(m, question(known), toolArgValidation(guard.WithUnknownTools(guard.UnknownReject)))
			if err != nil {
				t.Fatal(err)
			}
			if got := string(resp.Calls[0].Args); got != `{"city": "Paris"}` {
				t.Errorf("final arguments %q, want the corrected call", got)
			}
			msgs := m.requests()[1].Msgs
			invalid := msgs[len(msgs)-2].Text
			unknown := msgs[len(msgs)-1].Text
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

// TestThousandToolCalls: one response with 1,000 tool calls, every other
// one invalid, is replayed call by call with unique ids, each answer
// bounded.
func TestThousandToolCalls(t *testing.T) {
	t.Parallel()
	const n = 1000
	calls := make([]guard.Call, n)
	for i := range calls {
		a := fmt.Sprintf(`{"city": "c%d"}`, i)
		if i%2 == 1 {
			a = fmt.Sprintf(`{"city": %d, "units": "kelvin", "extra": %q}`, i, strings.Repeat("x", 1000))
		}
		calls[i] = call("get_weather", a) // no id: the codec gives one
	}
	m := newScript(
		func(context.Context, *script, *tReq) (*tResp, error) { return &tResp{Calls: slices.Clone(calls)}, nil },
		callsStep(call("get_weather", `{"city": "Paris"}`)))
	if _, err := run(m, question(weatherTool), toolArgValidation()); err != nil {
		t.Fatal(err)
	}
	replay := m.requests()[1].Msgs[len(question().Msgs):]
	if len(replay) != 1+n || len(replay[0].Calls) != n {
		t.Fatalf("replay has %d messages, want a model turn of %d calls and %d tool results", len(replay), n, n)
	}
	ids := map[string]bool{}
	total := 0
	for i, tc := range replay[0].Calls {
		answer := replay[1+i]
		if tc.ID == "" || ids[tc.ID] || answer.CallID != tc.ID {
			t.Fatalf("call %d: id %q (answer %q), want unique, non-empty and answered", i, tc.ID, answer.CallID)
		}
		ids[tc.ID] = true
		if i%2 == 1 {
			checkBoundedFeedback(t, answer.Text)
			if !strings.Contains(answer.Text, "3 errors") {
				t.Errorf("call %d: feedback %q, want 3 errors", i, answer.Text)
			}
		} else if answer.Text != notExecuted {
			t.Errorf("call %d: answer %q, want NotExecuted", i, answer.Text)
		}
		total += len(answer.Text)
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
	tools := []guard.Tool{
		{Name: "remote", Schema: `{"properties": {"x": {"$ref": "https://127.0.0.1:9/x.json"}}}`},
		{Name: "laughs", Schema: laughs},
		{Name: "not_json", Schema: `{"type": `},
		{Name: "future", Schema: `{"$schema": "https://json-schema.org/draft/2030-01/schema", "properties": {"x": {"type": "string"}}}`},
		weatherTool,
	}
	bad := []guard.Call{call("remote", `{"x": 1}`), call("laughs", `{"x": 1}`),
		call("not_json", `{"x": 1}`), call("future", `{"x": 1}`), call("get_weather", `{"city": 1}`)}
	good := []guard.Call{call("remote", `{"x": 1}`), call("laughs", `{"x": 1}`),
		call("not_json", `{"x": 1}`), call("future", `{"x": "y"}`), call("get_weather", `{"city": "Paris"}`)}
	m := newScript(callsStep(bad...), callsStep(good...))
	rec := &recorder{}
	if _, err := run(m, question(tools...), toolArgValidation(guard.WithEventHandler(rec.handle))); err != nil {
		t.Fatal(err)
	}
	if n := len(m.requests()); n != 2 {
		t.Fatalf("model calls = %d, want 2", n)
	}
	msgs := m.requests()[1].Msgs
	answers := map[string]string{}
	for _, mc := range msgs[len(question().Msgs):] {
		if mc.Role == roleTool {
			answers[mc.Tool] = mc.Text
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
