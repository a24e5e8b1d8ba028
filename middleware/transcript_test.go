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
		switch p := m.Parts[len(m.Parts)-1].(type) {
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
	if first := msgs[0].Parts[0].(llms.TextContent).Text; first != "Let me check." {
		t.Errorf("first AI message text = %q", first)
	}
	msgs[0].Parts[1].(llms.ToolCall).FunctionCall.Arguments = "changed"
	if resp.Choices[1].ToolCalls[0].FunctionCall.Arguments != "{}" {
		t.Errorf("ToolCallMessages shares FunctionCalls with the response")
	}
}
