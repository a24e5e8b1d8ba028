package guard_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/strip"
	"github.com/toolguard/toolguard/validation"
)

func TestValidCallPassesInOneModelCall(t *testing.T) {
	t.Parallel()
	const sent = `{"city": "Paris", "units": "celsius"}`
	m := newScript(callsStep(call("get_weather", sent)))
	resp, err := run(m, question(weatherTool), toolArgValidation())
	if err != nil {
		t.Fatal(err)
	}
	if n := len(m.requests()); n != 1 {
		t.Errorf("model calls = %d, want 1", n)
	}
	if got := args(resp, 0); got != sent {
		t.Errorf("arguments = %q, want them untouched: %q", got, sent)
	}
}

func TestTextResponsePassesUntouched(t *testing.T) {
	t.Parallel()
	m := newScript(textStep("It is sunny."))
	resp, err := run(m, question(weatherTool), toolArgValidation())
	if err != nil || resp.Text != "It is sunny." || len(m.requests()) != 1 {
		t.Errorf("text response: %v, %v after %d calls; want it returned after 1 call", resp, err, len(m.requests()))
	}
}

func TestInvalidCallIsReaskedWithFeedback(t *testing.T) {
	t.Parallel()
	const bad = `{"city": 42, "units": "kelvin", "days": 0, "extra": true}`
	const good = `{"city": "Paris"}`
	m := newScript(
		callsStep(call("get_weather", bad)),
		callsStep(call("get_weather", good)),
	)
	var rec recorder
	resp, err := run(m, question(weatherTool), toolArgValidation(guard.WithEventHandler(rec.handle)))
	if err != nil {
		t.Fatal(err)
	}
	reqs := m.requests()
	if len(reqs) != 2 {
		t.Fatalf("model calls = %d, want 2", len(reqs))
	}
	if got := args(resp, 0); got != good {
		t.Errorf("returned arguments = %q, want the corrected %q", got, good)
	}
	if id := resp.Calls[0].ID; id != "call_2" {
		t.Errorf("returned call id = %q, want the second attempt's call_2", id)
	}

	wantFeedback := strings.Join([]string{
		`Invalid arguments for tool "get_weather": 4 errors.`,
		`- /city: expected string, got 42`,
		`- /days: expected a number >= 1, got 0`,
		`- /extra: unexpected property; allowed properties: "city", "days", "note", "tags", "units", got true`,
		`- /units: expected one of "celsius", "fahrenheit", got "kelvin"`,
		`Call get_weather again with corrected arguments.`,
	}, "\n")
	want := append(question().Msgs,
		msg{Role: roleModel, Calls: []guard.Call{{ID: "call_1", Name: "get_weather", Args: []byte(bad)}}},
		msg{Role: roleTool, CallID: "call_1", Tool: "get_weather", Text: wantFeedback, Refused: true},
	)
	if !reflect.DeepEqual(reqs[1].Msgs, want) {
		t.Errorf("re-ask messages:\n%s\nwant:\n%s", dump(reqs[1].Msgs), dump(want))
	}
	if e, ok := rec.find(guard.EventInvalid); !ok || e.Feedback != wantFeedback || e.CallID != "call_1" {
		t.Errorf("invalid event = %+v, want call_1 with the feedback the model was sent", e)
	}
	if len(reqs[1].Tools) != 1 {
		t.Errorf("re-ask offered %d tools, want the original request's (1 tool)", len(reqs[1].Tools))
	}
}

