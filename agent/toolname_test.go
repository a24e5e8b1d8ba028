package agent_test

import (
	"context"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/agent"
	"github.com/toolguard/toolguard/middleware/fakemodel"
	"github.com/toolguard/toolguard/toolstage"
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
		got := toolstage.SafeToolName(tc.in)
		if !toolstage.IsSafeToolName(got) {
			t.Errorf("SafeToolName(%q) = %q, which IsSafeToolName rejects", tc.in, got)
		}
		if toolstage.SafeToolName(got) != got {
			t.Errorf("SafeToolName(SafeToolName(%q)) = %q, want %q (idempotent)", tc.in, toolstage.SafeToolName(got), got)
		}
		if !strings.HasPrefix(got, tc.want) {
			t.Errorf("SafeToolName(%q) = %q, want it to start with %q", tc.in, got, tc.want)
		}
		if toolstage.IsSafeToolName(tc.in) != (got == tc.in) {
			t.Errorf("SafeToolName(%q) = %q; a name is kept exactly when it is safe", tc.in, got)
		}
	}
	if a, b := toolstage.SafeToolName("a.b"), toolstage.SafeToolName("a/b"); a == b {
		t.Errorf("SafeToolName(%q) = SafeToolName(%q) = %q, want distinct names", "a.b", "a/b", a)
	}
	if got := toolstage.SafeToolName(long); len(got) != toolstage.MaxToolNameLen {
		t.Errorf("SafeToolName(70 x's) = %q (%d bytes), want %d bytes", got, len(got), toolstage.MaxToolNameLen)
	}
}

// TestAgentSendsSafeNames: a tool named files.read is offered as its safe
// name, and the model's call of that name runs it.
func TestAgentSendsSafeNames(t *testing.T) {
	t.Parallel()
	var ran []string
	read := toolstage.NewSchemaTool("files.read", "Read a file.", nil, func(_ context.Context, args map[string]any) (string, error) {
		ran = append(ran, args["path"].(string))
		return "hello", nil
	})
	safe := toolstage.SafeToolName("files.read")
	m := fakemodel.New(fakemodel.ToolCalls(fakemodel.Call(safe, `{"path": "notes.txt"}`)), fakemodel.Text("It says hello."))
	res, err := agent.New(m, toolstage.New([]toolstage.Tool{read})).Run(context.Background(), "read notes.txt")
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
	tools := []toolstage.Tool{toolstage.NewSchemaTool("a.b", "", nil, noop), toolstage.NewSchemaTool("a/b", "", nil, noop)}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), `two tools are named "same"`) {
			t.Errorf("New with colliding names recovered %v, want a panic naming the name", r)
		}
	}()
	agent.New(fakemodel.New(), toolstage.New(tools, toolstage.WithToolNames(func(string) string { return "same" })))
}
