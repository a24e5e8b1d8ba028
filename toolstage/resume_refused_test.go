package toolstage_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/toolstage"
)

// memoArgs are a payment's arguments with one more property: the
// payment tool's schema as a later release of the program has it.
type memoArgs struct {
	Amount int    `json:"amount"`
	To     string `json:"to,omitempty"`
	Memo   string `json:"memo,omitempty"`
}

// tampered returns a copy of in changed by change, its signature kept.
func tampered(in *toolstage.Interrupt, change func(*toolstage.Interrupt)) *toolstage.Interrupt {
	c := *in
	c.Pending = slices.Clone(in.Pending)
	c.State = slices.Clone(in.State)
	change(&c)
	return &c
}

// Bad input to Resume, each refused with a typed error before anything
// runs: decisions that do not fit the pending calls (a *DecisionError,
// ErrDecisionRefused), an interrupt that cannot be trusted or resumed here
// (ErrInterruptRefused), a context already done (its error). Each refusal
// is reported (approval_refused) but the last, nothing of the batch runs
// again, and the genuine interrupt with the right decision still resumes
// afterwards on the Stage that paused it: nothing is lost.
func TestResumeRefused(t *testing.T) {
	t.Parallel()
	emptyDigest := sha256.Sum256(nil)
	for _, tc := range []struct {
		name string
		// resume makes the bad Resume of in, which s paused on k's tools,
		// and returns its error.
		resume func(ctx context.Context, k *bank, s *toolstage.Stage, in *toolstage.Interrupt) error
		want   error
	}{
		{"a pending call without a decision", func(ctx context.Context, _ *bank, s *toolstage.Stage, in *toolstage.Interrupt) error {
			_, err := s.Resume(ctx, in)
			return err
		}, toolstage.ErrDecisionRefused},
		{"a decision for an unknown call", func(ctx context.Context, _ *bank, s *toolstage.Stage, in *toolstage.Interrupt) error {
			unknown := toolstage.Decision{CallID: "call_9", Action: toolstage.Accept, Digest: hex.EncodeToString(emptyDigest[:])}
			_, err := s.Resume(ctx, in, decide(in.Pending[0], toolstage.Accept), unknown)
			return err
		}, toolstage.ErrDecisionRefused},
		{"two decisions for one call", func(ctx context.Context, _ *bank, s *toolstage.Stage, in *toolstage.Interrupt) error {
			_, err := s.Resume(ctx, in, decide(in.Pending[0], toolstage.Accept), decide(in.Pending[0], toolstage.Reject))
			return err
		}, toolstage.ErrDecisionRefused},
		{"a digest given under another call's id", func(ctx context.Context, _ *bank, s *toolstage.Stage, in *toolstage.Interrupt) error {
			d := decide(in.Pending[0], toolstage.Accept)
			d.CallID = "call_3"
			_, err := s.Resume(ctx, in, d)
			return err
		}, toolstage.ErrDecisionRefused},
		{"an unknown action", func(ctx context.Context, _ *bank, s *toolstage.Stage, in *toolstage.Interrupt) error {
			_, err := s.Resume(ctx, in, decide(in.Pending[0], "approve"))
			return err
		}, toolstage.ErrDecisionRefused},
		{"arguments given to accept", func(ctx context.Context, _ *bank, s *toolstage.Stage, in *toolstage.Interrupt) error {
			d := decide(in.Pending[0], toolstage.Accept)
			d.Args = json.RawMessage(`{"amount": 50000, "to": "mallory"}`)
			_, err := s.Resume(ctx, in, d)
			return err
		}, toolstage.ErrDecisionRefused},
		{"an edit without arguments", func(ctx context.Context, _ *bank, s *toolstage.Stage, in *toolstage.Interrupt) error {
			_, err := s.Resume(ctx, in, decide(in.Pending[0], toolstage.Edit))
			return err
		}, toolstage.ErrDecisionRefused},
		{"an invalid edit", func(ctx context.Context, _ *bank, s *toolstage.Stage, in *toolstage.Interrupt) error {
			d := decide(in.Pending[0], toolstage.Edit)
			d.Args = json.RawMessage(`{"amount": -5, "to": 7}`)
			_, err := s.Resume(ctx, in, d)
			return err
		}, toolstage.ErrDecisionRefused},
		{"a schema changed since the pause", func(ctx context.Context, k *bank, _ *toolstage.Stage, in *toolstage.Interrupt) error {
			pay := toolstage.NewTool("transfer_money", "Pays someone.", func(context.Context, memoArgs) (string, error) {
				k.payments.Add(1)
				return "paid", nil
			})
			later := toolstage.New([]toolstage.Tool{counted("get_balance", "1000.00", &k.balances), pay, counted("get_rate", "1.08", &k.rates)},
				toolstage.WithApprovalFor("transfer_money"), toolstage.WithInterruptKey(testKey), toolstage.WithEventHandler(k.events.handle))
			_, err := later.Resume(ctx, in, decide(in.Pending[0], toolstage.Accept))
			return err
		}, toolstage.ErrDecisionRefused},
		{"an interrupt from another Stage's key", func(ctx context.Context, k *bank, _ *toolstage.Stage, in *toolstage.Interrupt) error {
			_, err := k.stage(toolstage.WithInterruptKey(otherKey)).Resume(ctx, in, decide(in.Pending[0], toolstage.Accept))
			return err
		}, toolstage.ErrInterruptRefused},
		{"tampered arguments", func(ctx context.Context, _ *bank, s *toolstage.Stage, in *toolstage.Interrupt) error {
			bad := tampered(in, func(c *toolstage.Interrupt) { c.Pending[0].Args = json.RawMessage(`{"amount":50000,"to":"mallory"}`) })
			_, err := s.Resume(ctx, bad, decide(bad.Pending[0], toolstage.Accept))
			return err
		}, toolstage.ErrInterruptRefused},
		{"a tampered state", func(ctx context.Context, _ *bank, s *toolstage.Stage, in *toolstage.Interrupt) error {
			bad := tampered(in, func(c *toolstage.Interrupt) {
				c.State = bytes.ReplaceAll(c.State, []byte("500"), []byte("50000"))
				if bytes.Equal(c.State, in.State) {
					panic("the state holds no 500 to tamper with")
				}
			})
			_, err := s.Resume(ctx, bad, decide(bad.Pending[0], toolstage.Accept))
			return err
		}, toolstage.ErrInterruptRefused},
		{"a forged signature", func(ctx context.Context, _ *bank, s *toolstage.Stage, in *toolstage.Interrupt) error {
			bad := tampered(in, func(c *toolstage.Interrupt) { c.Signature = strings.Repeat("0", len(in.Signature)) })
			_, err := s.Resume(ctx, bad, decide(bad.Pending[0], toolstage.Accept))
			return err
		}, toolstage.ErrInterruptRefused},
		{"an interrupt forged by a Stage without the key", func(ctx context.Context, k *bank, s *toolstage.Stage, _ *toolstage.Interrupt) error {
			forger := toolstage.New(k.tools(), toolstage.WithApprovalFor("transfer_money"))
			b, err := forger.Run(ctx, []guard.Call{call("call_2", "transfer_money", `{"amount": 50000, "to": "mallory"}`)})
			if err != nil || b.Interrupt == nil {
				return fmt.Errorf("the forger's Run() = %+v, %v", b, err)
			}
			_, err = s.Resume(ctx, b.Interrupt, decide(b.Interrupt.Pending[0], toolstage.Accept))
			return err
		}, toolstage.ErrInterruptRefused},
		{"another thread's context", func(ctx context.Context, _ *bank, s *toolstage.Stage, in *toolstage.Interrupt) error {
			_, err := s.Resume(guard.WithThread(ctx, "mallory"), in, decide(in.Pending[0], toolstage.Accept))
			return err
		}, toolstage.ErrInterruptRefused},
		{"no interrupt", func(ctx context.Context, _ *bank, s *toolstage.Stage, _ *toolstage.Interrupt) error {
			_, err := s.Resume(ctx, nil)
			return err
		}, toolstage.ErrInterruptRefused},
		{"a Stage without approval", func(ctx context.Context, k *bank, _ *toolstage.Stage, in *toolstage.Interrupt) error {
			plain := toolstage.New(k.tools(), toolstage.WithInterruptKey(testKey), toolstage.WithEventHandler(k.events.handle))
			_, err := plain.Resume(ctx, in, decide(in.Pending[0], toolstage.Accept))
			return err
		}, toolstage.ErrInterruptRefused},
		{"a context already done", func(ctx context.Context, _ *bank, s *toolstage.Stage, in *toolstage.Interrupt) error {
			done, cancel := context.WithCancel(ctx)
			cancel()
			_, err := s.Resume(done, in, decide(in.Pending[0], toolstage.Accept))
			return err
		}, context.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var k bank
			s := k.stage()
			ctx := context.Background()
			in := pause(t, guard.WithThread(ctx, "alice"), s)
			err := tc.resume(ctx, &k, s, in)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Resume() error = %v, want %v", err, tc.want)
			}
			t.Logf("refused: %v", err)
			var de *toolstage.DecisionError
			if errors.Is(tc.want, toolstage.ErrDecisionRefused) && !errors.As(err, &de) {
				t.Errorf("Resume() error = %T, want a *DecisionError", err)
			}
			if got := k.ran(); got != [3]int32{1, 0, 1} {
				t.Errorf("runs (balance, payment, rate) after the refusal = %v, want [1 0 1]: nothing runs", got)
			}
			if refused := k.events.of(guard.EventApprovalRefused); tc.want != context.Canceled && len(refused) == 0 {
				t.Error("no approval_refused event, want the refusal reported")
			}
			b, err := s.Resume(ctx, in, decide(in.Pending[0], toolstage.Accept))
			if err != nil {
				t.Fatalf("Resume() of the genuine interrupt afterwards: error = %v, want it still usable", err)
			}
			if got := ids(b.Outcomes); !slices.Equal(got, []string{"call_1", "call_2", "call_3"}) || k.payments.Load() != 1 {
				t.Errorf("genuine Resume() outcomes %q, payment ran %d times; want all three, the payment once", got, k.payments.Load())
			}
		})
	}
}