func TestRetriesExhausted(t *testing.T) {
	t.Parallel()
	for _, maxRetries := range []int{0, 1, 2, 4} {
		t.Run(fmt.Sprint("max", maxRetries), func(t *testing.T) {
			t.Parallel()
			var steps []step
			for i := 0; i <= maxRetries+1; i++ {
				steps = append(steps, callsStep(call("get_weather", fmt.Sprintf(`{"city": %d}`, i))))
			}
			m := newScript(steps...)
			var opts []guard.ValidationOption
			if maxRetries != 2 { // 2 is the default
				opts = append(opts, guard.WithMaxRetries(maxRetries))
			}
			rec := &recorder{}
			opts = append(opts, guard.WithEventHandler(rec.handle))
			resp, err := run(m, question(weatherTool), toolArgValidation(opts...))
			if err != nil {
				t.Fatalf("fail-open returned error %v", err)
			}
			if n := len(m.requests()); n != maxRetries+1 {
				t.Errorf("model calls = %d, want max_retries+1 = %d", n, maxRetries+1)
			}
			if got, want := args(resp, 0), fmt.Sprintf(`{"city": %d}`, maxRetries); got != want {
				t.Errorf("returned arguments = %q, want the last attempt's %q", got, want)
			}
			e, ok := rec.find(guard.EventGiveUp)
			var ve *validation.Error
			if !ok || e.Attempt != maxRetries+1 || !errors.As(e.Err, &ve) {
				t.Errorf("give-up event = %+v (found %v), want attempt %d with a *validation.Error", e, ok, maxRetries+1)
			}
		})
	}
}

func TestFailClosed(t *testing.T) {
	t.Parallel()
	m := newScript(
		callsStep(call("get_weather", `{"city": 1}`)),
		callsStep(call("get_weather", `{"city": 2}`)),
		callsStep(call("get_weather", `{"city": 3}`)),
	)
	resp, err := run(m, question(weatherTool), toolArgValidation(guard.WithFailClosed()))
	if resp != nil {
		t.Errorf("fail-closed returned a response: %v", resp)
	}
	var ve *validation.Error
	if !errors.As(err, &ve) {
		t.Fatalf("error %v does not wrap a *validation.Error", err)
	}
	if ve.Tool != "get_weather" || ve.CallID != "call_3" || len(ve.Violations) != 1 || ve.Violations[0].Path != "/city" {
		t.Errorf("validation error = %+v, want get_weather call_3 with one /city violation", ve)
	}
	var ie *guard.InvalidToolCallsError
	if !errors.As(err, &ie) || ie.Attempts != 3 || ie.Response == nil {
		t.Errorf("error = %#v, want *InvalidToolCallsError after 3 attempts carrying the response", err)
	}
}

// TestMixedBatchSiblingsAreNotExecuted: in a batch with one invalid call,
// the valid sibling and the unknown tool's call are answered as not
// executed, the invalid one with its violations, each under its own id, and
// the response's text is replayed with them. (Package middleware's test of
// the same name checks langchaingo's layout of that re-ask.)
func TestMixedBatchSiblingsAreNotExecuted(t *testing.T) {
	t.Parallel()
	m := newScript(
		func(context.Context, *script, *tReq) (*tResp, error) {
			return &tResp{Text: "Checking both.", Calls: []guard.Call{
				{ID: "a", Name: "search", Args: []byte(`{"query": "paris"}`)},
				{ID: "b", Name: "get_weather", Args: []byte(`{"city": null}`)},
				{ID: "c", Name: "unlisted", Args: []byte(`not json`)},
			}}, nil
		},
		callsStep(call("search", `{"query": "paris"}`), call("get_weather", `{"city": "Paris"}`)),
	)
	if _, err := run(m, question(weatherTool, searchTool), toolArgValidation()); err != nil {
		t.Fatal(err)
	}
	got := reasked(t, question().Msgs, m.requests()[1].Msgs)
	if len(got) != 3 {
		t.Fatalf("re-ask replayed %+v, want 3 calls", got)
	}
	for i, id := range []string{"a", "b", "c"} {
		if got[i].ID != id {
			t.Errorf("replayed call %d id = %q, want %q", i, got[i].ID, id)
		}
		wantNotExecuted := id != "b"
		if ne := got[i].Answer == notExecuted; ne != wantNotExecuted {
			t.Errorf("call %s answer = %q; not-executed = %v, want %v", id, got[i].Answer, ne, wantNotExecuted)
		}
	}
	if !strings.Contains(got[1].Answer, "/city: expected string, got null") {
		t.Errorf("feedback for the invalid call = %q, want the /city violation", got[1].Answer)
	}
	if turn := m.requests()[1].Msgs[len(question().Msgs)]; turn.Text != "Checking both." {
		t.Errorf("replayed model turn = %+v, want the response's text with the calls", turn)
	}
}

