package guard

import (
	"context"
	"testing"
)

// A call is held as validated only with its own tool and the arguments
// validated: the same bytes, or the same JSON value with numbers as
// written (a host that decoded them into a map and encoded them again);
// never a number written otherwise, a name given twice, another tool or
// another id. A call without an id (Gemini's) is found by tool and
// arguments.
func TestCallRecordValidated(t *testing.T) {
	t.Parallel()
	const validated = `{"to": "bob", "amount_eur": 500, "memo": "caf\u00e9"}`
	tests := []struct {
		name, id, tool, args string
		want                 bool
	}{
		{"same bytes", "call_1", "transfer_money", validated, true},
		{"re-encoded from a map", "call_1", "transfer_money", `{"amount_eur":500,"memo":"café","to":"bob"}`, true},
		{"a number written otherwise", "call_1", "transfer_money", `{"amount_eur":500.0,"memo":"café","to":"bob"}`, false},
		{"another value", "call_1", "transfer_money", `{"amount_eur":5000,"memo":"café","to":"bob"}`, false},
		{"a name twice", "call_1", "transfer_money", `{"amount_eur":500,"memo":"café","to":"bob","to":"mallory"}`, false},
		{"not JSON", "call_1", "transfer_money", `{"amount_eur":500,`, false},
		{"another tool", "call_1", "get_balance", validated, false},
		{"another id", "call_2", "transfer_money", validated, false},
		{"no id, same arguments", "", "transfer_money", `{"to":"bob","amount_eur":500,"memo":"café"}`, true},
		{"no id, another value", "", "transfer_money", `{"to":"bob","amount_eur":501,"memo":"café"}`, false},
		{"no id, another tool", "", "get_weather", validated, false},
	}
	ctx, record := WithCallRecord(context.Background())
	recordValidated(ctx, "call_1", "transfer_money", validated)
	recordValidated(ctx, "", "transfer_money", validated)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := record.Validated(tc.id, tc.tool, tc.args); got != tc.want {
				t.Errorf("Validated(%q, %q, %s) = %v, want %v", tc.id, tc.tool, tc.args, got, tc.want)
			}
		})
	}
}

// Forget drops the calls without an id too: a record holds one turn.
func TestCallRecordForgetIDless(t *testing.T) {
	t.Parallel()
	ctx, record := WithCallRecord(context.Background())
	recordValidated(ctx, "", "get_weather", `{"city":"Paris"}`)
	record.Forget()
	if record.Validated("", "get_weather", `{"city":"Paris"}`) {
		t.Error("Validated after Forget = true, want false")
	}
}
