package agent_test

import (
	"context"
	"fmt"

	"github.com/toolguard/toolguard/agent"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/fakemodel"
	"github.com/toolguard/toolguard/toolstage"
	"github.com/toolguard/toolguard/validation"
)

// Ticket is the structured answer of ExampleWithOutputSchema.
type Ticket struct {
	Team     string `json:"team" jsonschema:"billing, tech or sales"`
	Priority int    `json:"priority" jsonschema:"1 (urgent) to 3"`
}

// The run's answer is a call of the answer tool, validated like tool
// arguments: the first answer in text is asked again, the second is
// re-asked by ToolArgValidation (priority sent as a word), the third
// ends the run.
func ExampleWithOutputSchema() {
	llm := fakemodel.New(
		fakemodel.Text("Billing should handle this."),
		fakemodel.ToolCalls(fakemodel.Call(agent.OutputToolName, `{"team": "billing", "priority": "urgent"}`)),
		fakemodel.ToolCalls(fakemodel.Call(agent.OutputToolName, `{"team": "billing", "priority": 1}`)),
	)
	a := agent.New(llm, toolstage.New(nil), agent.WithOutputSchema(validation.Typed[Ticket]()), agent.WithMiddleware(middleware.ToolArgValidation()))
	res, err := a.Run(context.Background(), "Route: I was charged twice!")
	if err != nil {
		fmt.Println(err) // errors.Is(err, agent.ErrNoOutput): no valid answer; never a text in its place
		return
	}
	ticket, err := agent.Output[Ticket](res)
	fmt.Printf("%+v %v %s\n", ticket, err, res.Output)
	fmt.Println("model calls:", res.ModelCalls)
	// Output:
	// {Team:billing Priority:1} <nil> {"team":"billing","priority":1}
	// model calls: 3
}