func TestUnknownTools(t *testing.T) {
	t.Parallel()
	t.Run("pass", func(t *testing.T) {
		t.Parallel()
		const raw = `{broken json`
		m := newScript(callsStep(call("get_wether", raw)))
		rec := &recorder{}
		resp, err := run(m, question(weatherTool), toolArgValidation(guard.WithEventHandler(rec.handle)))
		if err != nil || len(m.requests()) != 1 || args(resp, 0) != raw {
			t.Errorf("unknown tool with UnknownPass: %v after %d calls, args %q; want untouched after 1 call", err, len(m.requests()), args(resp, 0))
		}
		if e, ok := rec.find(guard.EventUnknownTool); !ok || e.Tool != "get_wether" {
			t.Errorf("no unknown-tool event for get_wether: %v", rec.kinds())
		}
	})
	t.Run("reject", func(t *testing.T) {
		t.Parallel()
		m := newScript(
			callsStep(call("get_wether", `{"city": "Paris"}`)),
			callsStep(call("get_weather", `{"city": "Paris"}`)),
		)
		resp, err := run(m, question(weatherTool, searchTool), toolArgValidation(guard.WithUnknownTools(guard.UnknownReject)))
		if err != nil || resp.Calls[0].Name != "get_weather" {
			t.Fatalf("UnknownReject: %v, %v; want the corrected call", resp, err)
		}
		fb := m.requests()[1].Msgs[len(question().Msgs)+1].Text
		want := `Tool "get_wether" does not exist. Available tools: "get_weather", "search". Did you mean "get_weather"? Call one of the available tools by its exact name.`
		if fb != want {
			t.Errorf("unknown-tool feedback = %q, want %q", fb, want)
		}
	})
}

func TestMalformedArguments(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, args string
		want       []string // substrings of the feedback
	}{
		{"truncated", `{"city": "Par`, []string{"(root): arguments are not valid JSON: unexpected end of input", "truncated"}},
		{"syntax", `{"city": 'Paris'}`, []string{"(root): arguments are not valid JSON: invalid character '\\'' looking for beginning of value at byte 10"}},
		{"trailing data", `{"city": "Paris"} and more`, []string{"not valid JSON: unexpected data after the JSON value"}},
		{"array", `["Paris"]`, []string{`(root): arguments are not a JSON object but an array, got ["Paris"]`}},
		{"string", `"Paris"`, []string{`(root): arguments are not a JSON object but a string, got "Paris"`}},
		{"null", `null`, []string{`arguments are not a JSON object but null`}},
		{"empty is {}", ``, []string{"/city: missing required property (string)"}},
		{"blank is {}", " \n ", []string{"/city: missing required property (string)"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := newScript(
				callsStep(call("get_weather", tc.args)),
				callsStep(call("get_weather", `{"city": "Paris"}`)),
			)
			if _, err := run(m, question(weatherTool), toolArgValidation()); err != nil {
				t.Fatal(err)
			}
			reqs := m.requests()
			if len(reqs) != 2 {
				t.Fatalf("model calls = %d, want 2", len(reqs))
			}
			fb := reqs[1].Msgs[len(question().Msgs)+1].Text
			for _, w := range tc.want {
				if !strings.Contains(fb, w) {
					t.Errorf("feedback for %q = %q, want it to contain %q", tc.args, fb, w)
				}
			}
		})
	}
}

