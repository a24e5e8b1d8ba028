package agent_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/agent"
	"github.com/toolguard/toolguard/errfmt"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/fakemodel"
	"github.com/toolguard/toolguard/toolstage"
	"github.com/toolguard/toolguard/validation"
)

// outputTurn is a model turn that answers beside a call of an ungated tool
// and one that waits for approval.
func outputTurn() fakemodel.Step {
	return fakemodel.ToolCalls(
		fakemodel.Call("get_balance", `{}`),
		fakemodel.Call("transfer_money", `{"to":"alice","amount":25}`),
		fakemodel.Call(agent.OutputToolName, goodAnswer),
	)
}

// An answer beside a call that waits for approval is not taken before that
// call's outcome is known: the run pauses; accepted, the call runs and the
// answer is the run's output, with no further model call; rejected, the
// answer is refused and the model is asked again. With the state in the
// interrupt or in a checkpointer, resumed by another Agent value.
func TestOutputWithApproval(t *testing.T) {
	t.Parallel()
	for _, store := range []string{"interrupt", "checkpointer"} {
		t.Run(store+"/accept", func(t *testing.T) {
			t.Parallel()
			var b bank
			model := fakemodel.New(outputTurn())
			opts := []any{toolstage.WithApprovalFor("transfer_money"), agent.WithOutputSchema(validation.Typed[Verdict]())}
			ctx := context.Background()
			if store == "checkpointer" {
				opts = append(opts, agent.WithCheckpointer(new(toolstage.MemoryCheckpointer)))
				ctx = guard.WithThread(ctx, "accept")
			}
			res, err := build(model, b.tools(), opts...).Run(ctx, "Classify")
			in := interruptOf(t, err)
			if res.Output != "" || b.count("get_balance") != 1 || b.count("transfer_money") != 0 {
				t.Fatalf("paused: Output %q, runs %v; want no output, get_balance once, transfer_money never", res.Output, b.runs)
			}
			if len(in.Pending) != 1 || in.Pending[0].Tool != "transfer_money" {
				t.Fatalf("Pending = %+v, want transfer_money alone", in.Pending)
			}
			res, err = build(model, b.tools(), opts...).Resume(ctx, viaJSON(t, in), decide(in.Pending[0], toolstage.Accept, ""))
			if err != nil {
				t.Fatalf("Resume() error = %v", err)
			}
			if res.Output != goodAnswer {
				t.Errorf("Output = %q, want %q", res.Output, goodAnswer)
			}
			if v, err := agent.Output[Verdict](res); err != nil || v != (Verdict{Label: "spam", Score: 3}) {
				t.Errorf("Output[Verdict] = %+v, %v", v, err)
			}
			if b.count("get_balance") != 1 || b.count("transfer_money") != 1 {
				t.Errorf("runs = %v, want each tool once", b.runs)
			}
			if n := len(model.Requests()); n != 1 {
				t.Errorf("the model got %d requests, want 1: the accepted answer ends the run", n)
			}
			diffLines(t, "transcript", render(res.Messages), []string{
				"human: Classify",
				"ai: call_1 get_balance({})",
				"tool: call_1 get_balance -> 1000.00",
				`ai: call_2 transfer_money({"to":"alice","amount":25})`,
				"tool: call_2 transfer_money -> sent 25.00 to alice",
				"ai: call_3 final_answer(" + goodAnswer + ")",
				"tool: call_3 final_answer -> " + errfmt.AnswerAccepted,
				"ai: " + goodAnswer,
			})
			if len(res.Steps) != 3 || res.Steps[2].Tool != agent.OutputToolName || res.Steps[2].Err != nil {
				t.Errorf("Steps = %+v, want the turn's three calls, the answer accepted", res.Steps)
			}
			checkStepMessages(t, res)
		})
		t.Run(store+"/reject", func(t *testing.T) {
			t.Parallel()
			var b bank
			const second = `{"label":"ham","score":1}`
			model := fakemodel.New(outputTurn(), answer(second))
			opts := []any{toolstage.WithApprovalFor("transfer_money"), agent.WithOutputSchema(validation.Typed[Verdict]())}
			ctx := context.Background()
			if store == "checkpointer" {
				opts = append(opts, agent.WithCheckpointer(new(toolstage.MemoryCheckpointer)))
				ctx = guard.WithThread(ctx, "reject")
			}
			_, err := build(model, b.tools(), opts...).Run(ctx, "Classify")
			in := interruptOf(t, err)
			res, err := build(model, b.tools(), opts...).Resume(ctx, viaJSON(t, in), decide(in.Pending[0], toolstage.Reject, "no"))
			if err != nil {
				t.Fatalf("Resume() error = %v", err)
			}
			if res.Output != second || b.count("transfer_money") != 0 {
				t.Errorf("Output = %q, transfer_money ran %d times; want the second answer, the rejected call never run", res.Output, b.count("transfer_money"))
			}
			if got, want := lastMessage(t, model, 1), "tool: call_3 final_answer -> "+errfmt.AnswerNotAccepted(agent.OutputToolName); got != want {
				t.Errorf("re-ask's last message = %q, want %q", got, want)
			}
			if len(res.Steps) != 4 || !errors.Is(res.Steps[1].Err, toolstage.ErrCallRejected) || res.Steps[2].Err == nil || res.Steps[3].Turn != 2 {
				t.Errorf("Steps = %+v, want turn 1's calls (transfer rejected, answer refused), then turn 2's answer", res.Steps)
			}
			checkStepMessages(t, res)
		})
	}
}

