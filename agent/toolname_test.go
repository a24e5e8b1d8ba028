package agent_test

import (
	"context"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/agent"
	"github.com/toolguard/toolguard/middleware/fakemodel"
)

func TestSafeToolName(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 70)
	for _, tc := range []struct{ in, want string }{
		{"get_weather", "get_weather"},
		{"A-z_09", "A-z_09"},
		{strings.Repeat("y", 64), strings.Repeat("y", 64)},
		{"files.read", "files_read_601e4eb6"},
		{"a/b", "a_b_c14cddc0"},
		{"a.b", "a_b_2e7336dc"},
		{"météo", "m_t_o_"},
		{"", "_e3b0c442"},
		{long, strings.Repeat("x", 55)},
	} {
		got := agent.SafeToolName(tc.in)
		if !agent.IsSafeToolName(got) {
			t.Errorf("SafeToolName(%q) = %q, which IsSafeToolName rejects", tc.in, got)
		}
		if agent.SafeToolName(got) != got {
			t.Errorf("SafeToolName(SafeToolName(%q)) = %q, want %q (idempotent)", tc.in, agent.SafeToolName(got), got)
		}
		if !strings.HasPrefix(got, tc.want) {
			t.Errorf("SafeToolName(%q) = %q, want it to start with %q", tc.in, got, tc.want)
		}
		if agent.IsSafeToolName(tc.in) != (got == tc.in) {
			t.Errorf("SafeToolName(%q) = %q; a name is kept exactly when it is safe", tc.in, got)
		}
	}
	if a, b := agent.SafeToolName("a.b"), agent.SafeToolName("a/b"); a == b {
		t.Errorf("SafeToolName(%q) = SafeToolName(%q) = %q, want distinct names", "a.b", "a/b", a)
	}
	if got := agent.SafeToolName(long); len(got) != agent.MaxToolNameLen {
		t.Errorf("SafeToolName(70 x's) = %q (%d bytes), want %d bytes", got, len(got), agent.MaxToolNameLen)
	}
}

// TestAgentSendsSafeNames: a tool named files.read is offered as its safe
// name, and the model's call of that name runs it.
func TestAgentSendsSafeNames(t *testing.T) {
	t.Parallel()
	var ran []string
	read := agent.NewSchemaTool("files.read", "Read a file.", nil, func(_ context.Context, args map[string]any) (string, error) {
		ran = append(ran, args["path"].(string))
		return "hello", nil
	})
	safe := agent.SafeToolName("files.read")
	m := fakemodel.New(fakemodel.ToolCalls(fakemodel.Call(safe, `{"path": "notes.txt"}`)), fakemodel.Text("It says hello."))
	res, err := agent.New(m, []agent.Tool{read}).Run(context.Background(), "read notes.txt")
	if err != nil || res.Output != "It says hello." {
		t.Fatalf("Run() = %+v, %v; want the answer", res, err)
	}
	if offered := m.Requests()[0].Options.Tools; len(offered) != 1 || offered[0].Function.Name != safe {
		t.Errorf("offered tools = %+v, want one named %q", offered, safe)
	}
	if len(ran) != 1 || ran[0] != "notes.txt" {
		t.Errorf("files.read ran with %q, want [notes.txt]", ran)
	}
}

func TestWithToolNamesCollisionPanics(t *testing.T) {
	t.Parallel()
	noop := func(context.Context, map[string]any) (string, error) { return "", nil }
	tools := []agent.Tool{agent.NewSchemaTool("a.b", "", nil, noop), agent.NewSchemaTool("a/b", "", nil, noop)}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), `two tools are named "same"`) {
			t.Errorf("New with colliding names recovered %v, want a panic naming the name", r)
		}
	}()
	agent.New(fakemodel.New(), tools, agent.WithToolNames(func(string) string { return "same" }))
}
