package toolstage_test

import (
	"context"
	"testing"

	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/toolstage"
)

// drinkPreferences and changeDrinkArgs are the arguments of a BFCL tool
// (live_multiple ChaDri.change_drink) as a typed tool's struct, as in
// agent's BenchmarkRun.
type drinkPreferences struct {
	Size                string `json:"size,omitempty"`
	Temperature         string `json:"temperature,omitempty"`
	SweetnessLevel      string `json:"sweetness_level,omitempty"`
	MilkType            string `json:"milk_type,omitempty"`
	SpecialInstructions string `json:"special_instructions,omitempty"`
}

type changeDrinkArgs struct {
	DrinkID        string           `json:"drink_id"`
	NewPreferences drinkPreferences `json:"new_preferences"`
}

const changeDrinkCall = `{"drink_id": "latte", "new_preferences": {"size": "large", "milk_type": "coconut", "sweetness_level": "extra", "temperature": "hot", "special_instructions": "served boiling hot"}}`

// benchStage returns a Stage of one typed tool, change_drink, and its one
// valid call.
func benchStage(b *testing.B) (*toolstage.Stage, []guard.Call) {
	b.Helper()
	tool := toolstage.NewTool("change_drink", "Change the preferences of a drink order.",
		func(_ context.Context, a changeDrinkArgs) (string, error) { return "changed " + a.DrinkID, nil })
	return toolstage.New([]toolstage.Tool{tool}), []guard.Call{call("call_1", "change_drink", changeDrinkCall)}
}

// BenchmarkStageRun measures Stage.Run of one valid call of a typed tool,
// with no approval and no tool middleware: the tool stage checks the
// arguments itself (nothing recorded them as validated), decodes them
// into the tool's type and runs it.
func BenchmarkStageRun(b *testing.B) {
	stage, calls := benchStage(b)
	ctx := stage.Scope(context.Background())
	b.ReportAllocs()
	for b.Loop() {
		batch, err := stage.Run(ctx, calls)
		if err != nil || batch.Outcomes[0].Err != nil {
			b.Fatal(err, batch.Outcomes[0].Err)
		}
	}
}

// BenchmarkStageRunValidated is BenchmarkStageRun for a call the model
// stage validated: ToolArgValidation has recorded it in the Scope's
// record, so Run skips the check. A record holds one batch (Run forgets
// it), so each iteration has a Scope of its own, all made before the
// timer starts: stopping the timer in the loop would cost more than Run.
func BenchmarkStageRunValidated(b *testing.B) {
	stage, calls := benchStage(b)
	scopes := make([]context.Context, b.N)
	accepted := make([][]guard.Call, b.N)
	for i := range scopes {
		scopes[i] = stage.Scope(context.Background())
		accepted[i] = modelStage(b, scopes[i], calls)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		batch, err := stage.Run(scopes[i], accepted[i])
		if err != nil || batch.Outcomes[0].Err != nil {
			b.Fatal(err, batch.Outcomes[0].Err)
		}
	}
}
