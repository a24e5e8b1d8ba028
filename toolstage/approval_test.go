package toolstage_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/toolstage"
	"github.com/toolguard/toolguard/validation"
)

// testKey is the interrupt key of the tests' stages; otherKey another
// application's.
var (
	testKey  = []byte("toolstage-tests-interrupt-key-01")
	otherKey = []byte("another-application-key-99999999")
)

// bank is the tools of the approval tests, counting their runs: a payment
// that needs a person's approval between a balance and a rate lookup.
type bank struct {
	balances, payments, rates atomic.Int32
	paid                      atomic.Value // the last payment's transferArgs
	events                    eventLog     // of every stage of k's
}

func (k *bank) tools() []toolstage.Tool {
	pay := toolstage.NewTool("transfer_money", "Pays someone.", func(_ context.Context, a transferArgs) (string, error) {
		k.payments.Add(1)
		k.paid.Store(a)
		return fmt.Sprintf("paid %d to %s", a.Amount, a.To), nil
	})
	return []toolstage.Tool{counted("get_balance", "1000.00", &k.balances), pay, counted("get_rate", "1.08", &k.rates)}
}

// stage returns a Stage of k's tools where every payment waits for a
// person, its interrupts signed with testKey, reporting to k.events, and
// opts.
func (k *bank) stage(opts ...toolstage.Option) *toolstage.Stage {
	return toolstage.New(k.tools(), append([]toolstage.Option{toolstage.WithApprovalFor("transfer_money"),
		toolstage.WithInterruptKey(testKey), toolstage.WithEventHandler(k.events.handle)}, opts...)...)
}

// ran returns how many times each tool ran: balance, payment, rate.
func (k *bank) ran() [3]int32 {
	return [3]int32{k.balances.Load(), k.payments.Load(), k.rates.Load()}
}

// threeCalls is a model turn of three calls, the middle one a payment.
func threeCalls() []guard.Call {
	return []guard.Call{
		call("call_1", "get_balance", `{}`),
		call("call_2", "transfer_money", `{"amount": 500, "to": "bob"}`),
		call("call_3", "get_rate", `{}`),
	}
}

// pause runs threeCalls on s and returns the interrupt, checking that the
// balance and the rate ran and the payment waits.
func pause(t *testing.T, ctx context.Context, s *toolstage.Stage) *toolstage.Interrupt {
	t.Helper()
	b, err := s.Run(ctx, threeCalls())
	if err != nil {
		t.Fatalf("Run() error = %v, want a pause, which is not an error", err)
	}
	if got := ids(b.Outcomes); !slices.Equal(got, []string{"call_1", "call_3"}) || !slices.Equal(indexes(b.Outcomes), []int{0, 2}) {
		t.Fatalf("Run() outcomes %q (Index %v), want call_1 and call_3 (0, 2)", got, indexes(b.Outcomes))
	}
	in := b.Interrupt
	if in == nil || len(in.Pending) != 1 || in.Pending[0].ID != "call_2" || in.Pending[0].Tool != "transfer_money" || in.Pending[0].Digest == "" {
		t.Fatalf("Run() Interrupt = %+v, want call_2's payment pending with a digest", in)
	}
	return in
}

// decide returns the decision of action on pending call p.
func decide(p toolstage.PendingCall, action toolstage.Action) toolstage.Decision {
	return toolstage.Decision{CallID: p.ID, Action: action, Digest: p.Digest}
}

