package main

import (
	"context"
	"strings"
	"testing"
)

// TestApproval runs the example with each decision typed on stdin, and
// with stdin at its end, and checks what the reviewer sees and how the run
// ends.
func TestApproval(t *testing.T) {
	t.Parallel()
	shown := []string{
		`user: Pay ACME Ltd's invoice of 1200 EUR.`,
		`[bank] get_balance runs (it needs no approval)`,
		`run paused: 1 call(s) await a decision`,
		`transfer_money (call call_2) wants to run with these validated arguments:`,
		`  {"amount":1200,"to":"ACME Ltd"}`,
		`its schema:`,
		`"required":["to","amount"]`,
	}
	for _, tc := range []struct {
		name, stdin string
		want        []string
		transfers   string
	}{
		{"accept", "accept\n", []string{
			`[bank] transfer_money runs: 1200.00 EUR to ACME Ltd`,
			`assistant: Transfer: sent 1200.00 EUR to ACME Ltd`}, "transfer_money ran 1 time(s)."},
		{"edit", `edit {"to": "ACME Ltd", "amount": 120}` + "\n", []string{
			`[bank] transfer_money runs: 120.00 EUR to ACME Ltd`,
			`assistant: Transfer: sent 120.00 EUR to ACME Ltd`}, "transfer_money ran 1 time(s)."},
		{"reject", "reject wrong payee, the invoice is from ACME GmbH\n", []string{
			`assistant: Transfer: wrong payee, the invoice is from ACME GmbH`}, "transfer_money ran 0 time(s)."},
		{"respond", "respond The invoice was already paid by phone.\n", []string{
			`assistant: Transfer: The invoice was already paid by phone.`}, "transfer_money ran 0 time(s)."},
		{"end of input", "", []string{
			`(end of input) reject no reviewer answered (stdin closed); nothing was sent`,
			`assistant: Transfer: no reviewer answered (stdin closed); nothing was sent`}, "transfer_money ran 0 time(s)."},
		{"invalid edit, then accept", "maybe\nedit {\"to\": \"ACME Ltd\", \"amount\": -5}\naccept\n", []string{
			`unknown decision "maybe"`,
			`decision refused, nothing ran`,
			`/amount: must be more than 0`,
			`transfer_money (call call_2) wants to run`,
			`[bank] transfer_money runs: 1200.00 EUR to ACME Ltd`}, "transfer_money ran 1 time(s)."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out strings.Builder
			if err := run(context.Background(), &out, strings.NewReader(tc.stdin), scriptedModel()); err != nil {
				t.Fatal(err)
			}
			got := out.String()
			at := 0
			for _, w := range append(append(append([]string(nil), shown...), tc.want...), tc.transfers) {
				i := strings.Index(got[at:], w)
				if i < 0 {
					t.Fatalf("output lacks %q (in order):\n%s", w, got)
				}
				at += i + len(w)
			}
		})
	}
}
