package mcptool_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/agent"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/fakemodel"
	"github.com/toolguard/toolguard/toolstage"
	"github.com/toolguard/toolguard/toolstage/mcptool"
)

// llmTools declares tools to the model the way the agent does: each tool's
// Schema as the function's parameters.
func llmTools(tools []toolstage.Tool) []llms.Tool {
	out := make([]llms.Tool, len(tools))
	for i, t := range tools {
		out[i] = llms.Tool{Type: "function", Function: &llms.FunctionDefinition{
			Name:        t.Name(),
			Description: t.Description(),
			Parameters:  t.Schema(),
		}}
	}
	return out
}

// TestToolArgValidationBeforeCallTool shows the point of the adapter: a call
// that breaks the server's inputSchema is caught by ToolArgValidation and
// corrected by the model without any tools/call reaching the server.
func TestToolArgValidationBeforeCallTool(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		tool         string
		bad, good    string
		wantFeedback []string // lines of the feedback the model gets
		want         string   // the tool's result for the good call
	}{
		{"string for integer", "add", `{"a": "two", "b": 3}`, `{"a": 2, "b": 3}`,
			[]string{`- /a: expected integer, got "two"`}, "5"},
		{"missing required", "add", `{"a": 2}`, `{"a": 2, "b": 3}`,
			[]string{`- /b: missing required property (integer)`}, "5"},
		{"unknown property", "add", `{"a": 2, "b": 3, "c": 4}`, `{"a": 2, "b": 3}`,
			[]string{`- /c: unexpected property; allowed properties: "a", "b", got 4`}, "5"},
		{"every violation at once", "repeat", `{"text": 7, "times": 1.5, "x": true}`, `{"text": "ab", "times": 2}`,
			[]string{`- /text: expected string, got 7`, `- /times: expected integer, got 1.5`, `- /x: unexpected property; allowed properties: "text", "times", got true`}, "abab"},
		{"hand-written draft-07 schema", "media", `{"caption": "far too long for twenty chars"}`, `{"caption": "short"}`,
			[]string{`- /caption: expected at most 20 characters (got 29), got "far too long for twenty chars"`}, mediaResult},
		{"not JSON", "ping", `{"x":`, `{}`,
			[]string{`- (root): arguments are not valid JSON: unexpected end of input after byte 5 (truncated?), got "{\"x\":"`}, "pong"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ts := connect(t, newServer(nil))
			list, err := mcptool.Tools(context.Background(), ts.session)
			if err != nil {
				t.Fatalf("Tools: %v", err)
			}
			model := fakemodel.New(
				fakemodel.ToolCalls(fakemodel.Call(tc.tool, tc.bad)),
				fakemodel.ToolCalls(fakemodel.Call(tc.tool, tc.good)),
			)
			llm := middleware.Wrap(model, middleware.ToolArgValidation())
			resp, err := llm.GenerateContent(context.Background(),
				[]llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "go")},
				llms.WithTools(llmTools(list)))
			if err != nil {
				t.Fatalf("GenerateContent: %v", err)
			}

			// The bad call was answered without a round trip to the server.
			if calls := ts.Calls(); len(calls) != 0 {
				t.Fatalf("server received %q before any tool ran, want no tools/call", calls)
			}
			reqs := model.Requests()
			if len(reqs) != 2 {
				t.Fatalf("model calls = %d, want 2 (the bad call, then the correction)", len(reqs))
			}
			feedback := lastToolMessage(t, reqs[1].Messages)
			lines := strings.Split(feedback, "\n")
			for _, line := range tc.wantFeedback {
				if !slices.Contains(lines, line) {
					t.Errorf("feedback lacks line %q:\n%s", line, feedback)
				}
			}

			// The corrected call is what the agent runs.
			calls := resp.Choices[0].ToolCalls
			if len(calls) != 1 || calls[0].FunctionCall.Arguments != tc.good {
				t.Fatalf("response tool calls = %+v, want one %s(%s)", calls, tc.tool, tc.good)
			}
			idx := slices.IndexFunc(list, func(tool toolstage.Tool) bool { return tool.Name() == tc.tool })
			got, err := list[idx].Call(context.Background(), calls[0].FunctionCall.Arguments)
			if err != nil {
				t.Fatalf("%s.Call(%q): %v", tc.tool, tc.good, err)
			}
			if got != tc.want {
				t.Errorf("%s.Call(%q) = %q, want %q", tc.tool, tc.good, got, tc.want)
			}
			if calls := ts.Calls(); len(calls) != 1 || !strings.HasPrefix(calls[0], tc.tool+" ") {
				t.Errorf("server received %q, want exactly one call of %s", calls, tc.tool)
			}
		})
	}
}

