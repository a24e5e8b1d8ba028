package middleware_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/fakemodel"
	"github.com/toolguard/toolguard/validation"
)

// TestEmptyArgumentsWrittenBackAsObject: a tool with no parameters called
// with empty arguments comes back with "{}", so a hand-written loop's
// json.Unmarshal works; a tool the request does not offer stays untouched.
func TestEmptyArgumentsWrittenBackAsObject(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		params any
		tool   string
		args   string
		want   string
	}{
		{"no schema", nil, "ping", "", "{}"},
		{"empty object schema", map[string]any{"type": "object", "properties": map[string]any{}}, "ping", "", "{}"},
		{"typed empty struct", validation.Typed[struct{}](), "ping", "  ", "{}"},
		{"object arguments untouched", nil, "ping", `{"a": 1}`, `{"a": 1}`},
		{"unknown tool untouched", nil, "other", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			model := middleware.Wrap(fakemodel.New(fakemodel.ToolCalls(fakemodel.Call(tc.tool, tc.args))), middleware.ToolArgValidation())
			tools := []llms.Tool{{Type: "function", Function: &llms.FunctionDefinition{Name: "ping", Parameters: tc.params}}}
			resp, err := model.GenerateContent(context.Background(),
				[]llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "ping")}, llms.WithTools(tools))
			if err != nil {
				t.Fatal(err)
			}
			got := resp.Choices[0].ToolCalls[0].FunctionCall.Arguments
			if got != tc.want {
				t.Errorf("ToolArgValidation(%s %q) returned arguments %q, want %q", tc.tool, tc.args, got, tc.want)
			}
			var m map[string]any
			if err := json.Unmarshal([]byte(got), &m); tc.want != "" && err != nil {
				t.Errorf("json.Unmarshal(%q) = %v, want nil", got, err)
			}
		})
	}
}