// The "must show": a 3-call batch whose middle call needs approval
// pauses with the outcomes of calls 1 and 3 and the payment pending; Resume
// with Accept returns the outcomes of all three, in call order, the
// payment run once and the others not again.
func TestApprovalThreeCallBatch(t *testing.T) {
	t.Parallel()
	var k bank
	s := k.stage()
	ctx := context.Background()
	b, err := s.Run(ctx, threeCalls())
	if err != nil {
		t.Fatalf("Run() error = %v", err)
	}
	logOutcomes(t, "Run", b.Outcomes)
	in := b.Interrupt
	if in == nil {
		t.Fatal("Run() Interrupt = nil, want the payment pending")
	}
	for _, p := range in.Pending {
		t.Logf("Run: pending %s %s(%s)", p.ID, p.Tool, p.Args)
	}
	if got := ids(b.Outcomes); !slices.Equal(got, []string{"call_1", "call_3"}) || !slices.Equal(indexes(b.Outcomes), []int{0, 2}) {
		t.Errorf("Run() outcomes %q (Index %v), want call_1 and call_3 (0, 2)", got, indexes(b.Outcomes))
	}
	if len(in.Pending) != 1 || in.Pending[0].ID != "call_2" || string(in.Pending[0].Args) != `{"amount":500,"to":"bob"}` || in.Pending[0].Schema == nil {
		t.Errorf("Pending = %+v, want call_2 with its validated arguments and the schema for a form", in.Pending)
	}
	if got := k.ran(); got != [3]int32{1, 0, 1} {
		t.Errorf("runs (balance, payment, rate) after Run = %v, want [1 0 1]", got)
	}

	b, err = s.Resume(ctx, in, decide(in.Pending[0], toolstage.Accept))
	if err != nil {
		t.Fatalf("Resume() error = %v", err)
	}
	logOutcomes(t, "Resume", b.Outcomes)
	if got := ids(b.Outcomes); !slices.Equal(got, []string{"call_1", "call_2", "call_3"}) {
		t.Errorf("Resume() outcome ids = %q, want call_1, call_2, call_3", got)
	}
	if got := indexes(b.Outcomes); !slices.Equal(got, []int{0, 1, 2}) {
		t.Errorf("Resume() outcome Index = %v, want 0, 1, 2", got)
	}
	var contents []string
	for _, o := range b.Outcomes {
		contents = append(contents, o.Content)
		if o.Err != nil {
			t.Errorf("Resume() outcome %s: Err = %v", o.Call.ID, o.Err)
		}
	}
	if want := []string{"1000.00", "paid 500 to bob", "1.08"}; !slices.Equal(contents, want) {
		t.Errorf("Resume() contents = %q, want %q", contents, want)
	}
	if b.Interrupt != nil {
		t.Errorf("Resume() Interrupt = %+v, want nil", b.Interrupt)
	}
	if got := k.ran(); got != [3]int32{1, 1, 1} {
		t.Errorf("runs (balance, payment, rate) after Resume = %v, want [1 1 1]", got)
	}
}

// Edit runs the call with the person's arguments once they pass the
// tool's schema, the outcome's Call holding them; an invalid edit is a
// *DecisionError naming every violation, nothing runs, and the interrupt
// can be resumed again.
func TestResumeEdit(t *testing.T) {
	t.Parallel()
	var k bank
	s := k.stage()
	ctx := context.Background()
	in := pause(t, ctx, s)
	p := in.Pending[0]

	bad := decide(p, toolstage.Edit)
	bad.Args = json.RawMessage(`{"amount": "all of it", "to": "bob"}`)
	_, err := s.Resume(ctx, in, bad)
	var de *toolstage.DecisionError
	var ve *validation.Error
	if !errors.As(err, &de) || !errors.Is(err, toolstage.ErrDecisionRefused) || de.CallID != "call_2" || !errors.As(err, &ve) {
		t.Fatalf("Resume(invalid edit) error = %v, want a *DecisionError for call_2 wrapping the *validation.Error", err)
	}
	if k.payments.Load() != 0 {
		t.Fatalf("the payment ran %d times after an invalid edit, want never", k.payments.Load())
	}

	edit := decide(p, toolstage.Edit)
	edit.Args = json.RawMessage(`{"amount": 50, "to": "bob"}`)
	b, err := s.Resume(ctx, in, edit)
	if err != nil {
		t.Fatalf("Resume(edit) after an invalid one: error = %v, want the interrupt still usable", err)
	}
	o := b.Outcomes[1]
	if o.Err != nil || o.Content != "paid 50 to bob" || k.payments.Load() != 1 || k.paid.Load() != (transferArgs{Amount: 50, To: "bob"}) {
		t.Errorf("edited payment = %q, %v, ran %d times with %v; want it run once with 50", o.Content, o.Err, k.payments.Load(), k.paid.Load())
	}
	if string(o.Call.Args) != `{"amount":50,"to":"bob"}` {
		t.Errorf("edited outcome's Call.Args = %s, want the edit", o.Call.Args)
	}
}

// Reject never runs the call, and the model reads the person's message
// (ErrCallRejected); Respond never runs it either, and its message is the
// call's result.
func TestResumeRejectAndRespond(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		action  toolstage.Action
		message string
		wantErr error
	}{
		{toolstage.Reject, "Not today: the limit is 100.", toolstage.ErrCallRejected},
		{toolstage.Respond, "Paid by hand, ref H-7.", nil},
	} {
		t.Run(string(tc.action), func(t *testing.T) {
			t.Parallel()
			var k bank
			s := k.stage()
			ctx := context.Background()
			in := pause(t, ctx, s)
			d := decide(in.Pending[0], tc.action)
			d.Message = tc.message
			b, err := s.Resume(ctx, in, d)
			if err != nil {
				t.Fatalf("Resume() error = %v", err)
			}
			if got := ids(b.Outcomes); !slices.Equal(got, []string{"call_1", "call_2", "call_3"}) {
				t.Errorf("outcome ids = %q, want all three in call order", got)
			}
			o := b.Outcomes[1]
			if o.Content != tc.message || o.Args != nil || (tc.wantErr == nil) != (o.Err == nil) || (tc.wantErr != nil && !errors.Is(o.Err, tc.wantErr)) {
				t.Errorf("payment's outcome = %q, %v (Args %s); want %q, %v, not run", o.Content, o.Err, o.Args, tc.message, tc.wantErr)
			}
			if got := k.ran(); got != [3]int32{1, 0, 1} {
				t.Errorf("runs (balance, payment, rate) = %v, want [1 0 1]", got)
			}
		})
	}
}

