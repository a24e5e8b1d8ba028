package agent_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/agent"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/toolstage"
	"github.com/toolguard/toolguard/toolstage/checkpointtest"
)

// The fault scenarios share one story: the model pays alice 25 with
// transfer_money, with other calls in the same turn, one of which brings
// the fault; then the program carries on with the thread as programs do
// (carry), and the model, asked again, pays again unless the thread shows
// it the payment. Each scenario fails the test unless transfer_money ran
// exactly once and the model was finally shown its real result.

// paymentResult is what transfer_money returns in the fault scenarios:
// the result the model must be shown once the thread goes on.
const paymentResult = "paid 25 to alice (ref P-1)"

// followUp is the message a program sends on a thread after a fault.
const followUp = "Did the transfer to alice go through?"

// payer is the model of the fault scenarios, shared by the Agent values
// that stand for the processes of one scenario. It calls transfer_money
// (and Siblings, in the same turn) unless its transcript holds a result of
// transfer_money; then it answers "Transfer: " and the first such result
// it read. It is safe for concurrent use.
type payer struct {
	// Siblings are the names of the tools it calls, with {} as arguments,
	// after transfer_money in the paying turn.
	Siblings []string

	mu    sync.Mutex
	calls int
}

// GenerateContent implements llms.Model.
func (p *payer) GenerateContent(_ context.Context, msgs []llms.MessageContent, _ ...llms.CallOption) (*llms.ContentResponse, error) {
	for _, m := range msgs {
		for _, part := range m.Parts {
			if r, ok := part.(llms.ToolCallResponse); ok && r.Name == "transfer_money" {
				return &llms.ContentResponse{Choices: []*llms.ContentChoice{{Content: "Transfer: " + r.Content}}}, nil
			}
		}
	}
	p.mu.Lock()
	p.calls++
	turn := p.calls
	p.mu.Unlock()
	call := func(i int, name, args string) llms.ToolCall {
		return llms.ToolCall{ID: fmt.Sprintf("t%d-c%d", turn, i), Type: "function", FunctionCall: &llms.FunctionCall{Name: name, Arguments: args}}
	}
	calls := []llms.ToolCall{call(0, "transfer_money", `{"to":"alice","amount":25}`)}
	for i, name := range p.Siblings {
		calls = append(calls, call(i+1, name, `{}`))
	}
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{{ToolCalls: calls}}}, nil
}

// Call implements llms.Model.
func (p *payer) Call(ctx context.Context, prompt string, options ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, p, prompt, options...)
}

// payments counts the runs of a scenario's transfer_money.
type payments struct {
	n    atomic.Int32
	done chan struct{} // closed when the first payment has returned
	once sync.Once
}

// newPayments returns a zero count.
func newPayments() *payments { return &payments{done: make(chan struct{})} }

// Tool returns the transfer_money tool that counts into p.
func (p *payments) Tool() toolstage.Tool {
	return toolstage.NewSchemaTool("transfer_money", "Send money.", map[string]any{
		"type":       "object",
		"properties": map[string]any{"to": map[string]any{"type": "string"}, "amount": map[string]any{"type": "number"}},
	}, func(context.Context, map[string]any) (string, error) {
		p.n.Add(1)
		p.once.Do(func() { close(p.done) })
		return paymentResult, nil
	})
}

// Paid is closed when the first payment has returned.
func (p *payments) Paid() <-chan struct{} { return p.done }

// Count returns how many times transfer_money ran.
func (p *payments) Count() int { return int(p.n.Load()) }

// carry carries on with the thread of ctx after a run that ended with
// err, as a program would: it resumes an [*toolstage.Interrupt] with every
// pending call accepted; else it runs followUp and, if the thread's run
// did not finish ([agent.ErrRunUnfinished]), continues it with Resume and
// a nil interrupt. It returns the last result and error.
func carry(ctx context.Context, a *agent.Agent, err error) (*agent.Result, error) {
	var in *toolstage.Interrupt
	if errors.As(err, &in) {
		ds := make([]toolstage.Decision, len(in.Pending))
		for i, p := range in.Pending {
			ds[i] = toolstage.Decision{CallID: p.ID, Action: toolstage.Accept, Digest: p.Digest}
		}
		return a.Resume(ctx, in, ds...)
	}
	res, err := a.Run(ctx, followUp)
	if errors.Is(err, agent.ErrRunUnfinished) {
		return a.Resume(ctx, nil)
	}
	return res, err
}

