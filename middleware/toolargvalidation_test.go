package middleware_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tmc/langchaingo/jsonschema"
	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/fakemodel"
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

// ToolArgValidation's own behaviour is tested in package guard, over a test
// codec; what remains here is langchaingo's shape of it: the re-ask layout,
// calls spread over choices, ids synthesized and written back, calls
// without a function, the legacy FuncCall and langchaingo's schema type.

func dump(msgs []llms.MessageContent) string {
	var b strings.Builder
	llms.ShowMessageContents(&b, msgs)
	return b.String()
}

// TestSchemaFormJSONSchemaDefinition: a tool's Parameters may be
// langchaingo's jsonschema.Definition, as its examples write them. (The
// other forms a schema takes are tested in package guard.)
func TestSchemaFormJSONSchemaDefinition(t *testing.T) {
	t.Parallel()
	params := jsonschema.Definition{
		Type:       jsonschema.Object,
		Properties: map[string]jsonschema.Definition{"city": {Type: jsonschema.String}},
		Required:   []string{"city"},
	}
	m := fakemodel.New(
		fakemodel.ToolCalls(fakemodel.Call("forecast", `{"city": ["Paris"]}`)),
		fakemodel.ToolCalls(fakemodel.Call("forecast", `{"city": "Paris"}`)),
	)
	if _, err := run(t, m, []llms.Tool{tool("forecast", params)}, middleware.ToolArgValidation()); err != nil {
		t.Fatal(err)
	}
	if n := len(m.Requests()); n != 2 {
		t.Fatalf("model calls = %d, want 2 (the wrong type rejected once)", n)
	}
	fb := m.Requests()[1].Messages[len(question)+1].Parts[0].(llms.ToolCallResponse).Content
	if !strings.Contains(fb, `/city: expected string, got ["Paris"]`) {
		t.Errorf("feedback = %q, want the /city type violation", fb)
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
