package middleware_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tmc/langchaingo/jsonschema"
	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/fakemodel"
	"github.com/toolguard/toolguard/strip"
	"github.com/toolguard/toolguard/validation"
)

const weatherSchema = `{
	"type": "object",
	"properties": {
		"city":  {"type": "string"},
		"units": {"type": "string", "enum": ["celsius", "fahrenheit"]},
		"days":  {"type": "integer", "minimum": 1},
		"note":  {"type": ["string", "null"]},
		"tags":  {"type": "array", "items": {"type": "string"}}
	},
	"required": ["city"],
	"additionalProperties": false
}`

func tool(name string, params any) llms.Tool {
	return llms.Tool{Type: "function", Function: &llms.FunctionDefinition{Name: name, Parameters: params}}
}

var (
	weatherParams = json.RawMessage(weatherSchema)
	weatherTool   = tool("get_weather", weatherParams)
	searchTool    = tool("search", map[string]any{
		"type":       "object",
		"properties": map[string]any{"query": map[string]any{"type": "string"}},
		"required":   []any{"query"},
	})
	question = []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeSystem, "You are helpful."),
		llms.TextParts(llms.ChatMessageTypeHuman, "Weather in Paris?"),
	}
)

// run wraps model with mws and makes one call offering tools.
func run(t *testing.T, model llms.Model, tools []llms.Tool, mws ...middleware.Middleware) (*llms.ContentResponse, error) {
	t.Helper()
	return middleware.Wrap(model, mws...).GenerateContent(context.Background(), question, llms.WithTools(tools))
}

func args(resp *llms.ContentResponse, i int) string {
	return resp.Choices[0].ToolCalls[i].FunctionCall.Arguments
}

// recorder collects events.
type recorder struct {
	mu     sync.Mutex
	events []guard.Event
}

func (r *recorder) handle(_ context.Context, e guard.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

func (r *recorder) all() []guard.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

// trace renders the events as "Middleware:kind#attempt".
func (r *recorder) trace() []string {
	var ts []string
	for _, e := range r.all() {
		ts = append(ts, fmt.Sprintf("%s:%s#%d", e.Middleware, e.Kind, e.Attempt))
	}
	return ts
}

func (r *recorder) kinds() []guard.EventKind {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ks []guard.EventKind
	for _, e := range r.events {
		ks = append(ks, e.Kind)
	}
	return ks
}

func (r *recorder) find(k guard.EventKind) (guard.Event, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.events {
		if e.Kind == k {
			return e, true
		}
	}
	return guard.Event{}, false
}

func TestValidCallPassesInOneModelCall(t *testing.T) {
	t.Parallel()
	const sent = `{"city": "Paris", "units": "celsius"}`
	m := fakemodel.New(fakemodel.ToolCalls(fakemodel.Call("get_weather", sent)))
	resp, err := run(t, m, []llms.Tool{weatherTool}, middleware.ToolArgValidation())
	if err != nil {
		t.Fatal(err)
	}
	if n := len(m.Requests()); n != 1 {
		t.Errorf("model calls = %d, want 1", n)
	}
	if got := args(resp, 0); got != sent {
		t.Errorf("arguments = %q, want them untouched: %q", got, sent)
	}
}

func TestTextResponsePassesUntouched(t *testing.T) {
	t.Parallel()
	m := fakemodel.New(fakemodel.Text("It is sunny."))
	resp, err := run(t, m, []llms.Tool{weatherTool}, middleware.ToolArgValidation())
	if err != nil || resp.Choices[0].Content != "It is sunny." || len(m.Requests()) != 1 {
		t.Errorf("text response: %v, %v after %d calls; want it returned after 1 call", resp, err, len(m.Requests()))
	}
}

func TestInvalidCallIsReaskedWithFeedback(t *testing.T) {
	t.Parallel()
	const bad = `{"city": 42, "units": "kelvin", "days": 0, "extra": true}`
	const good = `{"city": "Paris"}`
	m := fakemodel.New(
		fakemodel.ToolCalls(fakemodel.Call("get_weather", bad)),
		fakemodel.ToolCalls(fakemodel.Call("get_weather", good)),
	)
	var rec recorder
	resp, err := run(t, m, []llms.Tool{weatherTool}, middleware.ToolArgValidation(guard.WithEventHandler(rec.handle)))
	if err != nil {
		t.Fatal(err)
	}
	reqs := m.Requests()
	if len(reqs) != 2 {
		t.Fatalf("model calls = %d, want 2", len(reqs))
	}
	if got := args(resp, 0); got != good {
		t.Errorf("returned arguments = %q, want the corrected %q", got, good)
	}
	if id := resp.Choices[0].ToolCalls[0].ID; id != "call_2" {
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
	want := append(append([]llms.MessageContent(nil), question...),
		llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{
			llms.ToolCall{ID: "call_1", Type: "function", FunctionCall: &llms.FunctionCall{Name: "get_weather", Arguments: bad}},
		}},
		llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{
			llms.ToolCallResponse{ToolCallID: "call_1", Name: "get_weather", Content: wantFeedback},
		}},
	)
	if !reflect.DeepEqual(reqs[1].Messages, want) {
		t.Errorf("re-ask messages:\n%s\nwant:\n%s", dump(reqs[1].Messages), dump(want))
	}
	if e, ok := rec.find(guard.EventInvalid); !ok || e.Feedback != wantFeedback || e.CallID != "call_1" {
		t.Errorf("invalid event = %+v, want call_1 with the feedback the model was sent", e)
	}
	if len(reqs[1].Options.Tools) != 1 {
		t.Errorf("re-ask offered %d tools, want the original options (1 tool)", len(reqs[1].Options.Tools))
	}
}