// checkCarried fails t unless the thread was carried on to an answer that
// shows the model read the payment's real result, and transfer_money ran
// exactly once; it logs the count.
func checkCarried(t *testing.T, scenario string, pay *payments, res *agent.Result, err error) {
	t.Helper()
	t.Logf("payments counted: %d (scenario %s)", pay.Count(), scenario)
	if n := pay.Count(); n != 1 {
		t.Errorf("%s: transfer_money ran %d times, want 1: a call that ran is never forgotten", scenario, n)
	}
	if err != nil {
		t.Fatalf("%s: carrying on with the thread: error = %v", scenario, err)
	}
	if want := "Transfer: " + paymentResult; res.Output != want {
		t.Errorf("%s: the model finally answered %q, want %q: it must be shown the payment's real result", scenario, res.Output, want)
	}
}

// stopTool returns a tool of name that, the first time it is called,
// waits for the payment to return and then does what fault does; later
// calls return "ok".
func stopTool(name string, pay *payments, fault func(ctx context.Context) (string, error)) toolstage.Tool {
	var once atomic.Bool
	return toolstage.NewSchemaTool(name, "A sibling of the payment.", nil, func(ctx context.Context, _ map[string]any) (string, error) {
		if !once.CompareAndSwap(false, true) {
			return "ok", nil
		}
		<-pay.Paid()
		return fault(ctx)
	})
}

// StopAfterPayment: a sibling of the payment ends the run with
// toolstage.ErrStopRun once the payment has returned. The next run on the
// thread must show the model the payment, not pay again. It returns the
// number of payments.
func StopAfterPayment(t *testing.T, cp toolstage.Checkpointer) int {
	t.Helper()
	pay := newPayments()
	check := stopTool("check_fraud", pay, func(context.Context) (string, error) {
		return "", fmt.Errorf("%w: fraud check says stop", toolstage.ErrStopRun)
	})
	model := &payer{Siblings: []string{"check_fraud"}}
	process := func() *agent.Agent {
		return agent.New(model, toolstage.New([]toolstage.Tool{pay.Tool(), check}), agent.WithCheckpointer(cp))
	}
	ctx := guard.WithThread(context.Background(), "fault-stop")
	_, err := process().Run(ctx, "Pay alice 25.")
	if !errors.Is(err, toolstage.ErrStopRun) {
		t.Fatalf("Run() error = %v, want ErrStopRun", err)
	}
	res, err := carry(ctx, process(), err)
	checkCarried(t, "ErrStopRun after a paying sibling", pay, res, err)
	return pay.Count()
}

// PanicAfterPayment: a sibling of the payment panics once the payment
// has returned. The process must survive, and the next run on the thread
// show the model the payment. It returns the number of payments.
func PanicAfterPayment(t *testing.T, cp toolstage.Checkpointer) int {
	t.Helper()
	pay := newPayments()
	boom := stopTool("lookup_rate", pay, func(context.Context) (string, error) { panic("rate table is nil") })
	model := &payer{Siblings: []string{"lookup_rate"}}
	process := func() *agent.Agent {
		return agent.New(model, toolstage.New([]toolstage.Tool{pay.Tool(), boom}), agent.WithCheckpointer(cp))
	}
	ctx := guard.WithThread(context.Background(), "fault-panic")
	_, err := process().Run(ctx, "Pay alice 25.")
	if err == nil || !strings.Contains(err.Error(), "lookup_rate") {
		t.Fatalf("Run() error = %v, want an error naming the tool that panicked", err)
	}
	res, err := carry(ctx, process(), err)
	checkCarried(t, "a sibling's panic after the payment", pay, res, err)
	return pay.Count()
}

// CancelAfterPayment: the run's context is cancelled after the payment
// finished, while a sibling runs. Resumed, the run must show the model the
// payment's result, not that its outcome is unknown. It returns the number
// of payments.
func CancelAfterPayment(t *testing.T, cp toolstage.Checkpointer) int {
	t.Helper()
	pay := newPayments()
	ctx, cancel := context.WithCancel(guard.WithThread(context.Background(), "fault-cancel"))
	defer cancel()
	wait := stopTool("wait_for_bank", pay, func(ctx context.Context) (string, error) {
		cancel()
		<-ctx.Done()
		return "", ctx.Err()
	})
	model := &payer{Siblings: []string{"wait_for_bank"}}
	process := func() *agent.Agent {
		// One call at a time: the payment's result is in before the
		// sibling starts.
		return agent.New(model, toolstage.New([]toolstage.Tool{pay.Tool(), wait}, toolstage.WithMaxConcurrency(1)), agent.WithCheckpointer(cp))
	}
	_, err := process().Run(ctx, "Pay alice 25.")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run() error = %v, want context.Canceled", err)
	}
	res, err := carry(guard.WithThread(context.Background(), "fault-cancel"), process(), err)
	checkCarried(t, "a cancel after the payment finished", pay, res, err)
	return pay.Count()
}

