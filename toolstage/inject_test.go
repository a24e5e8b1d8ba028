package toolstage_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/toolstage"
	"github.com/toolguard/toolguard/validation"
)

// forgedValue is what a prompt-injected model sends for user_id.
const forgedValue = "u-attacker"

// An injected argument is not in the schema the model is offered (neither
// in properties nor in required); the tool gets the injected value; a
// value the model sends for it anyway is dropped before the tool runs and
// never reaches the outcome's Call, and a forged_argument event names the
// tool, the call and the path, never the value — whether the model stage
// (ToolArgValidation, told the injected names by Scope) dropped it first
// or the tool stage meets it.
func TestInjectedArguments(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		modelStage bool
		args       string
		forged     bool
	}{
		{"not sent", false, `{"item": "book"}`, false},
		{"forged, tool stage alone", false, `{"item": "book", "user_id": "` + forgedValue + `"}`, true},
		{"forged, after the model stage", true, `{"item": "book", "user_id": "` + forgedValue + `"}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var got atomic.Value
			order := toolstage.NewTool("place_order", "Orders an item.", func(_ context.Context, a orderArgs) (string, error) {
				got.Store(a.UserID)
				return "ordered " + a.Item + " for " + a.UserID, nil
			})
			var events eventLog
			stage := toolstage.New([]toolstage.Tool{order}, toolstage.Inject("user_id", signedInUser), toolstage.WithEventHandler(events.handle))

			defs := stage.Definitions()
			var params struct {
				Properties map[string]any `json:"properties"`
				Required   []string       `json:"required"`
			}
			if err := json.Unmarshal(defs[0].Parameters, &params); err != nil {
				t.Fatal(err)
			}
			if _, ok := params.Properties["user_id"]; ok || slices.Contains(params.Required, "user_id") || params.Properties["item"] == nil {
				t.Errorf("Definitions()[0].Parameters = %s, want item without user_id (in properties or required)", defs[0].Parameters)
			}
			if m, ok := defs[0].Schema().(map[string]any); !ok || strings.Contains(fmt.Sprint(m), "user_id") {
				t.Errorf("Definitions()[0].Schema() = %v, want a map without user_id", defs[0].Schema())
			}

			ctx := stage.Scope(context.Background())
			calls := []guard.Call{call("call_1", "place_order", tc.args)}
			if tc.modelStage {
				calls = modelStage(t, ctx, calls)
				if strings.Contains(string(calls[0].Args), forgedValue) {
					t.Fatalf("the model stage handed on %s, want the forged value dropped", calls[0].Args)
				}
			}
			b, err := stage.Run(ctx, calls)
			if err != nil {
				t.Fatal(err)
			}
			o := b.Outcomes[0]
			if o.Err != nil || o.Content != "ordered book for u-alice" || got.Load() != "u-alice" {
				t.Errorf("outcome = %q, %v (tool got %v); want the order for u-alice", o.Content, o.Err, got.Load())
			}
			if strings.Contains(string(o.Call.Args), "user_id") || !strings.Contains(string(o.Args), "u-alice") {
				t.Errorf("Call.Args = %s, Args = %s; want the model's without user_id, and the tool's with u-alice", o.Call.Args, o.Args)
			}
			forged := events.of(guard.EventForgedArgument)
			if !tc.forged {
				if len(forged) != 0 {
					t.Errorf("forged_argument events = %+v, want none", forged)
				}
				return
			}
			if len(forged) != 1 || forged[0].Tool != "place_order" || forged[0].CallID != "call_1" || !slices.Equal(forged[0].Paths, []string{"/user_id"}) {
				t.Errorf("forged_argument events = %+v, want one naming place_order, call_1, /user_id", forged)
			}
			for _, e := range events.all() {
				if text := fmt.Sprintf("%+v %v", e, e.LogValue()); strings.Contains(text, forgedValue) {
					t.Errorf("event %s quotes the forged value: %s", e.Kind, text)
				}
			}
		})
	}
}

// oneSchema allows a only the value 1, with a keyword of draft 6 and
// later (const) that draft 4 does not have: validated under draft 7, as
// the tool stage validates a schema without $schema, {"a": 2} fails;
// under draft 4 it passes.
var oneSchema = map[string]any{
	"type":       "object",
	"properties": map[string]any{"a": map[string]any{"type": "integer", "const": 1}},
}

// A call the model stage validated, recorded in the Scope's record with
// exactly these id, tool and argument bytes, is not validated again by
// Run; any other call is. The test makes the two stages disagree — the
// model stage validates under draft 4 (WithDefaultDraft), the tool stage
// under draft 7 — so that the tool running proves the tool stage
// did not check it again, and a refusal proves it did.
func TestScopeValidatedOnce(t *testing.T) {
	t.Parallel()
	var runs atomic.Int32
	one := toolstage.NewSchemaTool("one", "Takes a one.", oneSchema, func(context.Context, map[string]any) (string, error) {
		runs.Add(1)
		return "ok", nil
	})
	stage := toolstage.New([]toolstage.Tool{one})
	modelCall := call("call_1", "one", `{"a": 2}`)
	lenient := guard.WithDefaultDraft(validation.Draft4)

	refused := func(t *testing.T, b *toolstage.Batch) {
		t.Helper()
		var ve *validation.Error
		if o := b.Outcomes[0]; !errors.As(o.Err, &ve) {
			t.Errorf("outcome = %q, %v; want a *validation.Error: the tool stage checked the call", o.Content, o.Err)
		}
	}

	t.Run("validated by the model stage", func(t *testing.T) {
		ctx := stage.Scope(context.Background())
		calls := modelStage(t, ctx, []guard.Call{modelCall}, lenient)
		if !guard.CallRecordFrom(ctx).Validated("call_1", "one", `{"a": 2}`) {
			t.Fatal("the Scope's record does not hold call_1: ToolArgValidation did not record it")
		}
		before := runs.Load()
		b, err := stage.Run(ctx, calls)
		if err != nil || b.Outcomes[0].Err != nil || runs.Load() != before+1 {
			t.Fatalf("Run() = %+v, %v; want the tool run once, unchecked", b.Outcomes, err)
		}
		// The record holds one batch: the same call in the next batch is
		// checked.
		if guard.CallRecordFrom(ctx).Validated("call_1", "one", `{"a": 2}`) {
			t.Error("the record still holds call_1 after Run, want it forgotten")
		}
		b, err = stage.Run(ctx, calls)
		if err != nil {
			t.Fatal(err)
		}
		refused(t, b)
	})
	t.Run("not validated", func(t *testing.T) {
		before := runs.Load()
		b, err := stage.Run(stage.Scope(context.Background()), []guard.Call{modelCall})
		if err != nil {
			t.Fatal(err)
		}
		refused(t, b)
		if runs.Load() != before {
			t.Errorf("one ran %d times, want never", runs.Load()-before)
		}
	})
	t.Run("other bytes", func(t *testing.T) {
		// The same JSON value in other bytes counts as validated (a host
		// that re-encodes arguments, as genai does: guard.CallRecord); a
		// number written another way does not.
		ctx := stage.Scope(context.Background())
		modelStage(t, ctx, []guard.Call{modelCall}, lenient)
		before := runs.Load()
		b, err := stage.Run(ctx, []guard.Call{call("call_1", "one", `{"a": 2.0}`)})
		if err != nil {
			t.Fatal(err)
		}
		refused(t, b)
		if runs.Load() != before {
			t.Errorf("one ran %d times, want never", runs.Load()-before)
		}
	})
}
