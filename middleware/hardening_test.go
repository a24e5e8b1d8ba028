package middleware_test

import (
	"testing"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/fakemodel"
)

// ToolArgValidation's hardening against bad arguments, odd tool names, huge
// batches and bad schemas is tested in package guard, over a test codec;
// what remains here is the odd shapes of langchaingo's responses.

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
