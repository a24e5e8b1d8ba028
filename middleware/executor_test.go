package middleware_test

import (
	"context"
	"reflect"
	"slices"
	"sync"
	"testing"

	"github.com/tmc/langchaingo/agents"
	"github.com/tmc/langchaingo/chains"
	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/tools"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/fakemodel"
)

// execTool is a langchaingo tool that records its inputs.
type execTool struct {
	name   string
	mu     sync.Mutex
	inputs []string
}

var _ tools.Tool = (*execTool)(nil)

func (t *execTool) Name() string        { return t.name }
func (t *execTool) Description() string { return "looks things up" }
func (t *execTool) Call(_ context.Context, input string) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.inputs = append(t.inputs, input)
	return "found " + input, nil
}

func (t *execTool) calls() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.inputs)
}

// execSearch is an OpenAI-functions call of search with langchaingo's
// single-string argument.
func execSearch(q string) fakemodel.Step {
	return fakemodel.ToolCalls(fakemodel.Call("search", `{"__arg1": "`+q+`"}`))
}

// newExecutor runs an unchanged langchaingo Executor and OpenAIFunctionsAgent
// over the fake model wrapped with mws.
func newExecutor(m llms.Model, tool tools.Tool, mws ...middleware.Middleware) *agents.Executor {
	agent := agents.NewOpenAIFunctionsAgent(middleware.Wrap(m, mws...), []tools.Tool{tool})
	return agents.NewExecutor(agent, agents.WithMaxIterations(10))
}

// TestToolCallLimitInLangchainExecutor: the Executor resends its whole
// transcript (system, human, then one AI message and one tool message per
// step) on each model call; the limiter reads the run from it.
func TestToolCallLimitInLangchainExecutor(t *testing.T) {
	t.Parallel()
	t.Run("continue", func(t *testing.T) {
		t.Parallel()
		m := fakemodel.New(execSearch("a"), execSearch("b"), execSearch("c"), fakemodel.Text("a and b it is"))
		search := &execTool{name: "search"}
		ex := newExecutor(m, search, middleware.ToolCallLimit(guard.WithToolName("search"), guard.WithRunLimit(2)))
		out, err := chains.Run(context.Background(), ex, "find a, b and c")
		if err != nil || out != "a and b it is" {
			t.Fatalf("Executor answered %q, %v; want %q, nil", out, err, "a and b it is")
		}
		if got, want := search.calls(), []string{"a", "b"}; !slices.Equal(got, want) {
			t.Errorf("search ran with %q, want %q", got, want)
		}
		reqs := m.Requests()
		if len(reqs) != 4 {
			t.Fatalf("model calls = %d, want 4", len(reqs))
		}
		// What the Executor sent for its third step: the two earlier calls
		// as AI tool-call messages after the human one, which is what the
		// limiter counted.
		var roles []llms.ChatMessageType
		for _, msg := range reqs[2].Messages {
			roles = append(roles, msg.Role)
		}
		wantRoles := []llms.ChatMessageType{llms.ChatMessageTypeSystem, llms.ChatMessageTypeHuman,
			llms.ChatMessageTypeAI, llms.ChatMessageTypeTool, llms.ChatMessageTypeAI, llms.ChatMessageTypeTool}
		if !slices.Equal(roles, wantRoles) {
			t.Fatalf("Executor's third request has roles %v, want %v", roles, wantRoles)
		}
		got := limReask(t, reqs[2].Messages, reqs[3].Messages)
		want := []limReplayed{{Tool: "search", ID: "call_3",
			Answer: "Tool call limit exceeded: 'search' may be called at most 2 times per run; do not call it again."}}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("re-ask replayed %+v, want %+v", got, want)
		}
	})
	t.Run("end", func(t *testing.T) {
		t.Parallel()
		m := fakemodel.New(execSearch("a"), execSearch("b"), execSearch("c"))
		search := &execTool{name: "search"}
		ex := newExecutor(m, search, middleware.ToolCallLimit(guard.WithRunLimit(2), guard.WithExitBehavior(guard.ExitEnd)))
		out, err := chains.Run(context.Background(), ex, "find a, b and c")
		if err != nil || out != globalEnd {
			t.Fatalf("Executor answered %q, %v; want %q, nil", out, err, globalEnd)
		}
		if got := search.calls(); len(got) != 2 {
			t.Errorf("search ran with %q, want 2 calls", got)
		}
	})
	t.Run("each Executor run is a run, a thread spans them", func(t *testing.T) {
		t.Parallel()
		m := fakemodel.New(
			execSearch("a"), execSearch("b"), fakemodel.Text("first"),
			execSearch("c"), execSearch("d"),
		)
		search := &execTool{name: "search"}
		ex := newExecutor(m, search, middleware.ToolCallLimit(guard.WithRunLimit(2), guard.WithThreadLimit(3),
			guard.WithExitBehavior(guard.ExitEnd)))
		ctx := guard.WithThread(context.Background(), "chat-1")
		if out, err := chains.Run(ctx, ex, "first question"); err != nil || out != "first" {
			t.Fatalf("first run answered %q, %v; want %q, nil", out, err, "first")
		}
		const want = "Tool call limit reached: thread limit exceeded (3/3 calls)."
		if out, err := chains.Run(ctx, ex, "second question"); err != nil || out != want {
			t.Fatalf("second run answered %q, %v; want %q, nil", out, err, want)
		}
		if got, want := search.calls(), []string{"a", "b", "c"}; !slices.Equal(got, want) {
			t.Errorf("search ran with %q, want %q", got, want)
		}
	})
}

// TestModelCallLimitInLangchainExecutor: an unchanged Executor, no run
// scope; the limiter reads the run's model calls from the AI messages the
// Executor resends, and its ExitEnd answer ends the Executor's loop.
func TestModelCallLimitInLangchainExecutor(t *testing.T) {
	t.Parallel()
	m := fakemodel.New(execSearch("a"), execSearch("b"), execSearch("c"), execSearch("d"), fakemodel.Text("c it is"))
	search := &execTool{name: "search"}
	ex := newExecutor(m, search, middleware.ModelCallLimit(guard.WithRunLimit(2)))
	// Each Executor run is a run: the first is cut at its third model call,
	// the second starts afresh.
	for _, tc := range []struct{ input, want string }{
		{"find a and b", "Model call limit reached: run limit exceeded (2/2 calls)."},
		{"find c and d", "Model call limit reached: run limit exceeded (2/2 calls)."},
	} {
		out, err := chains.Run(context.Background(), ex, tc.input)
		if err != nil || out != tc.want {
			t.Fatalf("Executor(%q) answered %q, %v; want %q, nil", tc.input, out, err, tc.want)
		}
	}
	if got, want := search.calls(), []string{"a", "b", "c", "d"}; !slices.Equal(got, want) {
		t.Errorf("search ran with %q, want %q", got, want)
	}
	if n := len(m.Requests()); n != 4 {
		t.Errorf("the model saw %d requests, want 4: the blocked calls never reach it", n)
	}
}
