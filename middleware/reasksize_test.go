package middleware_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/errfmt"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/fakemodel"
)

// reaskBytes is the size of what a request's messages carry: texts, tool
// calls' arguments and tool messages.
func reaskBytes(msgs []llms.MessageContent) int {
	n := 0
	for _, m := range msgs {
		for _, p := range m.Parts {
			switch p := p.(type) {
			case llms.TextContent:
				n += len(p.Text)
			case llms.ToolCall:
				n += len(p.FunctionCall.Arguments)
			case llms.ToolCallResponse:
				n += len(p.Content)
			}
		}
	}
	return n
}

// TestOversizedArgumentsAreNotReplayed: a re-ask shows arguments larger
// than maxReplayedArguments as {}, as it shows broken JSON, and the
// tool messages say how large they were and the limit, so the re-ask's size
// does not grow with what the model sent. Both the rejected call and its
// valid sibling are shown as {}.
func TestOversizedArgumentsAreNotReplayed(t *testing.T) {
	t.Parallel()
	const size = 4 << 20
	note := strings.Repeat("a", size)
	invalid := `{"city": 1, "note": "` + note + `"}`
	valid := `{"query": "` + note + `"}`
	m := fakemodel.New(
		fakemodel.ToolCalls(fakemodel.Call("get_weather", invalid), fakemodel.Call("search", valid)),
		fakemodel.ToolCalls(fakemodel.Call("get_weather", `{"city": "Paris"}`), fakemodel.Call("search", `{"query": "x"}`)),
	)
	if _, err := run(t, m, []llms.Tool{weatherTool, searchTool}, middleware.ToolArgValidation()); err != nil {
		t.Fatal(err)
	}
	reask := m.Requests()[1].Messages
	if n, limit := reaskBytes(reask), 2*errfmt.DefaultMaxBytes+reaskBytes(question); n > limit {
		t.Errorf("re-ask carries %d bytes for %d bytes of arguments, want at most %d", n, len(invalid)+len(valid), limit)
	}
	extra := reask[len(question):]
	for i, want := range []struct{ args, answer string }{
		{"{}", "- (root): " + oversized(len(invalid)) + "\n"},
		{"{}", notExecuted + " Note: " + oversized(len(valid)) + "."},
	} {
		call := extra[2*i].Parts[0].(llms.ToolCall)
		answer := extra[2*i+1].Parts[0].(llms.ToolCallResponse).Content
		if call.FunctionCall.Arguments != want.args || !strings.Contains(answer, want.answer) {
			t.Errorf("call %d replayed as %s answered %q; want %s answered with %q", i, call.FunctionCall.Arguments, answer, want.args, want.answer)
		}
	}
	if !strings.Contains(oversized(len(invalid)), strconv.Itoa(len(invalid))+" bytes, more than the "+strconv.Itoa(maxReplayedArguments)) {
		t.Errorf("Oversized(%d) = %q, want the size and the limit", len(invalid), oversized(len(invalid)))
	}
}

// TestOversizedArgumentsInLimitReask: ToolCallLimit's ExitContinue re-ask
// bounds oversized arguments the same way.
func TestOversizedArgumentsInLimitReask(t *testing.T) {
	t.Parallel()
	big := `{"query": "` + strings.Repeat("a", 1<<20) + `"}`
	m := fakemodel.New(
		fakemodel.ToolCalls(fakemodel.Call("search", big), fakemodel.Call("search", big)),
		fakemodel.ToolCalls(fakemodel.Call("search", `{"query": "x"}`)),
	)
	if _, err := run(t, m, []llms.Tool{searchTool}, middleware.ToolCallLimit(guard.WithRunLimit(1))); err != nil {
		t.Fatal(err)
	}
	reask := m.Requests()[1].Messages
	if n := reaskBytes(reask); n > 4*errfmt.DefaultMaxBytes {
		t.Errorf("limit re-ask carries %d bytes, want it bounded", n)
	}
	for _, msg := range reask[len(question):] {
		if r, ok := msg.Parts[0].(llms.ToolCallResponse); ok && !strings.Contains(r.Content, oversized(len(big))) {
			t.Errorf("tool message %q does not say the arguments are shown as {}", r.Content)
		}
	}
}
