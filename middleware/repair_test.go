package middleware_test

import (
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/internal/safetext"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/fakemodel"
	"github.com/toolguard/toolguard/repair"
)

// WithRepair's own behaviour is tested in package guard, over a test codec;
// here, langchaingo's shape of it: repaired arguments written back into the
// legacy FuncCall too, and a rejected call whose arguments are not a JSON
// object replayed as {} (the providers would refuse them), the model's own
// text in the feedback instead.
func TestWithRepairLangchaingoShapes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		sent  string
		opts  []guard.ValidationOption
		calls int    // model calls
		want  string // returned arguments
	}{
		{name: "code fence", sent: "```json\n{\"city\": \"Paris\"}\n```", opts: []guard.ValidationOption{guard.WithRepair(repair.Default())},
			calls: 1, want: `{"city":"Paris"}`},
		{name: "python literal, then strip", sent: `{'city': 'Paris', 'units': None}`, opts: []guard.ValidationOption{guard.WithRepair(repair.Default())},
			calls: 1, want: `{"city":"Paris"}`},
		{name: "number string coerced by default", sent: `{"city": "Paris", "days": "3"}`, calls: 1, want: `{"city":"Paris","days":3}`},
		{name: "repaired but still invalid", sent: `{'city': 42}`, opts: []guard.ValidationOption{guard.WithRepair(repair.Default())},
			calls: 2, want: `{"city": "Rome"}`},
		{name: "text repairs off by default", sent: "```json\n{\"city\": \"Paris\"}\n```", calls: 2, want: `{"city": "Rome"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := fakemodel.New(
				fakemodel.ToolCalls(fakemodel.Call("get_weather", tc.sent)),
				fakemodel.ToolCalls(fakemodel.Call("get_weather", `{"city": "Rome"}`)),
			)
			resp, err := run(t, m, []llms.Tool{weatherTool}, middleware.ToolArgValidation(tc.opts...))
			if err != nil {
				t.Fatal(err)
			}
			if n := len(m.Requests()); n != tc.calls {
				t.Errorf("model calls = %d, want %d", n, tc.calls)
			}
			if got := args(resp, 0); got != tc.want {
				t.Errorf("arguments = %s, want %s", got, tc.want)
			}
			if fc := resp.Choices[0].FuncCall; fc == nil || fc.Arguments != args(resp, 0) {
				t.Errorf("legacy FuncCall = %v, want it to mirror the written-back arguments", fc)
			}
			if tc.calls == 2 {
				msgs := m.Requests()[1].Messages[len(question):]
				replayed := msgs[0].Parts[0].(llms.ToolCall).FunctionCall.Arguments
				feedback := msgs[1].Parts[0].(llms.ToolCallResponse).Content
				if replayed != "{}" || !strings.Contains(feedback, "got "+safetext.Quote(tc.sent, 1000)) {
					t.Errorf("replayed %s with feedback %q; want {} and the model's own text in the feedback", replayed, feedback)
				}
			}
		})
	}
}