func TestStripModes(t *testing.T) {
	t.Parallel()
	// tags is required here so that a required [] can be checked.
	strictTags := tool("get_weather", map[string]any{
		"type": "object",
		"properties": map[string]any{
			"city":  map[string]any{"type": "string"},
			"units": map[string]any{"type": "string"},
			"tags":  map[string]any{"type": "array"},
			"opts":  map[string]any{"type": "object", "properties": map[string]any{"x": map[string]any{"type": "integer"}}},
			"note":  map[string]any{"type": []any{"string", "null"}},
		},
		"required":             []any{"city", "tags"},
		"additionalProperties": false,
	})
	tests := []struct {
		name      string
		mode      strip.Mode
		sent      string
		wantArgs  string // arguments the caller receives (after any re-ask)
		wantCalls int
		wantPaths []string // the stripped event's paths, nil for none
	}{
		{"schema-aware strips null on optional", strip.SchemaAware,
			`{"city": "Paris", "tags": ["a"], "units": null}`, `{"city":"Paris","tags":["a"]}`, 1, []string{"/units"}},
		{"schema-aware strips only what fixes a violation", strip.SchemaAware,
			`{"city": "Paris", "tags": [], "opts": {"x": null}}`, `{"city":"Paris","opts":{},"tags":[]}`, 1, []string{"/opts/x"}},
		{"schema-aware keeps a required []", strip.SchemaAware,
			`{"city": "Paris", "tags": []}`, `{"city": "Paris", "tags": []}`, 1, nil},
		{"schema-aware keeps a valid nullable null", strip.SchemaAware,
			`{"city": "Paris", "tags": [], "note": null}`, `{"city": "Paris", "tags": [], "note": null}`, 1, nil},
		{"schema-aware does not remove a required null", strip.SchemaAware,
			`{"city": null, "tags": []}`, `{"city": "Paris", "tags": []}`, 2, nil},
		{"recursive strips everything empty", strip.Recursive,
			`{"city": "Paris", "tags": ["x", null], "note": null, "opts": {"x": null}}`, `{"city":"Paris","tags":["x",null]}`, 1, []string{"/note", "/opts", "/opts/x"}},
		{"recursive strips a required [] and re-asks", strip.Recursive,
			`{"city": "Paris", "tags": []}`, `{"city": "Paris", "tags": ["x"]}`, 2, []string{"/tags"}},
		{"off re-asks for a null on an optional key", strip.Off,
			`{"city": "Paris", "tags": [], "units": null}`, `{"city": "Paris", "tags": ["x"]}`, 2, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := newScript(
				callsStep(call("get_weather", tc.sent)),
				callsStep(call("get_weather", tc.wantArgs)),
			)
			rec := &recorder{}
			resp, err := run(m, question(strictTags),
				toolArgValidation(guard.WithStripEmpty(tc.mode), guard.WithEventHandler(rec.handle)))
			if err != nil {
				t.Fatal(err)
			}
			if n := len(m.requests()); n != tc.wantCalls {
				t.Errorf("model calls = %d, want %d", n, tc.wantCalls)
			}
			if got := args(resp, 0); got != tc.wantArgs {
				t.Errorf("arguments = %q, want %q", got, tc.wantArgs)
			}
			e, ok := rec.find(guard.EventStripped)
			if tc.wantPaths == nil {
				if ok {
					t.Errorf("stripped event %v, want none", e.Paths)
				}
			} else if !ok || !reflect.DeepEqual(e.Paths, tc.wantPaths) || e.Tool != "get_weather" {
				t.Errorf("stripped event = %+v, want paths %v", e, tc.wantPaths)
			}
		})
	}
}

type forecastArgs struct {
	City string `json:"city" jsonschema:"the city"`
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
}

func (a forecastArgs) Validate() error {
	if a.From != "" && a.To != "" && a.To < a.From {
		return validation.FieldError("/to", "must not be before from")
	}
	return nil
}

func TestSchemaForms(t *testing.T) {
	t.Parallel()
	mapSchema := map[string]any{
		"type":       "object",
		"properties": map[string]any{"city": map[string]any{"type": "string"}},
		"required":   []any{"city"},
	}
	forms := []struct {
		name   string
		params any
	}{
		{"map", mapSchema},
		{"json.RawMessage", json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)},
		{"[]byte", []byte(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)},
		{"string", `{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`},
		{"*validation.Schema", mustCompile(t, mapSchema)},
		{"Typed", validation.Typed[forecastArgs]()},
		{"Typed as Map", validation.Typed[forecastArgs]().Map()},
	}
	for _, f := range forms {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			m := newScript(
				callsStep(call("forecast", `{"city": ["Paris"]}`)),
				callsStep(call("forecast", `{"city": "Paris"}`)),
			)
			if _, err := run(m, question(tool("forecast", f.params)), toolArgValidation()); err != nil {
				t.Fatal(err)
			}
			if n := len(m.requests()); n != 2 {
				t.Fatalf("model calls = %d, want 2 (the wrong type rejected once)", n)
			}
			fb := m.requests()[1].Msgs[len(question().Msgs)+1].Text
			if !strings.Contains(fb, `/city: expected string, got ["Paris"]`) {
				t.Errorf("feedback = %q, want the /city type violation", fb)
			}
		})
	}
	t.Run("nil parameters accept any object but not broken JSON", func(t *testing.T) {
		t.Parallel()
		m := newScript(
			callsStep(call("anything", `{"x": [1, {"y": null}]`)),
			callsStep(call("anything", `{"x": [1, {"y": null}]}`)),
		)
		resp, err := run(m, question(tool("anything", nil)), toolArgValidation())
		if err != nil || len(m.requests()) != 2 || args(resp, 0) != `{"x": [1, {"y": null}]}` {
			t.Errorf("nil schema: %v after %d calls; want broken JSON re-asked, then any object accepted untouched", err, len(m.requests()))
		}
	})
}

