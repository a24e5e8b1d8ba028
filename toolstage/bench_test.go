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
// stage validated: ToolArgValidation, run outside the timer for each
// iteration (the record holds one batch), records it in the Scope's
// record, so Run skips the check.
func BenchmarkStageRunValidated(b *testing.B) {
	stage, calls := benchStage(b)
	scope := stage.Scope(context.Background())
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		accepted := modelStage(b, scope, calls)
		b.StartTimer()
		batch, err := stage.Run(scope, accepted)
		if err != nil || batch.Outcomes[0].Err != nil {
			b.Fatal(err, batch.Outcomes[0].Err)
		}
	}
}
