package agent_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/agent"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/middleware/fakemodel"
	"github.com/toolguard/toolguard/toolstage"
)

// A run cut off between a tool batch and the next model call, and again
// while it waits for approval, is finished by new Agent values on the
// in-memory store, and each tool runs exactly once. (The store's own
// contract is toolstage's TestMemoryCheckpointer.)
func TestResumeAfterCrash(t *testing.T) {
	t.Parallel()
	counts := ResumeAfterCrash(t, new(toolstage.MemoryCheckpointer))
	t.Logf("calls run per tool across the crashes: %s", counts)
}

// A run on a thread continues its conversation: the second run's model
// call holds the first run's transcript, the system prompt once.
func TestCheckpointerContinuesConversation(t *testing.T) {
	t.Parallel()
	var b bank
	model := fakemodel.New(
		fakemodel.ToolCalls(fakemodel.Call("get_balance", `{}`)),
		fakemodel.Text("You have 1000."),
		fakemodel.Text("Still 1000."),
	)
	cp := new(toolstage.MemoryCheckpointer)
	a := agent.New(model, toolstage.New(b.tools()), agent.WithCheckpointer(cp), agent.WithSystemPrompt("You are a bank."))
	ctx := guard.WithThread(context.Background(), "conv")
	if _, err := a.Run(ctx, "balance?"); err != nil {
		t.Fatal(err)
	}
	res, err := agent.New(model, toolstage.New(b.tools()), agent.WithCheckpointer(cp), agent.WithSystemPrompt("You are a bank.")).Run(ctx, "and now?")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"system: You are a bank.",
		"human: balance?",
		`ai: call_1 get_balance({})`,
		"tool: call_1 get_balance -> 1000.00",
		"ai: You have 1000.",
		"human: and now?",
		"ai: Still 1000.",
	}
	if got := render(res.Messages); !slices.Equal(got, want) {
		t.Errorf("second run's transcript:\n%q\nwant\n%q", got, want)
	}
	if got := render(model.Requests()[2].Messages); !slices.Equal(got, want[:6]) {
		t.Errorf("the model's third request:\n%q\nwant\n%q", got, want[:6])
	}
	// Another thread starts afresh.
	other := guard.WithThread(context.Background(), "other")
	model.Append(fakemodel.Text("hi"))
	res, err = a.Run(other, "hello")
	if err != nil || len(res.Messages) != 3 {
		t.Errorf("a new thread: %v, %q; want system, human, ai", err, render(res.Messages))
	}
}

// A run cut off while a call of its batch runs is resumed without running
// that call again: its outcome is unknown, and the model is told so.
func TestResumeAfterCrashMidBatch(t *testing.T) {
	t.Parallel()
	var b bank
	ctx, cancel := context.WithCancel(guard.WithThread(context.Background(), "mid"))
	defer cancel()
	started, release := make(chan struct{}), make(chan struct{})
	// The tool blocks until the run has returned, so the cut always comes
	// before its result (returning on ctx.Done raced with the cut).
	slow := toolstage.NewSchemaTool("wire_funds", "Wire.", nil, func(context.Context, map[string]any) (string, error) {
		b.note("wire_funds", "{}")
		close(started)
		<-release
		return "", errors.New("wire service: connection lost")
	})
	model := fakemodel.New(
		fakemodel.ToolCalls(fakemodel.Call("wire_funds", `{}`), fakemodel.Call("no_such_tool", `{}`)),
		fakemodel.Text("I will check whether the wire went out."),
	)
	cp := new(toolstage.MemoryCheckpointer)
	tools := append(b.tools(), slow)
	go func() { <-started; cancel() }()
	_, err := agent.New(model, toolstage.New(tools), agent.WithCheckpointer(cp)).Run(ctx, "wire it")
	close(release)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run() error = %v, want context.Canceled", err)
	}
	thread := guard.WithThread(context.Background(), "mid")
	res, err := agent.New(model, toolstage.New(tools), agent.WithCheckpointer(cp)).Resume(thread, nil)
	if err != nil {
		t.Fatalf("Resume(nil) error = %v", err)
	}
	if n := b.count("wire_funds"); n != 1 {
		t.Errorf("wire_funds ran %d times, want 1: a call cut off is never run again", n)
	}
	if len(res.Steps) != 2 || !errors.Is(res.Steps[0].Err, toolstage.ErrCallInterrupted) || !errors.Is(res.Steps[1].Err, toolstage.ErrUnknownTool) {
		t.Errorf("Steps = %+v, want wire_funds ErrCallInterrupted and the unknown tool's error", res.Steps)
	}
	if _, err := agent.New(model, toolstage.New(tools), agent.WithCheckpointer(cp)).Resume(thread, nil); !errors.Is(err, agent.ErrNothingToResume) {
		t.Errorf("Resume(nil) of a finished run: error = %v, want ErrNothingToResume", err)
	}
}

// A run on a thread that waits for approval is refused: Resume it.
func TestRunOnThreadAwaitingApproval(t *testing.T) {
	t.Parallel()
	var b bank
	model := fakemodel.New(fakemodel.ToolCalls(fakemodel.Call("transfer_money", `{"to":"alice","amount":25}`)))
	a := agent.New(model, toolstage.New(b.tools(), toolstage.WithApprovalFor("transfer_money")), agent.WithCheckpointer(new(toolstage.MemoryCheckpointer)))
	ctx := guard.WithThread(context.Background(), "await")
	_, err := a.Run(ctx, "pay")
	interruptOf(t, err)
	if _, err := a.Run(ctx, "pay again"); !errors.Is(err, agent.ErrRunUnfinished) {
		t.Errorf("Run() on a thread awaiting approval: error = %v, want ErrRunUnfinished", err)
	}
}

// Two runs on one thread at once: the one that saves second stops with
// ErrCheckpointConflict before its tools run.
func TestConcurrentRunsOnOneThread(t *testing.T) {
	t.Parallel()
	var b bank
	cp := new(toolstage.MemoryCheckpointer)
	ctx := guard.WithThread(context.Background(), "busy")
	release := make(chan struct{})
	arrived := make(chan struct{}, 2)
	slowModel := func() *fakemodel.Model {
		return fakemodel.New(fakemodel.Func(func(context.Context, []llms.MessageContent, llms.CallOptions) (*llms.ContentResponse, error) {
			arrived <- struct{}{}
			<-release // both runs have loaded version 0 before either saves
			return &llms.ContentResponse{Choices: []*llms.ContentChoice{{ToolCalls: []llms.ToolCall{
				{ID: "c1", Type: "function", FunctionCall: &llms.FunctionCall{Name: "get_balance", Arguments: "{}"}}}}}}, nil
		}), fakemodel.Text("done"))
	}
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			_, err := agent.New(slowModel(), toolstage.New(b.tools()), agent.WithCheckpointer(cp)).Run(ctx, "balance")
			errs <- err
		}()
	}
	<-arrived
	<-arrived
	close(release)
	var conflicts, ok int
	for range 2 {
		switch err := <-errs; {
		case err == nil:
			ok++
		case errors.Is(err, agent.ErrCheckpointConflict):
			conflicts++
		default:
			t.Errorf("Run() error = %v", err)
		}
	}
	if ok != 1 || conflicts != 1 || b.count("get_balance") != 1 {
		t.Errorf("%d runs finished, %d conflicted, get_balance ran %d times; want 1, 1, 1", ok, conflicts, b.count("get_balance"))
	}
}
