package middleware_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/fakemodel"
)

// limTools offers two tools without a schema.
var limTools = llms.WithTools([]llms.Tool{
	{Type: "function", Function: &llms.FunctionDefinition{Name: "search"}},
	{Type: "function", Function: &llms.FunctionDefinition{Name: "weather"}},
})

// limCalls is a fakemodel step answering with one call per tool name.
func limCalls(names ...string) fakemodel.Step {
	calls := make([]llms.ToolCall, len(names))
	for i, n := range names {
		calls[i] = fakemodel.Call(n, `{}`)
	}
	return fakemodel.ToolCalls(calls...)
}

// limReplay is what a re-ask appended to the request it repeats: for each
// replayed call, its tool name, id and the tool message it got.
type limReplayed struct{ Tool, ID, Answer string }

// limReask checks that reask is orig followed by the re-ask layout (one AI
// message per call, each followed by its tool message) and returns the
// replayed calls.
func limReask(t *testing.T, orig, reask []llms.MessageContent) []limReplayed {
	t.Helper()
	if len(reask) < len(orig) || !reflect.DeepEqual(reask[:len(orig)], orig) {
		t.Fatalf("re-ask does not start with the original %d messages:\n%v", len(orig), reask)
	}
	tail := reask[len(orig):]
	if len(tail)%2 != 0 {
		t.Fatalf("re-ask appended %d messages, want AI/tool pairs: %v", len(tail), tail)
	}
	var got []limReplayed
	for i := 0; i < len(tail); i += 2 {
		ai, tm := tail[i], tail[i+1]
		if ai.Role != llms.ChatMessageTypeAI || tm.Role != llms.ChatMessageTypeTool || len(tm.Parts) != 1 {
			t.Fatalf("re-ask pair %d = %v, %v; want an AI message and one tool message", i/2, ai, tm)
		}
		tc, ok := ai.Parts[0].(llms.ToolCall) // first: Anthropic reads only the first part
		if !ok {
			t.Fatalf("re-ask AI message %d = %v, want it to hold a tool call", i/2, ai)
		}
		tr := tm.Parts[0].(llms.ToolCallResponse)
		if tc.ID == "" || tr.ToolCallID != tc.ID || tr.Name != tc.FunctionCall.Name {
			t.Fatalf("re-ask pair %d: call %q (%s) answered as %q (%s); want matching ids", i/2, tc.ID, tc.FunctionCall.Name, tr.ToolCallID, tr.Name)
		}
		got = append(got, limReplayed{Tool: tc.FunctionCall.Name, ID: tc.ID, Answer: tr.Content})
	}
	return got
}

// globalEnd is ToolCallLimit's ExitEnd answer for a run limit of 2.
const globalEnd = "Tool call limit reached: run limit exceeded (2/2 calls)."

// The stage's own behaviour is tested in package guard, over a test codec;
// what remains here is langchaingo's shape of it.

// TestToolCallLimitExitEndResponseHasNoToolCalls: ExitEnd's answer is one
// choice holding the text, with no tool call in any choice and no FuncCall
// left, that records the limit it stands for.
func TestToolCallLimitExitEndResponseHasNoToolCalls(t *testing.T) {
	t.Parallel()
	m := fakemodel.New(fakemodel.Response(&llms.ContentResponse{Choices: []*llms.ContentChoice{
		{Content: "searching", ToolCalls: []llms.ToolCall{fakemodel.Call("search", `{}`)}, FuncCall: &llms.FunctionCall{Name: "search"}},
		{ToolCalls: []llms.ToolCall{fakemodel.Call("search", `{}`)}},
	}}))
	llm := middleware.Wrap(m, middleware.ToolCallLimit(guard.WithRunLimit(1), guard.WithExitBehavior(guard.ExitEnd)))
	resp, err := llm.GenerateContent(context.Background(), []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "hi")})
	if err != nil {
		t.Fatal(err)
	}
	// The answer records the limit it stands for (StandInError).
	var le *guard.LimitExceededError
	if !errors.As(middleware.StandInError(resp), &le) || le.Limit != 1 {
		t.Errorf("StandInError = %v, want the *LimitExceededError", middleware.StandInError(resp))
	}
	resp.Choices[0].GenerationInfo = nil
	want := &llms.ContentResponse{Choices: []*llms.ContentChoice{{Content: "Tool call limit reached: run limit exceeded (0/1 calls).", StopReason: "stop"}}}
	if !reflect.DeepEqual(resp, want) {
		t.Errorf("GenerateContent = %+v, want %+v", resp.Choices[0], want.Choices[0])
	}
}

// TestToolCallLimitCallsInEveryChoice: calls spread over several choices
// (as Anthropic returns them), without ids, are all counted, and the re-ask
// answers each under a synthesized id.
func TestToolCallLimitCallsInEveryChoice(t *testing.T) {
	t.Parallel()
	noID := llms.ToolCall{Type: "function", FunctionCall: &llms.FunctionCall{Name: "search", Arguments: `{}`}}
	m := fakemodel.New(fakemodel.Response(&llms.ContentResponse{Choices: []*llms.ContentChoice{
		{Content: "Let me look."}, {ToolCalls: []llms.ToolCall{noID}}, {ToolCalls: []llms.ToolCall{noID}},
	}}), fakemodel.Text("done"))
	llm := middleware.Wrap(m, middleware.ToolCallLimit(guard.WithRunLimit(1)))
	msgs := []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "hi")}
	if _, err := llm.GenerateContent(context.Background(), msgs); err != nil {
		t.Fatal(err)
	}
	reqs := m.Requests()
	if len(reqs) != 2 {
		t.Fatalf("model calls = %d, want 2", len(reqs))
	}
	got := limReask(t, msgs, reqs[1].Messages)
	if len(got) != 2 || got[0].ID == got[1].ID || !strings.HasPrefix(got[1].Answer, "Tool call limit exceeded") {
		t.Errorf("re-ask replayed %+v, want 2 calls with distinct ids, the second blocked", got)
	}
	first := reqs[1].Messages[1].Parts
	if len(first) != 2 || first[1] != (llms.TextContent{Text: "Let me look."}) {
		t.Errorf("first replayed AI message = %v, want the call, then the response's text", first)
	}
}
