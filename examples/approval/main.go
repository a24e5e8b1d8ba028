// Command approval shows a run that pauses for a person: the model asks to
// transfer money, the agent stops before the transfer runs, a reviewer at
// the terminal sees the validated arguments and the tool's schema and
// decides — accept, edit the arguments, reject with a reason, or respond in
// the tool's place — and the run resumes and finishes.
//
// The pause is plain data: the interrupt is marshalled to JSON (as it would
// be sent to a reviewer's screen), signed with the application's key, and
// resumed by a second Agent value (as another replica would) from a
// checkpointer. It runs offline on a scripted fake model.
//
//	go run ./examples/approval
//
// It reads one decision per line from stdin:
//
//	accept
//	edit {"to": "ACME Ltd", "amount": 120}
//	reject wrong payee
//	respond The transfer was already made by phone.
//
// With stdin closed or not answering (end of input, as in CI), it rejects
// the transfer: nothing is sent without a person's yes.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"strings"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/agent"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/fakemodel"
	"github.com/toolguard/toolguard/toolstage"
	"github.com/toolguard/toolguard/validation"
)

// TransferArgs are the arguments of transfer_money.
type TransferArgs struct {
	To     string  `json:"to" jsonschema:"the payee"`
	Amount float64 `json:"amount" jsonschema:"in euros, more than 0"`
	Memo   string  `json:"memo,omitempty" jsonschema:"shown on the payee's statement"`
}

// Validate refuses a transfer of nothing.
func (a TransferArgs) Validate() error {
	if a.Amount <= 0 {
		return validation.FieldError("/amount", "must be more than 0")
	}
	return nil
}

// defaultDecision is taken when stdin ends before a decision.
const defaultDecision = "reject no reviewer answered (stdin closed); nothing was sent"

func main() {
	if err := run(context.Background(), os.Stdout, os.Stdin, scriptedModel()); err != nil {
		log.Fatal(err)
	}
}

// scriptedModel checks the balance and asks for a transfer (with a null
// memo, which the validation strips), then reports what the tool said.
func scriptedModel() *fakemodel.Model {
	return fakemodel.New(
		fakemodel.ToolCalls(
			fakemodel.Call("get_balance", `{}`),
			fakemodel.Call("transfer_money", `{"to": "ACME Ltd", "amount": 1200, "memo": null}`),
		),
		fakemodel.Func(func(_ context.Context, msgs []llms.MessageContent, _ llms.CallOptions) (*llms.ContentResponse, error) {
			last := msgs[len(msgs)-1].Parts[0].(llms.ToolCallResponse).Content
			return &llms.ContentResponse{Choices: []*llms.ContentChoice{{Content: "Transfer: " + last}}}, nil
		}),
	)
}

func run(ctx context.Context, out io.Writer, in io.Reader, model llms.Model) error {
	transfers := 0
	tools := []toolstage.Tool{
		toolstage.NewSchemaTool("get_balance", "The account's balance.", nil,
			func(context.Context, map[string]any) (string, error) {
				fmt.Fprintln(out, "  [bank] get_balance runs (it needs no approval)")
				return "balance: 5000.00 EUR", nil
			}),
		toolstage.NewTool("transfer_money", "Send money from the account.",
			func(_ context.Context, a TransferArgs) (string, error) {
				transfers++
				fmt.Fprintf(out, "  [bank] transfer_money runs: %.2f EUR to %s\n", a.Amount, a.To)
				return fmt.Sprintf("sent %.2f EUR to %s", a.Amount, a.To), nil
			}),
	}
	// Both "replicas" share the key and the checkpointer (Redis in
	// production: redisstore.NewCheckpointer).
	key := []byte("example-key-from-your-secret-store")
	store := new(toolstage.MemoryCheckpointer)
	replica := func() *agent.Agent {
		return agent.New(model, toolstage.New(tools, toolstage.WithApprovalFor("transfer_money"), toolstage.WithInterruptKey(key)), agent.WithMiddleware(middleware.ToolArgValidation()), agent.WithCheckpointer(store))
	}
	ctx = guard.WithThread(ctx, "customer-7")

	const ask = "Pay ACME Ltd's invoice of 1200 EUR."
	fmt.Fprintln(out, "user:", ask)
	_, err := replica().Run(ctx, ask)
	var interrupt *toolstage.Interrupt
	if !errors.As(err, &interrupt) {
		return fmt.Errorf("the run did not pause for approval: %v", err)
	}
	wire, err := json.Marshal(interrupt) // to the reviewer's screen and back
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "run paused: %d call(s) await a decision (interrupt: %d bytes of JSON, signed)\n", len(interrupt.Pending), len(wire))

	var back toolstage.Interrupt
	if err := json.Unmarshal(wire, &back); err != nil {
		return err
	}
	lines := bufio.NewScanner(in)
	other := replica() // another replica resumes it
	for {
		var decisions []toolstage.Decision
		for _, p := range back.Pending {
			show(out, p)
			decisions = append(decisions, readDecision(out, lines, p))
		}
		res, err := other.Resume(ctx, &back, decisions...)
		if errors.Is(err, toolstage.ErrDecisionRefused) {
			fmt.Fprintf(out, "decision refused, nothing ran: %v\n", err)
			continue // the interrupt stays usable: ask again
		}
		if err != nil {
			return err
		}
		fmt.Fprintln(out, "assistant:", res.Output)
		fmt.Fprintf(out, "transfer_money ran %d time(s).\n", transfers)
		return nil
	}
}

// show prints a pending call: its validated arguments and its schema.
func show(out io.Writer, p toolstage.PendingCall) {
	schema, _ := json.Marshal(p.Schema)
	fmt.Fprintf(out, "%s (call %s) wants to run with these validated arguments:\n  %s\n", p.Tool, p.ID, p.Args)
	fmt.Fprintf(out, "its schema:\n  %s\n", schema)
}

// readDecision reads a decision on p; at the end of input, the default.
func readDecision(out io.Writer, lines *bufio.Scanner, p toolstage.PendingCall) toolstage.Decision {
	for {
		fmt.Fprint(out, "decision [accept | edit {json} | reject <reason> | respond <result>]: ")
		line := defaultDecision
		if lines.Scan() {
			line = strings.TrimSpace(lines.Text())
			fmt.Fprintln(out, line) // echo, so a scripted transcript reads as typed
		} else {
			fmt.Fprintf(out, "(end of input) %s\n", line)
		}
		verb, rest, _ := strings.Cut(line, " ")
		rest = strings.TrimSpace(rest)
		d := toolstage.Decision{CallID: p.ID, Digest: p.Digest}
		switch verb {
		case "accept":
			d.Action = toolstage.Accept
		case "edit":
			d.Action, d.Args = toolstage.Edit, json.RawMessage(rest)
		case "reject":
			d.Action, d.Message = toolstage.Reject, rest
		case "respond":
			d.Action, d.Message = toolstage.Respond, rest
		default:
			fmt.Fprintf(out, "unknown decision %q\n", verb)
			continue
		}
		return d
	}
}