// TestTypedValidateHook: a typed schema's Validate hook rejects a call the
// JSON Schema accepts, whether the request carries the *validation.Schema
// itself or a plain map with the *Schema given through WithToolSchemas (as
// the agent package does). A Map() alone is plain JSON: it has no hook.
func TestTypedValidateHook(t *testing.T) {
	t.Parallel()
	typed := validation.Typed[forecastArgs]()
	for _, tc := range []struct {
		name      string
		params    any
		ctx       context.Context
		wantCalls int
	}{
		{"schema in the request", typed, context.Background(), 2},
		{"map in the request, schema in the context", typed.Map(),
			guard.WithToolSchemas(context.Background(), map[string]any{"forecast": typed}), 2},
		{"map alone has no hook", typed.Map(), context.Background(), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := newScript(
				callsStep(call("forecast", `{"city": "Paris", "from": "2025-02-01", "to": "2025-01-01"}`)),
				callsStep(call("forecast", `{"city": "Paris", "from": "2025-01-01", "to": "2025-02-01"}`)),
			)
			llm := wrap(m, toolArgValidation())
			if _, err := llm(tc.ctx, question(tool("forecast", tc.params))); err != nil {
				t.Fatal(err)
			}
			if n := len(m.requests()); n != tc.wantCalls {
				t.Fatalf("model calls = %d, want %d", n, tc.wantCalls)
			}
			if tc.wantCalls == 1 {
				return
			}
			fb := m.requests()[1].Msgs[len(question().Msgs)+1].Text
			if !strings.Contains(fb, "- /to: must not be before from\n") {
				t.Errorf("feedback = %q, want the Validate hook's error at /to", fb)
			}
		})
	}
}