// lastToolMessage returns the content of the last tool message in msgs.
func lastToolMessage(t *testing.T, msgs []llms.MessageContent) string {
	t.Helper()
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role != llms.ChatMessageTypeTool {
			continue
		}
		for _, p := range msgs[i].Parts {
			if r, ok := p.(llms.ToolCallResponse); ok {
				return r.Content
			}
		}
	}
	t.Fatalf("no tool message in %+v", msgs)
	return ""
}

// TestAgentRunsMCPTools runs MCP tools in the agent: the server's schemas
// reach the model, the bad call never reaches the server, and a tool error
// becomes a tool message the model reads.
func TestAgentRunsMCPTools(t *testing.T) {
	t.Parallel()
	ts := connect(t, newServer(nil))
	tools, err := mcptool.Tools(context.Background(), ts.session, mcptool.WithFilter(func(t *mcp.Tool) bool {
		return t.Name == "add" || t.Name == "divide"
	}))
	if err != nil {
		t.Fatalf("Tools: %v", err)
	}
	model := fakemodel.New(
		fakemodel.ToolCalls(fakemodel.Call("add", `{"a": "two", "b": 3}`)),
		fakemodel.ToolCalls(fakemodel.Call("add", `{"a": 2, "b": 3}`), fakemodel.Call("divide", `{"a": 1, "b": 0}`)),
		fakemodel.Text("2 + 3 = 5; 1 / 0 is undefined."),
	)
	a := agent.New(model, toolstage.New(tools), agent.WithMiddleware(middleware.ToolArgValidation()))
	res, err := a.Run(context.Background(), "What are 2 + 3 and 1 / 0?")
	if err != nil {
		t.Fatalf("Run: %v", err)
	}

	declared := model.Requests()[0].Options.Tools
	if len(declared) != 2 || declared[0].Function.Name != "add" || jsonOf(t, declared[0].Function.Parameters) != jsonOf(t, addSchema) {
		t.Errorf("tools sent to the model = %+v, want add and divide, add with the server's schema %s", declared, addSchema)
	}
	if res.ModelCalls != 3 || res.Output != "2 + 3 = 5; 1 / 0 is undefined." {
		t.Errorf("Run() = %d model calls, output %q, want 3, %q", res.ModelCalls, res.Output, "2 + 3 = 5; 1 / 0 is undefined.")
	}
	calls := ts.Calls()
	slices.Sort(calls) // the agent runs a response's calls in parallel
	if want := []string{`add {"a":2,"b":3}`, `divide {"a":1,"b":0}`}; !slices.Equal(calls, want) {
		t.Errorf("server received %q, want %q", calls, want)
	}
	if len(res.Steps) != 2 {
		t.Fatalf("Run() steps = %+v, want 2", res.Steps)
	}
	if s := res.Steps[0]; s.Tool != "add" || s.Result != "5" || s.Err != nil {
		t.Errorf("step 1 = %s -> %q, %v, want add -> \"5\", nil", s.Tool, s.Result, s.Err)
	}
	var te *mcptool.ToolError
	if s := res.Steps[1]; s.Tool != "divide" || !errors.As(s.Err, &te) || te.Text != "division by zero" {
		t.Errorf("step 2 = %s -> %q, %v, want divide -> *ToolError %q", s.Tool, s.Result, s.Err, "division by zero")
	}
	if got, want := lastToolMessage(t, res.Messages), "Error: division by zero"; got != want {
		t.Errorf("tool message for divide = %q, want %q", got, want)
	}
}
