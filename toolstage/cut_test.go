package toolstage_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/toolguard/toolguard/errfmt"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/toolstage"
)

// cutOffRounds is how many times TestToolReturningAfterCancelIsCutOff
// plays its scene.
const cutOffRounds = 32

// errBankDown is the cause a batch's context is cancelled with.
var errBankDown = errors.New("the bank is down")

// A tool that returns because the batch's context ended — the bank call of
// a payment cut short, returning ctx.Err() or its cause wrapped — was cut
// off: whether the payment went through is unknown. Its outcome is
// ErrCallInterrupted, as a call still running when the context ended is,
// never a failure the model would read as "Error: context canceled".
//
// The order is forced, without sleeping: Run is busy with a sibling's
// failure (lookup_fee's error, whose Error Run calls to write the model's
// text, cancels the context and waits for the payment's tool stage to
// return) when the context ends and the payment returns, so it then finds
// the context's end ready, and the payment's result ready or about to be.
// Go's select picks either at random; each round sets the scene again, so
// that the result is picked first in some round but with a chance of
// 2^-32.
func TestToolReturningAfterCancelIsCutOff(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// bankErr is what the payment's tool returns once ctx ended.
		bankErr func(ctx context.Context) error
	}{
		{"ctx.Err", func(ctx context.Context) error { return fmt.Errorf("bank: %w", ctx.Err()) }},
		{"context.Cause", func(ctx context.Context) error { return fmt.Errorf("bank: %w", context.Cause(ctx)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for round := range cutOffRounds {
				if !cutOffRound(t, round, tc.bankErr) {
					return
				}
			}
		})
	}
}

// cutOffRound plays one round of TestToolReturningAfterCancelIsCutOff, the
// payment returning bankErr(ctx); it reports whether the round passed.
func cutOffRound(t *testing.T, round int, bankErr func(context.Context) error) bool {
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	var payments atomic.Int32
	returned := make(chan struct{}) // the payment's tool stage returned
	pay := toolstage.NewSchemaTool("transfer_money", "Pay.", nil, func(ctx context.Context, _ map[string]any) (string, error) {
		payments.Add(1)
		<-ctx.Done() // the bank's reply never comes
		return "", bankErr(ctx)
	})
	fee := toolstage.NewSchemaTool("lookup_fee", "Fee.", nil, func(context.Context, map[string]any) (string, error) {
		return "", &onFirstText{msg: "fee table unreachable", do: func() { cancel(errBankDown); <-returned }}
	})
	signal := toolstage.ToolFunc(func(next toolstage.ToolHandler) toolstage.ToolHandler {
		return func(ctx context.Context, c *toolstage.ToolCall) (*toolstage.ToolResult, error) {
			res, err := next(ctx, c)
			if c.Name == "transfer_money" {
				close(returned)
			}
			return res, err
		}
	})
	stage := toolstage.New([]toolstage.Tool{pay, fee}, toolstage.WithToolMiddleware(signal))
	b, err := stage.Run(ctx, []guard.Call{call("call_1", "transfer_money", `{}`), call("call_2", "lookup_fee", `{}`)})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("round %d: Run() error = %v, want context.Canceled", round, err)
		return false
	}
	ok := true
	if len(b.Outcomes) != 2 {
		t.Errorf("round %d: outcomes = %+v, want 2", round, b.Outcomes)
		return false
	}
	if o := b.Outcomes[0]; !errors.Is(o.Err, toolstage.ErrCallInterrupted) || o.Content != errfmt.CallInterrupted || errors.Is(o.Err, context.Canceled) {
		t.Errorf("round %d: the payment's outcome = %q, %v; want ErrCallInterrupted (outcome unknown), never a failure", round, o.Content, o.Err)
		ok = false
	}
	if o := b.Outcomes[1]; o.Err == nil || o.Content != "Error: fee table unreachable" {
		t.Errorf("round %d: lookup_fee's outcome = %q, %v; want its failure", round, o.Content, o.Err)
		ok = false
	}
	if payments.Load() != 1 {
		t.Errorf("round %d: transfer_money ran %d times, want 1", round, payments.Load())
		ok = false
	}
	return ok
}

// onFirstText is an error that calls do the first time its text is read.
type onFirstText struct {
	msg  string
	once sync.Once
	do   func()
}

func (e *onFirstText) Error() string {
	e.once.Do(e.do)
	return e.msg
}

// A tool's own cancellation while the batch goes on (a request the tool
// gave up on itself) is a failure like any: the model reads the error.
// Only the batch's context ending cuts a call off.
func TestToolsOwnCancellationIsAFailure(t *testing.T) {
	t.Parallel()
	lookup := toolstage.NewSchemaTool("lookup_fee", "Fee.", nil, func(context.Context, map[string]any) (string, error) {
		return "", fmt.Errorf("fee service: %w", context.Canceled)
	})
	b, err := toolstage.New([]toolstage.Tool{lookup}).Run(context.Background(), []guard.Call{call("call_1", "lookup_fee", `{}`)})
	if err != nil {
		t.Fatalf("Run() error = %v, want nil", err)
	}
	o := b.Outcomes[0]
	if !errors.Is(o.Err, context.Canceled) || errors.Is(o.Err, toolstage.ErrCallInterrupted) || o.Content != "Error: fee service: context canceled" {
		t.Errorf("outcome = %q, %v; want lookup_fee failed with its own context.Canceled", o.Content, o.Err)
	}
}