// An interrupt marshalled to JSON and back, as it travels to a person's
// screen and back, still resumes; and once resumed, the same Stage
// refuses it again (a replay) and runs nothing.
func TestResumeJSONRoundTripAndReplay(t *testing.T) {
	t.Parallel()
	var k bank
	s := k.stage()
	ctx := context.Background()
	in := pause(t, ctx, s)
	raw, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var back toolstage.Interrupt
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	b, err := s.Resume(ctx, &back, decide(back.Pending[0], toolstage.Accept))
	if err != nil {
		t.Fatalf("Resume() of the interrupt after a JSON round trip: error = %v", err)
	}
	if got := ids(b.Outcomes); !slices.Equal(got, []string{"call_1", "call_2", "call_3"}) {
		t.Errorf("outcome ids = %q, want all three in call order", got)
	}
	for _, replay := range []*toolstage.Interrupt{in, &back} {
		if _, err := s.Resume(ctx, replay, decide(replay.Pending[0], toolstage.Accept)); !errors.Is(err, toolstage.ErrInterruptRefused) {
			t.Errorf("a second Resume() error = %v, want ErrInterruptRefused", err)
		}
	}
	if got := k.ran(); got != [3]int32{1, 1, 1} {
		t.Errorf("runs (balance, payment, rate) = %v, want [1 1 1]", got)
	}
}

// A call that needs approval but whose arguments its schema rejects is
// never put to a person: the model reads why, as for any call, and the
// tool does not run.
func TestApprovalInvalidArgsNotPending(t *testing.T) {
	t.Parallel()
	var k bank
	b, err := k.stage().Run(context.Background(), []guard.Call{call("call_1", "transfer_money", `{"amount": "lots", "to": "bob"}`)})
	if err != nil {
		t.Fatal(err)
	}
	var ve *validation.Error
	if b.Interrupt != nil || len(b.Outcomes) != 1 || !errors.As(b.Outcomes[0].Err, &ve) || k.payments.Load() != 0 {
		t.Errorf("Run() = %+v (Interrupt %+v), payment ran %d times; want a *validation.Error outcome, no pause, never run", b.Outcomes, b.Interrupt, k.payments.Load())
	}
}

// A batch that a sibling ends (ErrStopRun) while a call waits for a
// person does not pause: the waiting call never runs (ErrCallNotStarted),
// nor does any call not started, and Run returns the stop.
func TestApprovalBatchStopped(t *testing.T) {
	t.Parallel()
	var k bank
	stop := toolstage.ToolFunc(func(next toolstage.ToolHandler) toolstage.ToolHandler {
		return func(ctx context.Context, c *toolstage.ToolCall) (*toolstage.ToolResult, error) {
			if c.Name == "get_balance" {
				return nil, fmt.Errorf("%w: the session ended", toolstage.ErrStopRun)
			}
			return next(ctx, c)
		}
	})
	b, err := k.stage(toolstage.WithMaxConcurrency(1), toolstage.WithToolMiddleware(stop)).Run(context.Background(), threeCalls())
	if !errors.Is(err, toolstage.ErrStopRun) {
		t.Fatalf("Run() error = %v, want ErrStopRun", err)
	}
	if b.Interrupt != nil {
		t.Errorf("Interrupt = %+v, want none: the batch ended", b.Interrupt)
	}
	if got := ids(b.Outcomes); !slices.Equal(got, []string{"call_1", "call_2", "call_3"}) {
		t.Fatalf("outcomes %q, want all three", got)
	}
	if !errors.Is(b.Outcomes[0].Err, toolstage.ErrStopRun) || !errors.Is(b.Outcomes[1].Err, toolstage.ErrCallNotStarted) || !errors.Is(b.Outcomes[2].Err, toolstage.ErrCallNotStarted) {
		t.Errorf("outcomes = %+v, want the stop, then two calls not started", b.Outcomes)
	}
	if got := k.ran(); got != [3]int32{0, 0, 0} {
		t.Errorf("runs (balance, payment, rate) = %v, want none", got)
	}
}
