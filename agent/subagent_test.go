package agent_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/agent"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/middleware/fakemodel"
	"github.com/toolguard/toolguard/toolstage"
)

// A sub-agent used as a tool, sharing its parent's checkpointer, runs in
// its own thread scope: it neither reads nor writes the parent's thread
// (which is mid-run while its tool runs), and the parent's model reads the
// sub-agent's answer, never an internal error.
func TestSubAgentOwnThread(t *testing.T) {
	t.Parallel()
	cp := new(toolstage.MemoryCheckpointer)
	var b bank
	subModel := fakemodel.New(
		fakemodel.ToolCalls(fakemodel.Call("get_balance", `{}`)),
		fakemodel.Text("The balance is 1000.00."),
	)
	var seen []string // the sub-agent's tool calls: name@thread from its tool stage, then name from its Steps
	threadOf := toolstage.ToolFunc(func(next toolstage.ToolHandler) toolstage.ToolHandler {
		return func(ctx context.Context, call *toolstage.ToolCall) (*toolstage.ToolResult, error) {
			info, _ := toolstage.CallFrom(ctx)
			seen = append(seen, call.Name+"@"+info.Thread)
			return next(ctx, call)
		}
	})
	sub := agent.New(subModel, toolstage.New(b.tools(), toolstage.WithToolMiddleware(threadOf)), agent.WithCheckpointer(cp))
	research := toolstage.NewSchemaTool("research", "Ask the research agent.", nil, func(ctx context.Context, _ map[string]any) (string, error) {
		res, err := sub.Run(ctx, "What is the balance?")
		if err != nil {
			return "", err
		}
		for _, s := range res.Steps {
			seen = append(seen, s.Tool)
		}
		return res.Output, nil
	})
	parentModel := fakemodel.New(
		fakemodel.ToolCalls(fakemodel.Call("research", `{}`)),
		fakemodel.Text("Done."),
	)
	parent := agent.New(parentModel, toolstage.New([]toolstage.Tool{research}), agent.WithCheckpointer(cp))
	ctx := guard.WithThread(context.Background(), "parent")
	res, err := parent.Run(ctx, "Research the balance.")
	if err != nil {
		t.Fatalf("parent Run() error = %v", err)
	}
	got := toolMessages(res.Messages)
	if len(got) != 1 || got[0] != "The balance is 1000.00." {
		t.Fatalf("the parent's model read %q from research, want the sub-agent's answer", got)
	}
	if want := []string{"get_balance@", "get_balance"}; !slices.Equal(seen, want) {
		t.Errorf("the sub-agent's tool calls saw %q, want %q: it has no thread of its own", seen, want)
	}
	// The parent's thread holds the parent's conversation only, and goes on.
	state, _, err := cp.Load(context.Background(), "parent")
	if err != nil || strings.Contains(string(state), "What is the balance?") {
		t.Errorf("the parent's thread holds the sub-agent's run: %s (%v)", state, err)
	}
	parentModel.Append(fakemodel.Text("Still done."))
	if _, err := parent.Run(ctx, "Thanks."); err != nil {
		t.Errorf("the parent's next Run() error = %v", err)
	}
}

// A tool may give its sub-agent a thread of its own with
// guard.WithThread: the sub-agent then runs, and is saved, there.
func TestSubAgentNamedThread(t *testing.T) {
	t.Parallel()
	cp := new(toolstage.MemoryCheckpointer)
	subModel := fakemodel.New(fakemodel.Text("first"), fakemodel.Text("second"))
	sub := agent.New(subModel, toolstage.New(nil), agent.WithCheckpointer(cp))
	ask := toolstage.NewSchemaTool("ask", "Ask the helper.", nil, func(ctx context.Context, _ map[string]any) (string, error) {
		info, _ := toolstage.CallFrom(ctx)
		res, err := sub.Run(guard.WithThread(ctx, info.Thread+"/helper"), "question")
		if err != nil {
			return "", err
		}
		return res.Output, nil
	})
	parentModel := fakemodel.New(
		fakemodel.ToolCalls(fakemodel.Call("ask", `{}`)),
		fakemodel.ToolCalls(fakemodel.Call("ask", `{}`)),
		fakemodel.Text("Done."),
	)
	ctx := guard.WithThread(context.Background(), "p")
	if _, err := agent.New(parentModel, toolstage.New([]toolstage.Tool{ask}), agent.WithCheckpointer(cp)).Run(ctx, "go"); err != nil {
		t.Fatalf("Run() error = %v", err)
	}
	// The helper's thread carried its conversation from the first call to
	// the second.
	reqs := subModel.Requests()
	if len(reqs) != 2 || len(reqs[1].Messages) != 3 {
		t.Fatalf("the helper's second request had %d messages, want 3 (its first question, answer, second question)", len(reqs[len(reqs)-1].Messages))
	}
	if state, _, _ := cp.Load(context.Background(), "p/helper"); state == nil {
		t.Error("the helper's thread p/helper was not saved")
	}
}
