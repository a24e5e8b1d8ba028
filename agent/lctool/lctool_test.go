package lctool_test

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/tools"
	"github.com/toolguard/toolguard/agent"
	"github.com/toolguard/toolguard/agent/lctool"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/fakemodel"
	"github.com/toolguard/toolguard/toolstage"
)

// echo is a langchaingo tool that records its inputs.
type echo struct {
	mu     sync.Mutex
	inputs []string
}

func (*echo) Name() string        { return "echo" }
func (*echo) Description() string { return "Echoes its input." }
func (e *echo) Call(_ context.Context, input string) (string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.inputs = append(e.inputs, input)
	return "echo: " + input, nil
}

var _ tools.Tool = (*echo)(nil)

func TestFromLangchainInput(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args, want string
	}{
		{`{"__arg1": "hello"}`, "hello"},
		{`{"__arg1": "hello", "extra": 1}`, "hello"},
		{`{"__arg1": 42}`, `{"__arg1": 42}`}, // not a string: raw, as OpenAIFunctionsAgent does
		{`{"input": "hello"}`, `{"input": "hello"}`},
		{`2 + 2`, `2 + 2`},
		{``, ``},
	}
	for _, tc := range tests {
		e := &echo{}
		out, err := lctool.FromLangchain(e).Call(context.Background(), tc.args)
		if err != nil || out != "echo: "+tc.want {
			t.Errorf("Call(%q) = %q, %v; want %q, nil", tc.args, out, err, "echo: "+tc.want)
		}
	}
}

func TestFromLangchainDescribesTool(t *testing.T) {
	t.Parallel()
	tool := lctool.FromLangchain(tools.Calculator{})
	if tool.Name() != "calculator" || tool.Description() != (tools.Calculator{}).Description() {
		t.Errorf("adapted tool = %q %q, want calculator's name and description", tool.Name(), tool.Description())
	}
	got, err := json.Marshal(tool.Schema())
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"properties":{"__arg1":{"type":"string"}},"required":["__arg1"],"type":"object"}`
	if string(got) != want {
		t.Errorf("Schema() = %s, want %s", got, want)
	}
	out, err := tool.Call(context.Background(), `{"__arg1": "6 * 7"}`)
	if err != nil || out != "42" {
		t.Errorf("calculator Call(6 * 7) = %q, %v; want 42", out, err)
	}
}

// In an agent with ToolArgValidation, a call whose "__arg1" is not a string
// is corrected by the model before the langchaingo tool sees it.
func TestFromLangchainInAgent(t *testing.T) {
	t.Parallel()
	e := &echo{}
	model := fakemodel.New(
		fakemodel.ToolCalls(fakemodel.Call("echo", `{"__arg1": 42}`)),
		fakemodel.ToolCalls(fakemodel.Call("echo", `{"__arg1": "42"}`)),
		fakemodel.Text("It said 42."),
	)
	a := agent.New(model, toolstage.New([]toolstage.Tool{lctool.FromLangchain(e)}), agent.WithMiddleware(middleware.ToolArgValidation()))
	res, err := a.Run(context.Background(), "echo 42")
	if err != nil {
		t.Fatalf("Run = %v, want nil", err)
	}
	if !slices.Equal(e.inputs, []string{"42"}) || res.Output != "It said 42." || res.ModelCalls != 3 {
		t.Errorf("tool inputs %q, Output %q, ModelCalls %d; want [42], %q, 3", e.inputs, res.Output, res.ModelCalls, "It said 42.")
	}
	answer := res.Messages[2].Parts[0].(llms.ToolCallResponse)
	if answer.Content != "echo: 42" {
		t.Errorf("tool message = %q, want %q", answer.Content, "echo: 42")
	}
}