// TestWithToolSchemasPrecedence: WithSchema wins over WithToolSchemas, which
// wins over the request's Parameters.
func TestWithToolSchemasPrecedence(t *testing.T) {
	t.Parallel()
	wantString := `{"type":"object","properties":{"city":{"type":"string"}}}`
	wantInt := `{"type":"object","properties":{"city":{"type":"integer"}}}`
	anything := `{"type":"object"}`
	for _, tc := range []struct {
		name    string
		request string
		ctx     map[string]any
		opts    []guard.ValidationOption
		valid   string // the call that passes first
	}{
		{"request only", wantString, nil, nil, `{"city":"Paris"}`},
		{"context over request", anything, map[string]any{"get_weather": wantInt}, nil, `{"city":75001}`},
		{"WithSchema over context", anything, map[string]any{"get_weather": wantInt},
			[]guard.ValidationOption{guard.WithSchema("get_weather", wantString)}, `{"city":"Paris"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			invalid := `{"city":75001}`
			if tc.valid == invalid {
				invalid = `{"city":"Paris"}`
			}
			m := newScript(
				callsStep(call("get_weather", invalid)),
				callsStep(call("get_weather", tc.valid)),
			)
			ctx := context.Background()
			if tc.ctx != nil {
				ctx = guard.WithToolSchemas(ctx, tc.ctx)
			}
			llm := wrap(m, toolArgValidation(tc.opts...))
			resp, err := llm(ctx, question(tool("get_weather", tc.request)))
			if err != nil {
				t.Fatal(err)
			}
			if n := len(m.requests()); n != 2 || args(resp, 0) != tc.valid {
				t.Errorf("%d model calls, final %s; want %s rejected once, then %s", n, args(resp, 0), invalid, tc.valid)
			}
		})
	}
}

func mustCompile(t *testing.T, schema any) *validation.Schema {
	t.Helper()
	s, err := validation.Compile(schema)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestWithSchemaWinsOverRequestTools(t *testing.T) {
	t.Parallel()
	strict := `{"type":"object","properties":{"city":{"type":"string","minLength":3}},"required":["city"]}`
	m := newScript(
		callsStep(call("get_weather", `{"city": "P"}`)),
		callsStep(call("get_weather", `{"city": "Paris"}`)),
	)
	if _, err := run(m, question(weatherTool), toolArgValidation(guard.WithSchema("get_weather", strict))); err != nil {
		t.Fatal(err)
	}
	if n := len(m.requests()); n != 2 {
		t.Errorf("model calls = %d, want 2: WithSchema's minLength must apply", n)
	}
}

func TestUncompilableSchema(t *testing.T) {
	t.Parallel()
	broken := tool("fetch", `{"type": "object", "properties": {"url": {"$ref": "http://127.0.0.1:9/defs.json"}}}`)
	t.Run("fail open passes the call unvalidated", func(t *testing.T) {
		t.Parallel()
		m := newScript(callsStep(call("fetch", `{"url": 1}`), call("get_weather", `{"city": 1}`)),
			callsStep(call("fetch", `{"url": 1}`), call("get_weather", `{"city": "Paris"}`)))
		rec := &recorder{}
		resp, err := run(m, question(broken, weatherTool), toolArgValidation(guard.WithEventHandler(rec.handle)))
		if err != nil {
			t.Fatal(err)
		}
		if n := len(m.requests()); n != 2 {
			t.Errorf("model calls = %d, want 2: the other tool is still validated", n)
		}
		if args(resp, 0) != `{"url": 1}` {
			t.Errorf("fetch arguments = %q, want them passed unvalidated", args(resp, 0))
		}
		e, ok := rec.find(guard.EventSchemaError)
		if !ok || e.Tool != "fetch" || !errors.Is(e.Err, validation.ErrRefused) {
			t.Errorf("schema error event = %+v, want fetch with an error wrapping ErrRefused", e)
		}
	})
	t.Run("fail closed returns a SchemaError", func(t *testing.T) {
		t.Parallel()
		m := newScript(callsStep(call("fetch", `{"url": "x"}`)))
		_, err := run(m, question(broken), toolArgValidation(guard.WithFailClosed()))
		var se *guard.SchemaError
		if !errors.As(err, &se) || se.Tool != "fetch" || !errors.Is(err, validation.ErrRefused) {
			t.Errorf("error = %v, want *SchemaError for fetch wrapping ErrRefused", err)
		}
	})
}

// TestReaskIsNotCumulative: the third call sees the original messages and
// the second attempt only.
func TestReaskIsNotCumulative(t *testing.T) {
	t.Parallel()
	m := newScript(
		callsStep(call("get_weather", `{"city": "first-attempt", "days": 0}`)),
		callsStep(call("get_weather", `{"city": "second-attempt", "days": -1}`)),
		callsStep(call("get_weather", `{"city": "Paris", "days": 1}`)),
	)
	if _, err := run(m, question(weatherTool), toolArgValidation()); err != nil {
		t.Fatal(err)
	}
	third := m.requests()[2].Msgs
	if len(third) != len(question().Msgs)+2 {
		t.Fatalf("third call got %d messages, want %d (original + the model's turn and its tool result)", len(third), len(question().Msgs)+2)
	}
	if got := third[len(question().Msgs)].Calls[0]; got.ID != "call_2" || !strings.Contains(string(got.Args), "second-attempt") {
		t.Errorf("third call replays %+v, want the second attempt (call_2)", got)
	}
	if strings.Contains(dump(third), "first-attempt") {
		t.Errorf("third call still contains the first attempt:\n%s", dump(third))
	}
}

func TestWithDefaultDraft(t *testing.T) {
	t.Parallel()
	// prefixItems means nothing before 2020-12.
	params := `{"type":"object","properties":{"pair":{"type":"array","prefixItems":[{"type":"string"},{"type":"integer"}]}}}`
	const sent = `{"pair": [1, "x"]}`
	for _, tc := range []struct {
		name      string
		params    string
		opts      []guard.ValidationOption
		wantCalls int
	}{
		{"draft7 default ignores prefixItems", params, nil, 1},
		{"Draft2020 applies prefixItems", params, []guard.ValidationOption{guard.WithDefaultDraft(validation.Draft2020)}, 2},
		{"$schema wins over the default", `{"$schema":"http://json-schema.org/draft-07/schema#",` + params[1:],
			[]guard.ValidationOption{guard.WithDefaultDraft(validation.Draft2020)}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := newScript(
				callsStep(call("pairs", sent)),
				callsStep(call("pairs", `{"pair": ["x", 1]}`)),
			)
			if _, err := run(m, question(tool("pairs", tc.params)), toolArgValidation(tc.opts...)); err != nil {
				t.Fatal(err)
			}
			if n := len(m.requests()); n != tc.wantCalls {
				t.Errorf("model calls = %d, want %d", n, tc.wantCalls)
			}
		})
	}
}

func TestCancelledBetweenAttempts(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	m := newScript(
		func(ctx context.Context, s *script, r *tReq) (*tResp, error) {
			cancel()
			return callsStep(call("get_weather", `{}`))(ctx, s, r)
		},
		textStep("never"),
	)
	_, err := wrap(m, toolArgValidation())(ctx, question(weatherTool))
	if !errors.Is(err, context.Canceled) || len(m.requests()) != 1 {
		t.Errorf("cancelled during the first attempt: %v after %d calls, want context.Canceled after 1", err, len(m.requests()))
	}
}

func TestConcurrentCallers(t *testing.T) {
	t.Parallel()
	const callers = 200
	// Each caller's first call is invalid; a re-ask (whose last message is
	// a tool message) gets a valid one.
	answer := func(_ context.Context, _ *script, r *tReq) (*tResp, error) {
		last := r.Msgs[len(r.Msgs)-1]
		city := `null`
		if last.Role == roleTool {
			city = `"` + last.CallID + `"`
		}
		return &tResp{Calls: []guard.Call{{ID: "id", Name: "get_weather", Args: []byte(`{"city": ` + city + `}`)}}}, nil
	}
	steps := make([]step, 2*callers)
	for i := range steps {
		steps[i] = answer
	}
	m := newScript(steps...)
	llm := wrap(m, toolArgValidation())
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := llm(context.Background(), question(weatherTool))
			if err != nil {
				errs <- err
				return
			}
			if got := args(resp, 0); got != `{"city": "id"}` {
				errs <- fmt.Errorf("arguments = %q, want the corrected call", got)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := len(m.requests()); n != 2*callers {
		t.Errorf("model calls = %d, want %d", n, 2*callers)
	}
}

func TestOptionPanics(t *testing.T) {
	t.Parallel()
	for name, f := range map[string]func(){
		"negative retries": func() { toolArgValidation(guard.WithMaxRetries(-1)) },
		"unknown draft":    func() { guard.WithDefaultDraft(validation.Draft(5)) },
		"unknown strip":    func() { guard.WithStripEmpty(strip.Mode(9)) },
		"nil schema":       func() { guard.WithSchema("x", nil) },
		"unknown policy":   func() { guard.WithUnknownTools(guard.UnknownToolPolicy(7)) },
		"nil repairer":     func() { guard.WithRepair(nil) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if r := recover(); r == nil || !strings.HasPrefix(fmt.Sprint(r), "guard: ") {
					t.Errorf("panic = %v, want a clear guard: message", r)
				}
			}()
			f()
		})
	}
}

func TestCustomFeedback(t *testing.T) {
	t.Parallel()
	m := newScript(
		callsStep(call("get_weather", `{"city": 1}`)),
		callsStep(call("get_weather", `{"city": "x"}`)),
	)
	first := func(e *validation.Error) string { return "fix " + e.Violations[0].Path }
	if _, err := run(m, question(weatherTool), toolArgValidation(guard.WithFeedback(first))); err != nil {
		t.Fatal(err)
	}
	if fb := m.requests()[1].Msgs[len(question().Msgs)+1].Text; fb != "fix /city" {
		t.Errorf("feedback = %q, want the custom text", fb)
	}
}
