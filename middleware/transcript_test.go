package middleware_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/middleware"
)

func TestToolCallsAndMessages(t *testing.T) {
	t.Parallel()
	resp := &llms.ContentResponse{Choices: []*llms.ContentChoice{
		{Content: "Let me check."},
		{ToolCalls: []llms.ToolCall{{ID: "toolu_1", Type: "function", FunctionCall: &llms.FunctionCall{Name: "a", Arguments: "{}"}}}},
		nil,
		{ToolCalls: []llms.ToolCall{{FunctionCall: &llms.FunctionCall{Name: "b", Arguments: `{"x":1}`}}, {ID: "no_fn"}}},
		{FuncCall: &llms.FunctionCall{Name: "legacy", Arguments: "{}"}},
	}}
	calls := middleware.ToolCalls(resp, 7)
	if len(calls) != 4 {
		t.Fatalf("ToolCalls found %d calls, want 4", len(calls))
	}
	synth := calls[1].ID
	if !strings.HasPrefix(synth, "call_tg") || resp.Choices[3].ToolCalls[0].ID != synth {
		t.Errorf("synthesized id %q not written back (response has %q)", synth, resp.Choices[3].ToolCalls[0].ID)
	}
	if again := middleware.ToolCalls(&llms.ContentResponse{Choices: []*llms.ContentChoice{{ToolCalls: []llms.ToolCall{{FunctionCall: &llms.FunctionCall{Name: "b", Arguments: `{"x":1}`}}}}}}, 7); again[0].ID == synth {
		t.Errorf("a call at another position got the same id %q", synth)
	}
	for i, c := range calls {
		if c.Type != "function" || c.ID == "" {
			t.Errorf("call %d = %+v, want a function call with an id", i, c)
		}
	}

	msgs := middleware.ToolCallMessages(middleware.ResponseText(resp), calls, []string{"ra", "rb", "ignored", "rl"})
	var got []string
	for _, m := range msgs {
		switch p := m.Parts[0].(type) {
		case llms.ToolCall:
			got = append(got, string(m.Role)+":"+p.ID)
		case llms.ToolCallResponse:
			got = append(got, string(m.Role)+":"+p.ToolCallID+"="+p.Content)
		case llms.TextContent:
			got = append(got, string(m.Role)+":text")
		}
	}
	want := []string{"ai:toolu_1", "tool:toolu_1=ra", "ai:" + synth, "tool:" + synth + "=rb", "ai:" + calls[3].ID, "tool:" + calls[3].ID + "=rl", "human:text"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ToolCallMessages layout = %v, want %v", got, want)
	}
	// The call comes first: langchaingo's Anthropic provider reads only the
	// first part of an AI message.
	if len(msgs[0].Parts) != 2 || msgs[0].Parts[1].(llms.TextContent).Text != "Let me check." {
		t.Errorf("first AI message parts = %v, want the call then the text", msgs[0].Parts)
	}
	msgs[0].Parts[0].(llms.ToolCall).FunctionCall.Arguments = "changed"
	if resp.Choices[1].ToolCalls[0].FunctionCall.Arguments != "{}" {
		t.Errorf("ToolCallMessages shares FunctionCalls with the response")
	}

	// Arguments that are not a JSON object are recorded as {}.
	bad := []llms.ToolCall{
		{ID: "1", FunctionCall: &llms.FunctionCall{Name: "a", Arguments: `{"city": "Par`}},
		{ID: "2", FunctionCall: &llms.FunctionCall{Name: "a", Arguments: `["x"]`}},
		{ID: "3", FunctionCall: &llms.FunctionCall{Name: "a", Arguments: ` {"ok": 1} `}},
		{ID: "4", FunctionCall: &llms.FunctionCall{Name: "a", Arguments: ``}},
	}
	msgs = middleware.ToolCallMessages("", bad, []string{"", "", "", ""})
	for i, want := range []string{"{}", "{}", ` {"ok": 1} `, "{}"} {
		if got := msgs[2*i].Parts[0].(llms.ToolCall).FunctionCall.Arguments; got != want {
			t.Errorf("call %d recorded with arguments %q, want %q", i+1, got, want)
		}
	}
	if bad[0].FunctionCall.Arguments != `{"city": "Par` {
		t.Errorf("ToolCallMessages changed the caller's call")
	}
}