func dump(msgs []llms.MessageContent) string {
	var b strings.Builder
	llms.ShowMessageContents(&b, msgs)
	return b.String()
}

func TestRetriesExhausted(t *testing.T) {
	t.Parallel()
	for _, maxRetries := range []int{0, 1, 2, 4} {
		t.Run(fmt.Sprint("max", maxRetries), func(t *testing.T) {
			t.Parallel()
			var steps []fakemodel.Step
			for i := 0; i <= maxRetries+1; i++ {
				steps = append(steps, fakemodel.ToolCalls(fakemodel.Call("get_weather", fmt.Sprintf(`{"city": %d}`, i))))
			}
			m := fakemodel.New(steps...)
			var opts []guard.ValidationOption
			if maxRetries != 2 { // 2 is the default
				opts = append(opts, guard.WithMaxRetries(maxRetries))
			}
			rec := &recorder{}
			opts = append(opts, guard.WithEventHandler(rec.handle))
			resp, err := run(t, m, []llms.Tool{weatherTool}, middleware.ToolArgValidation(opts...))
			if err != nil {
				t.Fatalf("fail-open returned error %v", err)
			}
			if n := len(m.Requests()); n != maxRetries+1 {
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
	m := fakemodel.New(
		fakemodel.ToolCalls(fakemodel.Call("get_weather", `{"city": 1}`)),
		fakemodel.ToolCalls(fakemodel.Call("get_weather", `{"city": 2}`)),
		fakemodel.ToolCalls(fakemodel.Call("get_weather", `{"city": 3}`)),
	)
	resp, err := run(t, m, []llms.Tool{weatherTool}, middleware.ToolArgValidation(guard.WithFailClosed()))
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

func TestMixedBatchSiblingsAreNotExecuted(t *testing.T) {
	t.Parallel()
	m := fakemodel.New(
		fakemodel.Response(&llms.ContentResponse{Choices: []*llms.ContentChoice{{
			Content: "Checking both.",
			ToolCalls: []llms.ToolCall{
				{ID: "a", Type: "function", FunctionCall: &llms.FunctionCall{Name: "search", Arguments: `{"query": "paris"}`}},
				{ID: "b", Type: "function", FunctionCall: &llms.FunctionCall{Name: "get_weather", Arguments: `{"city": null}`}},
				{ID: "c", Type: "function", FunctionCall: &llms.FunctionCall{Name: "unlisted", Arguments: `not json`}},
			},
		}}}),
		fakemodel.ToolCalls(
			fakemodel.Call("search", `{"query": "paris"}`),
			fakemodel.Call("get_weather", `{"city": "Paris"}`),
		),
	)
	_, err := run(t, m, []llms.Tool{weatherTool, searchTool}, middleware.ToolArgValidation())
	if err != nil {
		t.Fatal(err)
	}
	reask := m.Requests()[1].Messages[len(question):]
	if len(reask) != 6 {
		t.Fatalf("re-ask added %d messages, want 6 (AI+tool per call):\n%s", len(reask), dump(reask))
	}
	for i, id := range []string{"a", "b", "c"} {
		ai, res := reask[2*i], reask[2*i+1]
		if ai.Role != llms.ChatMessageTypeAI || res.Role != llms.ChatMessageTypeTool {
			t.Fatalf("message pair %d roles = %s, %s; want ai, tool", i, ai.Role, res.Role)
		}
		call := ai.Parts[0].(llms.ToolCall)
		answer := res.Parts[0].(llms.ToolCallResponse)
		if call.ID != id || answer.ToolCallID != id || answer.Name != call.FunctionCall.Name {
			t.Errorf("pair %d: call %q answered as %q/%q, want matching ids and names", i, call.ID, answer.ToolCallID, answer.Name)
		}
		wantNotExecuted := id != "b"
		if got := answer.Content == notExecuted; got != wantNotExecuted {
			t.Errorf("call %s answer = %q; not-executed = %v, want %v", id, answer.Content, got, wantNotExecuted)
		}
	}
	// The call comes first: langchaingo's Anthropic provider reads only the
	// first part of an AI message.
	if text, ok := reask[0].Parts[1].(llms.TextContent); !ok || text.Text != "Checking both." || len(reask[0].Parts) != 2 {
		t.Errorf("first AI message parts = %v, want the call then the response text", reask[0].Parts)
	}
	for _, msg := range reask[2:] {
		if len(msg.Parts) != 1 {
			t.Errorf("text repeated in a later message: %v", msg.Parts)
		}
	}
	if fb := reask[3].Parts[0].(llms.ToolCallResponse).Content; !strings.Contains(fb, "/city: expected string, got null") {
		t.Errorf("feedback for the invalid call = %q, want the /city violation", fb)
	}
}

func TestUnknownTools(t *testing.T) {
	t.Parallel()
	t.Run("pass", func(t *testing.T) {
		t.Parallel()
		const raw = `{broken json`
		m := fakemodel.New(fakemodel.ToolCalls(fakemodel.Call("get_wether", raw)))
		rec := &recorder{}
		resp, err := run(t, m, []llms.Tool{weatherTool}, middleware.ToolArgValidation(guard.WithEventHandler(rec.handle)))
		if err != nil || len(m.Requests()) != 1 || args(resp, 0) != raw {
			t.Errorf("unknown tool with UnknownPass: %v after %d calls, args %q; want untouched after 1 call", err, len(m.Requests()), args(resp, 0))
		}
		if e, ok := rec.find(guard.EventUnknownTool); !ok || e.Tool != "get_wether" {
			t.Errorf("no unknown-tool event for get_wether: %v", rec.kinds())
		}
	})
	t.Run("reject", func(t *testing.T) {
		t.Parallel()
		m := fakemodel.New(
			fakemodel.ToolCalls(fakemodel.Call("get_wether", `{"city": "Paris"}`)),
			fakemodel.ToolCalls(fakemodel.Call("get_weather", `{"city": "Paris"}`)),
		)
		resp, err := run(t, m, []llms.Tool{weatherTool, searchTool}, middleware.ToolArgValidation(guard.WithUnknownTools(guard.UnknownReject)))
		if err != nil || resp.Choices[0].ToolCalls[0].FunctionCall.Name != "get_weather" {
			t.Fatalf("UnknownReject: %v, %v; want the corrected call", resp, err)
		}
		fb := m.Requests()[1].Messages[len(question)+1].Parts[0].(llms.ToolCallResponse).Content
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
			m := fakemodel.New(
				fakemodel.ToolCalls(fakemodel.Call("get_weather", tc.args)),
				fakemodel.ToolCalls(fakemodel.Call("get_weather", `{"city": "Paris"}`)),
			)
			if _, err := run(t, m, []llms.Tool{weatherTool}, middleware.ToolArgValidation()); err != nil {
				t.Fatal(err)
			}
			reqs := m.Requests()
			if len(reqs) != 2 {
				t.Fatalf("model calls = %d, want 2", len(reqs))
			}
			fb := reqs[1].Messages[len(question)+1].Parts[0].(llms.ToolCallResponse).Content
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
			m := fakemodel.New(
				fakemodel.ToolCalls(fakemodel.Call("get_weather", tc.sent)),
				fakemodel.ToolCalls(fakemodel.Call("get_weather", tc.wantArgs)),
			)
			rec := &recorder{}
			resp, err := run(t, m, []llms.Tool{strictTags},
				middleware.ToolArgValidation(guard.WithStripEmpty(tc.mode), guard.WithEventHandler(rec.handle)))
			if err != nil {
				t.Fatal(err)
			}
			if n := len(m.Requests()); n != tc.wantCalls {
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
		{"jsonschema.Definition", jsonschema.Definition{
			Type:       jsonschema.Object,
			Properties: map[string]jsonschema.Definition{"city": {Type: jsonschema.String}},
			Required:   []string{"city"},
		}},
		{"Typed", validation.Typed[forecastArgs]()},
		{"Typed as Map", validation.Typed[forecastArgs]().Map()},
	}
	for _, f := range forms {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			m := fakemodel.New(
				fakemodel.ToolCalls(fakemodel.Call("forecast", `{"city": ["Paris"]}`)),
				fakemodel.ToolCalls(fakemodel.Call("forecast", `{"city": "Paris"}`)),
			)
			if _, err := run(t, m, []llms.Tool{tool("forecast", f.params)}, middleware.ToolArgValidation()); err != nil {
				t.Fatal(err)
			}
			if n := len(m.Requests()); n != 2 {
				t.Fatalf("model calls = %d, want 2 (the wrong type rejected once)", n)
			}
			fb := m.Requests()[1].Messages[len(question)+1].Parts[0].(llms.ToolCallResponse).Content
			if !strings.Contains(fb, `/city: expected string, got ["Paris"]`) {
				t.Errorf("feedback = %q, want the /city type violation", fb)
			}
		})
	}
	t.Run("nil parameters accept any object but not broken JSON", func(t *testing.T) {
		t.Parallel()
		m := fakemodel.New(
			fakemodel.ToolCalls(fakemodel.Call("anything", `{"x": [1, {"y": null}]`)),
			fakemodel.ToolCalls(fakemodel.Call("anything", `{"x": [1, {"y": null}]}`)),
		)
		resp, err := run(t, m, []llms.Tool{tool("anything", nil)}, middleware.ToolArgValidation())
		if err != nil || len(m.Requests()) != 2 || args(resp, 0) != `{"x": [1, {"y": null}]}` {
			t.Errorf("nil schema: %v after %d calls; want broken JSON re-asked, then any object accepted untouched", err, len(m.Requests()))
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
			m := fakemodel.New(
				fakemodel.ToolCalls(fakemodel.Call("forecast", `{"city": "Paris", "from": "2025-02-01", "to": "2025-01-01"}`)),
				fakemodel.ToolCalls(fakemodel.Call("forecast", `{"city": "Paris", "from": "2025-01-01", "to": "2025-02-01"}`)),
			)
			llm := middleware.Wrap(m, middleware.ToolArgValidation())
			if _, err := llm.GenerateContent(tc.ctx, question, llms.WithTools([]llms.Tool{tool("forecast", tc.params)})); err != nil {
				t.Fatal(err)
			}
			if n := len(m.Requests()); n != tc.wantCalls {
				t.Fatalf("model calls = %d, want %d", n, tc.wantCalls)
			}
			if tc.wantCalls == 1 {
				return
			}
			fb := m.Requests()[1].Messages[len(question)+1].Parts[0].(llms.ToolCallResponse).Content
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
			m := fakemodel.New(
				fakemodel.ToolCalls(fakemodel.Call("get_weather", invalid)),
				fakemodel.ToolCalls(fakemodel.Call("get_weather", tc.valid)),
			)
			ctx := context.Background()
			if tc.ctx != nil {
				ctx = guard.WithToolSchemas(ctx, tc.ctx)
			}
			llm := middleware.Wrap(m, middleware.ToolArgValidation(tc.opts...))
			resp, err := llm.GenerateContent(ctx, question, llms.WithTools([]llms.Tool{tool("get_weather", tc.request)}))
			if err != nil {
				t.Fatal(err)
			}
			if n := len(m.Requests()); n != 2 || args(resp, 0) != tc.valid {
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
	m := fakemodel.New(
		fakemodel.ToolCalls(fakemodel.Call("get_weather", `{"city": "P"}`)),
		fakemodel.ToolCalls(fakemodel.Call("get_weather", `{"city": "Paris"}`)),
	)
	if _, err := run(t, m, []llms.Tool{weatherTool}, middleware.ToolArgValidation(guard.WithSchema("get_weather", strict))); err != nil {
		t.Fatal(err)
	}
	if n := len(m.Requests()); n != 2 {
		t.Errorf("model calls = %d, want 2: WithSchema's minLength must apply", n)
	}
}

func TestUncompilableSchema(t *testing.T) {
	t.Parallel()
	broken := tool("fetch", `{"type": "object", "properties": {"url": {"$ref": "http://127.0.0.1:9/defs.json"}}}`)
	t.Run("fail open passes the call unvalidated", func(t *testing.T) {
		t.Parallel()
		m := fakemodel.New(fakemodel.ToolCalls(fakemodel.Call("fetch", `{"url": 1}`), fakemodel.Call("get_weather", `{"city": 1}`)),
			fakemodel.ToolCalls(fakemodel.Call("fetch", `{"url": 1}`), fakemodel.Call("get_weather", `{"city": "Paris"}`)))
		rec := &recorder{}
		resp, err := run(t, m, []llms.Tool{broken, weatherTool}, middleware.ToolArgValidation(guard.WithEventHandler(rec.handle)))
		if err != nil {
			t.Fatal(err)
		}
		if n := len(m.Requests()); n != 2 {
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
		m := fakemodel.New(fakemodel.ToolCalls(fakemodel.Call("fetch", `{"url": "x"}`)))
		_, err := run(t, m, []llms.Tool{broken}, middleware.ToolArgValidation(guard.WithFailClosed()))
		var se *guard.SchemaError
		if !errors.As(err, &se) || se.Tool != "fetch" || !errors.Is(err, validation.ErrRefused) {
			t.Errorf("error = %v, want *SchemaError for fetch wrapping ErrRefused", err)
		}
	})
}

// TestToolCallsInAnyChoice: Anthropic returns one choice per content block.
func TestToolCallsInAnyChoice(t *testing.T) {
	t.Parallel()
	m := fakemodel.New(
		fakemodel.Response(&llms.ContentResponse{Choices: []*llms.ContentChoice{
			{Content: "Let me look that up."},
			{ToolCalls: []llms.ToolCall{{ID: "toolu_1", Type: "function", FunctionCall: &llms.FunctionCall{Name: "search", Arguments: `{"query": "paris"}`}}}},
			{ToolCalls: []llms.ToolCall{{ID: "toolu_2", Type: "function", FunctionCall: &llms.FunctionCall{Name: "get_weather", Arguments: `{"city": 7}`}}}},
			{Content: "One moment."},
		}}),
		fakemodel.Text("done"),
	)
	if _, err := run(t, m, []llms.Tool{weatherTool, searchTool}, middleware.ToolArgValidation()); err != nil {
		t.Fatal(err)
	}
	reqs := m.Requests()
	if len(reqs) != 2 {
		t.Fatalf("model calls = %d, want 2: the invalid call in the third choice is found", len(reqs))
	}
	reask := reqs[1].Messages[len(question):]
	first := reask[0].Parts
	if text, ok := first[len(first)-1].(llms.TextContent); !ok || text.Text != "Let me look that up.\nOne moment." {
		t.Errorf("first AI message parts = %v, want the text of all choices joined after the call", first)
	}
	if id := reask[2].Parts[0].(llms.ToolCall).ID; id != "toolu_2" {
		t.Errorf("second replayed call id = %q, want toolu_2", id)
	}
}

// TestReaskIsNotCumulative: the third call sees the original messages and
// the second attempt only.
func TestReaskIsNotCumulative(t *testing.T) {
	t.Parallel()
	m := fakemodel.New(
		fakemodel.ToolCalls(fakemodel.Call("get_weather", `{"city": "first-attempt", "days": 0}`)),
		fakemodel.ToolCalls(fakemodel.Call("get_weather", `{"city": "second-attempt", "days": -1}`)),
		fakemodel.ToolCalls(fakemodel.Call("get_weather", `{"city": "Paris", "days": 1}`)),
	)
	if _, err := run(t, m, []llms.Tool{weatherTool}, middleware.ToolArgValidation()); err != nil {
		t.Fatal(err)
	}
	third := m.Requests()[2].Messages
	if len(third) != len(question)+2 {
		t.Fatalf("third call got %d messages, want %d (original + one AI/tool pair)", len(third), len(question)+2)
	}
	if got := third[len(question)].Parts[0].(llms.ToolCall); got.ID != "call_2" || !strings.Contains(got.FunctionCall.Arguments, "second-attempt") {
		t.Errorf("third call replays %+v, want the second attempt (call_2)", got)
	}
	if strings.Contains(dump(third), "first-attempt") {
		t.Errorf("third call still contains the first attempt:\n%s", dump(third))
	}
}

func TestMissingIDsAreSynthesizedAndWrittenBack(t *testing.T) {
	t.Parallel()
	noIDs := func() fakemodel.Step {
		return fakemodel.Response(&llms.ContentResponse{Choices: []*llms.ContentChoice{{ToolCalls: []llms.ToolCall{
			{Type: "function", FunctionCall: &llms.FunctionCall{Name: "get_weather", Arguments: `{"city": 1}`}},
			{Type: "function", FunctionCall: &llms.FunctionCall{Name: "search", Arguments: `{"query": "x"}`}},
		}}}})
	}
	ids := func() (reask [2]string, final [2]string) {
		m := fakemodel.New(noIDs(), noIDs(), noIDs())
		resp, err := run(t, m, []llms.Tool{weatherTool, searchTool}, middleware.ToolArgValidation())
		if err != nil {
			t.Fatal(err)
		}
		msgs := m.Requests()[1].Messages[len(question):]
		for i := range 2 {
			call := msgs[2*i].Parts[0].(llms.ToolCall)
			answer := msgs[2*i+1].Parts[0].(llms.ToolCallResponse)
			if call.ID == "" || call.ID != answer.ToolCallID {
				t.Errorf("replayed call %d id %q answered as %q, want a matching synthesized id", i, call.ID, answer.ToolCallID)
			}
			reask[i] = call.ID
			final[i] = resp.Choices[0].ToolCalls[i].ID
		}
		return reask, final
	}
	r1, f1 := ids()
	r2, f2 := ids()
	if r1 != r2 || f1 != f2 {
		t.Errorf("synthesized ids differ between identical runs: %v/%v vs %v/%v", r1, f1, r2, f2)
	}
	if f1[0] == "" || f1[0] == f1[1] {
		t.Errorf("returned ids %v, want distinct synthesized ids written back", f1)
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
			m := fakemodel.New(
				fakemodel.ToolCalls(fakemodel.Call("pairs", sent)),
				fakemodel.ToolCalls(fakemodel.Call("pairs", `{"pair": ["x", 1]}`)),
			)
			if _, err := run(t, m, []llms.Tool{tool("pairs", tc.params)}, middleware.ToolArgValidation(tc.opts...)); err != nil {
				t.Fatal(err)
			}
			if n := len(m.Requests()); n != tc.wantCalls {
				t.Errorf("model calls = %d, want %d", n, tc.wantCalls)
			}
		})
	}
}

func TestNilFunctionCallIsReasked(t *testing.T) {
	t.Parallel()
	m := fakemodel.New(
		fakemodel.Response(&llms.ContentResponse{Choices: []*llms.ContentChoice{nil, {ToolCalls: []llms.ToolCall{{ID: "x"}}}}}),
		fakemodel.ToolCalls(fakemodel.Call("get_weather", `{"city": "Paris"}`)),
	)
	resp, err := run(t, m, []llms.Tool{weatherTool}, middleware.ToolArgValidation())
	if err != nil || args(resp, 0) != `{"city": "Paris"}` {
		t.Fatalf("nil FunctionCall: %v, %v; want a re-ask and the corrected call", resp, err)
	}
	reask := m.Requests()[1].Messages[len(question):]
	if len(reask) != 1 || reask[0].Role != llms.ChatMessageTypeHuman || !strings.Contains(dump(reask), "without a function name") {
		t.Errorf("re-ask for a call without a function:\n%s\nwant one human note", dump(reask))
	}
}

func TestLegacyFuncCall(t *testing.T) {
	t.Parallel()
	t.Run("FuncCall-only choice is validated", func(t *testing.T) {
		t.Parallel()
		m := fakemodel.New(
			fakemodel.Response(&llms.ContentResponse{Choices: []*llms.ContentChoice{{FuncCall: &llms.FunctionCall{Name: "get_weather", Arguments: `{"city": true}`}}}}),
			fakemodel.Response(&llms.ContentResponse{Choices: []*llms.ContentChoice{{FuncCall: &llms.FunctionCall{Name: "get_weather", Arguments: `{"city": "Paris", "units": null}`}}}}),
		)
		resp, err := run(t, m, []llms.Tool{weatherTool}, middleware.ToolArgValidation())
		if err != nil || len(m.Requests()) != 2 {
			t.Fatalf("legacy call: %v after %d calls, want a re-ask", err, len(m.Requests()))
		}
		if got := resp.Choices[0].FuncCall.Arguments; got != `{"city":"Paris"}` {
			t.Errorf("FuncCall arguments = %q, want the stripped ones written back", got)
		}
	})
	t.Run("a separate FuncCall mirror is rewritten too", func(t *testing.T) {
		t.Parallel()
		const sent = `{"city": "Paris", "units": null}`
		m := fakemodel.New(fakemodel.Response(&llms.ContentResponse{Choices: []*llms.ContentChoice{{
			ToolCalls: []llms.ToolCall{{ID: "1", FunctionCall: &llms.FunctionCall{Name: "get_weather", Arguments: sent}}},
			FuncCall:  &llms.FunctionCall{Name: "get_weather", Arguments: sent},
		}}}))
		resp, err := run(t, m, []llms.Tool{weatherTool}, middleware.ToolArgValidation())
		if err != nil {
			t.Fatal(err)
		}
		if a, b := args(resp, 0), resp.Choices[0].FuncCall.Arguments; a != `{"city":"Paris"}` || b != a {
			t.Errorf("ToolCalls args %q, FuncCall args %q; want both stripped", a, b)
		}
	})
}

func TestCancelledBetweenAttempts(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	m := fakemodel.New(
		fakemodel.Func(func(context.Context, []llms.MessageContent, llms.CallOptions) (*llms.ContentResponse, error) {
			cancel()
			return &llms.ContentResponse{Choices: []*llms.ContentChoice{{ToolCalls: []llms.ToolCall{fakemodel.Call("get_weather", `{}`)}}}}, nil
		}),
		fakemodel.Text("never"),
	)
	_, err := middleware.Wrap(m, middleware.ToolArgValidation()).GenerateContent(ctx, question, llms.WithTools([]llms.Tool{weatherTool}))
	if !errors.Is(err, context.Canceled) || len(m.Requests()) != 1 {
		t.Errorf("cancelled during the first attempt: %v after %d calls, want context.Canceled after 1", err, len(m.Requests()))
	}
}

func TestConcurrentCallers(t *testing.T) {
	t.Parallel()
	const callers = 200
	// Each caller's first call is invalid; a re-ask (whose last message is
	// a tool message) gets a valid one.
	answer := fakemodel.Func(func(_ context.Context, msgs []llms.MessageContent, _ llms.CallOptions) (*llms.ContentResponse, error) {
		last := msgs[len(msgs)-1]
		city := `null`
		if last.Role == llms.ChatMessageTypeTool {
			city = `"` + last.Parts[0].(llms.ToolCallResponse).ToolCallID + `"`
		}
		return &llms.ContentResponse{Choices: []*llms.ContentChoice{{ToolCalls: []llms.ToolCall{
			{ID: "id", FunctionCall: &llms.FunctionCall{Name: "get_weather", Arguments: `{"city": ` + city + `}`}},
		}}}}, nil
	})
	steps := make([]fakemodel.Step, 2*callers)
	for i := range steps {
		steps[i] = answer
	}
	m := fakemodel.New(steps...)
	llm := middleware.Wrap(m, middleware.ToolArgValidation())
	tools := llms.WithTools([]llms.Tool{weatherTool})
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := llm.GenerateContent(context.Background(), question, tools)
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
	if n := len(m.Requests()); n != 2*callers {
		t.Errorf("model calls = %d, want %d", n, 2*callers)
	}
}

func TestOptionPanics(t *testing.T) {
	t.Parallel()
	for name, f := range map[string]func(){
		"negative retries": func() { middleware.ToolArgValidation(guard.WithMaxRetries(-1)) },
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
	m := fakemodel.New(
		fakemodel.ToolCalls(fakemodel.Call("get_weather", `{"city": 1}`)),
		fakemodel.ToolCalls(fakemodel.Call("get_weather", `{"city": "x"}`)),
	)
	first := func(e *validation.Error) string { return "fix " + e.Violations[0].Path }
	if _, err := run(t, m, []llms.Tool{weatherTool}, middleware.ToolArgValidation(guard.WithFeedback(first))); err != nil {
		t.Fatal(err)
	}
	if fb := m.Requests()[1].Messages[len(question)+1].Parts[0].(llms.ToolCallResponse).Content; fb != "fix /city" {
		t.Errorf("feedback = %q, want the custom text", fb)
	}
}
