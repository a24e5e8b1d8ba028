package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/toolguard/toolguard/agent"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/middleware/fakemodel"
	"github.com/toolguard/toolguard/toolstage"
)

// A run pauses before transfer_money; a person edits the amount; another
// Agent value on the same checkpointer (another replica) resumes it.
func ExampleAgent_Resume() {
	llm := fakemodel.New(
		fakemodel.ToolCalls(fakemodel.Call("transfer_money", `{"to": "ACME Ltd", "amount": 1200}`)),
		fakemodel.Text("Done."),
	)
	transfer := toolstage.NewTool("transfer_money", "Send money.", func(ctx context.Context, a TransferArgs) (string, error) {
		return fmt.Sprintf("sent %.2f to %s", a.Amount, a.To), nil
	})
	store := new(toolstage.MemoryCheckpointer) // redisstore.NewCheckpointer(client) across replicas
	newAgent := func() *agent.Agent {
		stage := toolstage.New([]toolstage.Tool{transfer},
			toolstage.WithApprovalFor("transfer_money"),                        // or WithApproval(func(*ToolCall) bool)
			toolstage.WithInterruptKey([]byte("a secret of 16 bytes or more"))) // interrupts sent to clients are signed
		return agent.New(llm, stage, agent.WithCheckpointer(store))
	}
	ctx := guard.WithThread(context.Background(), "customer-7")

	_, err := newAgent().Run(ctx, "Pay ACME's invoice.")
	var in *toolstage.Interrupt
	if errors.As(err, &in) {
		p := in.Pending[0] // validated arguments, the tool's schema, a digest
		fmt.Printf("%s %s awaits a decision\n", p.Tool, p.Args)
		wire, _ := json.Marshal(in) // plain data: to the reviewer's screen and back
		var back toolstage.Interrupt
		_ = json.Unmarshal(wire, &back)
		res, err := newAgent().Resume(ctx, &back, toolstage.Decision{
			CallID: p.ID, Digest: p.Digest, // binds the decision to this call and these arguments
			Action: toolstage.Edit, Args: json.RawMessage(`{"to": "ACME Ltd", "amount": 120}`),
		})
		fmt.Println(res.Steps[0].Result, err)
	}
	// Output:
	// transfer_money {"to":"ACME Ltd","amount":1200} awaits a decision
	// sent 120.00 to ACME Ltd <nil>
}