// approvalOutcome is what approvalScenario saw.
type approvalOutcome struct {
	runErr error // the first run's
	pay    *payments
	res    *agent.Result // carry's
	err    error
}

// approvalScenario runs the payment with notify_manager, which needs
// approval, in one turn on a store whose saves and loads fail as saves
// and loads say, and carries on with the thread on the store without
// faults.
func approvalScenario(t *testing.T, cp toolstage.Checkpointer, thread string, saves, loads map[int]checkpointtest.Fault) approvalOutcome {
	t.Helper()
	pay := newPayments()
	notify := toolstage.NewSchemaTool("notify_manager", "Tell the manager.", nil, func(context.Context, map[string]any) (string, error) {
		return "notified", nil
	})
	model := &payer{Siblings: []string{"notify_manager"}}
	faulty := &checkpointtest.Faulty{Checkpointer: cp, Saves: saves, Loads: loads}
	process := func(cp toolstage.Checkpointer) *agent.Agent {
		return agent.New(model, toolstage.New([]toolstage.Tool{pay.Tool(), notify}, toolstage.WithApprovalFor("notify_manager")), agent.WithCheckpointer(cp))
	}
	ctx := guard.WithThread(context.Background(), thread)
	_, runErr := process(faulty).Run(ctx, "Pay alice 25 and tell the manager.")
	res, err := carry(ctx, process(cp), runErr)
	return approvalOutcome{runErr: runErr, pay: pay, res: res, err: err}
}

// FailedInterruptSave: the save of the interrupt that pauses the run for
// approval fails (the store applies nothing) after the payment ran. The
// thread must keep the payment, and the approval. It returns the number
// of payments.
func FailedInterruptSave(t *testing.T, cp toolstage.Checkpointer) int {
	t.Helper()
	// Save 1: the turn, before its calls run; save 2: the interrupt.
	o := approvalScenario(t, cp, "fault-failed-save", map[int]checkpointtest.Fault{2: checkpointtest.Fail}, nil)
	t.Logf("Run() with the interrupt's save failing: error = %v", o.runErr)
	checkCarried(t, "a failed interrupt save after a paying sibling", o.pay, o.res, o.err)
	return o.pay.Count()
}

// LostInterruptReply: the interrupt's save is applied and its reply lost.
// The run must return its interrupt (it can tell its own write), and the
// thread go on. It returns the number of payments.
func LostInterruptReply(t *testing.T, cp toolstage.Checkpointer) int {
	t.Helper()
	o := approvalScenario(t, cp, "fault-lost-reply", map[int]checkpointtest.Fault{2: checkpointtest.LoseReply}, nil)
	var in *toolstage.Interrupt
	if !errors.As(o.runErr, &in) {
		t.Errorf("Run() with the interrupt's reply lost: error = %v, want the *Interrupt (the save was applied)", o.runErr)
	}
	checkCarried(t, "a lost reply after the interrupt's write", o.pay, o.res, o.err)
	return o.pay.Count()
}

// ConflictAfterOwnWrite: the save with which Resume claims an interrupt
// is applied, and the store reports a conflict (a client's retry of it).
// The resume must see its own write and run the approved call, not refuse
// as if another resume came first. It returns the number of payments.
func ConflictAfterOwnWrite(t *testing.T, cp toolstage.Checkpointer) int {
	t.Helper()
	pay := newPayments()
	var notified atomic.Int32
	notify := toolstage.NewSchemaTool("notify_manager", "Tell the manager.", nil, func(context.Context, map[string]any) (string, error) {
		notified.Add(1)
		return "notified", nil
	})
	model := &payer{Siblings: []string{"notify_manager"}}
	process := func(cp toolstage.Checkpointer) *agent.Agent {
		return agent.New(model, toolstage.New([]toolstage.Tool{pay.Tool(), notify}, toolstage.WithApprovalFor("notify_manager")), agent.WithCheckpointer(cp))
	}
	ctx := guard.WithThread(context.Background(), "fault-own-conflict")
	_, err := process(cp).Run(ctx, "Pay alice 25 and tell the manager.")
	var in *toolstage.Interrupt
	if !errors.As(err, &in) {
		t.Fatalf("Run() error = %v, want an *Interrupt", err)
	}
	// The resume's first save claims the interrupt.
	res, err := carry(ctx, process(&checkpointtest.Faulty{Checkpointer: cp, Saves: map[int]checkpointtest.Fault{1: checkpointtest.ConflictAfterWrite}}), err)
	checkCarried(t, "a conflict reported for Resume's own write", pay, res, err)
	if n := notified.Load(); n != 1 {
		t.Errorf("the approved notify_manager ran %d times, want 1", n)
	}
	return pay.Count()
}
