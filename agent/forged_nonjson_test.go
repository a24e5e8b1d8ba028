package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/toolguard/toolguard/agent"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/fakemodel"
	"github.com/toolguard/toolguard/toolstage"
)

// eventText returns every event of log as text, errors included.
func eventText(log *eventLog) string {
	log.mu.Lock()
	defer log.mu.Unlock()
	var b strings.Builder
	for _, e := range log.events {
		fmt.Fprintf(&b, "%+v", e)
		if e.Err != nil {
			b.WriteString(e.Err.Error())
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// The attack: the model forges the injected user_id inside arguments that
// are not a JSON object — truncated JSON, Python literals, an array, data
// after the object, a string — which no one can drop a key from. The call
// never runs, but the forged value stayed in Step.ModelArguments, in the
// interrupt's state and in the checkpoint, and no forged_argument was
// reported. Such arguments are now withheld from every program-side
// record and reported, and the model reads why the call failed.
func TestForgedInNonJSONArgumentsWithheld(t *testing.T) {
	t.Parallel()
	for _, args := range []string{
		`{"item": "tea", "user_id": "admin"`,
		`{'item': 'tea', 'user_id': 'admin'}`,
		`[{"item": "tea", "user_id": "admin"}]`,
		`{"item": "tea"} {"user_id": "admin"}`,
		`"user_id=admin"`,
		`{"item": "tea", "\u0075ser_id": "admin",`,
		`{"item": "tea", "USER_ID": "admin",`,
	} {
		for _, checkpointed := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s checkpointed %v", args, checkpointed), func(t *testing.T) {
				t.Parallel()
				var mu sync.Mutex
				ordered := 0
				order := toolstage.NewTool("order", "Order.", func(context.Context, OrderArgs) (string, error) {
					mu.Lock()
					ordered++
					mu.Unlock()
					return "ok", nil
				})
				var b bank
				m := fakemodel.New(
					fakemodel.ToolCalls(fakemodel.Call("order", args), fakemodel.Call("transfer_money", `{"to": "alice", "amount": 25}`)),
					fakemodel.Text("done"),
				)
				log := &eventLog{}
				cp := new(toolstage.MemoryCheckpointer)
				ctx := asUser("u-1")
				opts := []any{injectUser, toolstage.WithApprovalFor("transfer_money"), toolstage.WithEventHandler(log.handle),
					toolstage.WithInterruptKey([]byte("a secret of 16 bytes or more"))}
				if checkpointed {
					ctx = guard.WithThread(ctx, "t-1")
					opts = append(opts, agent.WithCheckpointer(cp))
				}
				a := build(m, append(b.tools(), order), opts...)
				res, err := a.Run(ctx, "tea, and pay alice")
				in := interruptOf(t, err)
				var records strings.Builder
				for _, s := range res.Steps {
					fmt.Fprintf(&records, "step %s: %q %q\n", s.Tool, s.ModelArguments, s.Arguments)
				}
				raw, _ := json.Marshal(in)
				fmt.Fprintf(&records, "interrupt: %s\n", raw)
				state, _, _ := cp.Load(context.Background(), "t-1")
				fmt.Fprintf(&records, "checkpoint: %s\n", state)

				res, err = a.Resume(ctx, viaJSON(t, in), decide(in.Pending[0], toolstage.Accept, ""))
				if err != nil {
					t.Fatalf("Resume() error = %v", err)
				}
				for _, s := range res.Steps {
					fmt.Fprintf(&records, "resumed step %s: %q %q\n", s.Tool, s.ModelArguments, s.Arguments)
				}
				msgs, _ := json.Marshal(res.Messages)
				fmt.Fprintf(&records, "transcript: %s\n", msgs)
				state, _, _ = cp.Load(context.Background(), "t-1")
				fmt.Fprintf(&records, "checkpoint after: %s\n", state)
				for i, r := range m.Requests() {
					sent, _ := json.Marshal(r.Messages)
					fmt.Fprintf(&records, "request %d: %s\n", i+1, sent)
				}
				fmt.Fprintf(&records, "events:\n%s", eventText(log))
				if n := strings.Count(records.String(), "admin"); n != 0 {
					t.Errorf("the forged value is kept %d times:\n%s", n, records.String())
				}
				e, ok := log.find(guard.EventForgedArgument)
				if !ok || e.Tool != "order" || e.CallID != "call_1" {
					t.Errorf("events %v, forged_argument %+v: want one for order call_1", log.kinds(), e)
				}
				if ordered != 0 || b.count("transfer_money") != 1 {
					t.Errorf("order ran %d times, transfer_money %d; want 0 and 1", ordered, b.count("transfer_money"))
				}
				if len(res.Steps) != 2 || res.Steps[0].Err == nil {
					t.Errorf("Steps = %+v, want the order call failed", res.Steps)
				}
			})
		}
	}
}

// The attack: duplicate keys. Arguments that repeat a key are refused —
// encoding/json keeps the last value, other parsers the first — but a tool
// with injected arguments had its arguments decoded and encoded again to
// set them (and to drop a forged value), which kept the last value
// silently: {"amount": 1, "amount": 1000} ran as a transfer of 1000. Now
// the call is refused, with or without the model stage, and the model
// reads why.
func TestDuplicateKeysRefusedForInjectedTools(t *testing.T) {
	t.Parallel()
	type PayArgs struct {
		To     string `json:"to"`
		Amount int    `json:"amount"`
		UserID string `json:"user_id" toolguard:"inject"`
	}
	for _, args := range []string{
		`{"to": "alice", "amount": 1, "amount": 1000}`,
		`{"to": "alice", "amount": 1, "amount": 1000, "user_id": "admin"}`,
		`{"to": "alice", "amount": 1, "\u0061mount": 1000}`,
	} {
		for _, stage := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s model stage %v", args, stage), func(t *testing.T) {
				t.Parallel()
				var mu sync.Mutex
				var paid []int
				pay := toolstage.NewTool("pay", "Pay.", func(_ context.Context, a PayArgs) (string, error) {
					mu.Lock()
					defer mu.Unlock()
					paid = append(paid, a.Amount)
					return "paid", nil
				})
				m := fakemodel.New(
					fakemodel.ToolCalls(fakemodel.Call("pay", args)),
					fakemodel.ToolCalls(fakemodel.Call("pay", `{"to": "alice", "amount": 1}`)),
					fakemodel.Text("done"),
				)
				opts := []any{injectUser}
				if stage {
					opts = append(opts, agent.WithMiddleware(middleware.ToolArgValidation()))
				}
				res, err := build(m, []toolstage.Tool{pay}, opts...).Run(asUser("u-1"), "pay alice 1")
				if err != nil {
					t.Fatalf("Run() error = %v", err)
				}
				if len(paid) != 1 || paid[0] != 1 {
					t.Fatalf("paid %v, want one payment of 1: the ambiguous call must not run", paid)
				}
				var told string
				if stage { // re-asked inside the model call
					sent, _ := json.Marshal(m.Requests()[1].Messages)
					told = string(sent)
				} else {
					told = strings.Join(toolMessages(res.Messages), "\n")
				}
				if !strings.Contains(told, "more than once") {
					t.Errorf("the model read %s; want that a key appears more than once", told)
				}
			})
		}
	}
}