// cutAt returns a model middleware that cancels the run's context on the
// model's call number n (from 1), before it reaches the model.
func cutAt(n int, cancel context.CancelFunc) middleware.Middleware {
	calls := 0
	return middleware.Func(func(next middleware.Handler) middleware.Handler {
		return func(ctx context.Context, req *middleware.Request) (*llms.ContentResponse, error) {
			if calls++; calls == n {
				cancel()
				return nil, ctx.Err()
			}
			return next(ctx, req)
		}
	})
}

// A run with an output schema and a checkpointer, cut off after a turn
// whose answer was invalid, goes on from its checkpoint in another Agent
// value: the saved transcript holds the answer turn, the finished call
// never runs again, and the run ends with the valid answer.
func TestOutputCheckpointResumeAfterCut(t *testing.T) {
	t.Parallel()
	var b bank
	model := fakemodel.New(
		fakemodel.ToolCalls(fakemodel.Call("get_balance", `{}`), fakemodel.Call(agent.OutputToolName, badAnswer)),
		answer(goodAnswer),
	)
	cp := new(toolstage.MemoryCheckpointer)
	ctx, cancel := context.WithCancel(guard.WithThread(context.Background(), "cut"))
	defer cancel()
	schema := agent.WithOutputSchema(validation.Typed[Verdict]())
	_, err := agent.New(model, toolstage.New(b.tools()), schema, agent.WithCheckpointer(cp), agent.WithMiddleware(cutAt(2, cancel))).Run(ctx, "Classify")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run() error = %v, want context.Canceled", err)
	}
	thread := guard.WithThread(context.Background(), "cut")
	res, err := agent.New(model, toolstage.New(b.tools()), schema, agent.WithCheckpointer(cp)).Resume(thread, nil)
	if err != nil {
		t.Fatalf("Resume(nil) error = %v", err)
	}
	if res.Output != goodAnswer || b.count("get_balance") != 1 {
		t.Errorf("Output = %q, get_balance ran %d times; want the answer, get_balance once", res.Output, b.count("get_balance"))
	}
	got := render(res.Messages)
	if len(got) != 8 || got[3] != "ai: call_2 final_answer("+badAnswer+")" || got[5] != "ai: call_3 final_answer("+goodAnswer+")" {
		t.Errorf("transcript = %q, want turn 1 (the invalid answer included), then the valid answer", got)
	}
	if n := len(model.Requests()); n != 2 {
		t.Errorf("the model got %d requests, want 2", n)
	}
	if _, err := agent.New(model, toolstage.New(b.tools()), schema, agent.WithCheckpointer(cp)).Resume(thread, nil); !errors.Is(err, agent.ErrNothingToResume) {
		t.Errorf("Resume(nil) of a finished run: error = %v, want ErrNothingToResume", err)
	}
}

// A run with an output schema cut off while a sibling of its answer runs:
// resumed, the sibling is not run again, its outcome is unknown, so the
// answer of its turn is refused and the model asked again.
func TestOutputCheckpointResumeMidBatch(t *testing.T) {
	t.Parallel()
	var b bank
	ctx, cancel := context.WithCancel(guard.WithThread(context.Background(), "mid"))
	defer cancel()
	// The tool outlives the cut run, so the batch can only end by the
	// context: its result never arrives in time to be recorded.
	started, release := make(chan struct{}), make(chan struct{})
	defer close(release)
	slow := toolstage.NewSchemaTool("wire_funds", "Wire.", nil, func(context.Context, map[string]any) (string, error) {
		b.note("wire_funds", "{}")
		close(started)
		<-release
		return "", errors.New("wire outcome unknown")
	})
	const second = `{"label":"ham","score":1}`
	model := fakemodel.New(
		fakemodel.ToolCalls(fakemodel.Call("wire_funds", `{}`), fakemodel.Call(agent.OutputToolName, goodAnswer)),
		answer(second),
	)
	cp := new(toolstage.MemoryCheckpointer)
	tools := append(b.tools(), slow)
	schema := agent.WithOutputSchema(validation.Typed[Verdict]())
	go func() { <-started; cancel() }()
	if _, err := agent.New(model, toolstage.New(tools), schema, agent.WithCheckpointer(cp)).Run(ctx, "wire it"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run() error = %v, want context.Canceled", err)
	}
	res, err := agent.New(model, toolstage.New(tools), schema, agent.WithCheckpointer(cp)).Resume(guard.WithThread(context.Background(), "mid"), nil)
	if err != nil {
		t.Fatalf("Resume(nil) error = %v", err)
	}
	if n := b.count("wire_funds"); n != 1 {
		t.Errorf("wire_funds ran %d times, want 1", n)
	}
	if res.Output != second {
		t.Errorf("Output = %q, want the second answer %q", res.Output, second)
	}
	if len(res.Steps) != 3 || !errors.Is(res.Steps[0].Err, toolstage.ErrCallInterrupted) || res.Steps[1].Err == nil || res.Steps[2].Turn != 2 {
		t.Errorf("Steps = %+v, want wire_funds interrupted, the answer refused, then turn 2's answer", res.Steps)
	}
	want := "tool: call_2 final_answer -> " + errfmt.AnswerNotAccepted(agent.OutputToolName)
	if got := lastMessage(t, model, 1); got != want {
		t.Errorf("re-ask's last message = %q, want %q", got, want)
	}
	if !slices.Contains(toolMessages(res.Messages), errfmt.AnswerNotAccepted(agent.OutputToolName)) {
		t.Errorf("transcript = %q, want the refused answer recorded", render(res.Messages))
	}
	checkStepMessages(t, res)
}
