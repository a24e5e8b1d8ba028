package guard_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/internal/safetext"
	"github.com/toolguard/toolguard/repair"
	"github.com/toolguard/toolguard/strip"
)

func TestWithRepair(t *testing.T) {
	t.Parallel()
	const fixed = `{"city":"Paris"}`
	tests := []struct {
		name     string
		sent     string
		opts     []guard.ValidationOption
		calls    int      // model calls
		want     string   // returned arguments
		repaired []string // Paths of EventRepaired; nil: no such event
		stripped []string // Paths of EventStripped; nil: no such event
	}{
		{name: "code fence", sent: "```json\n{\"city\": \"Paris\"}\n```", calls: 1, want: fixed,
			repaired: []string{"code_fence"}},
		{name: "python literal, then strip", sent: `{'city': 'Paris', 'units': None}`, calls: 1, want: fixed,
			repaired: []string{"python_literal"}, stripped: []string{"/units"}},
		{name: "number string", sent: `{"city": "Paris", "days": "3"}`, calls: 1, want: `{"city":"Paris","days":3}`,
			repaired: []string{"number_string at /days"}},
		{name: "double encoded", sent: `"{\"city\": \"Paris\"}"`, calls: 1, want: fixed,
			repaired: []string{"double_encoded"}},
		{name: "repaired but still invalid: the model is asked", sent: `{'city': 42}`, calls: 2, want: `{"city": "Rome"}`},
		{name: "valid calls are not touched", sent: `{"city": "Paris", "units": "celsius"}`, calls: 1,
			want: `{"city": "Paris", "units": "celsius"}`},
		{name: "text repairs off by default", sent: "```json\n{\"city\": \"Paris\"}\n```", opts: []guard.ValidationOption{}, calls: 2,
			want: `{"city": "Rome"}`},
		{name: "number string coerced by default", sent: `{"city": "Paris", "days": "3"}`, opts: []guard.ValidationOption{},
			calls: 1, want: `{"city":"Paris","days":3}`, repaired: []string{"number_string at /days"}},
		{name: "double encoded decoded by default", sent: `"{\"city\": \"Paris\"}"`, opts: []guard.ValidationOption{},
			calls: 1, want: fixed, repaired: []string{"double_encoded"}},
		{name: "coerced and stripped by default", sent: `{"city": "Paris", "days": "3", "units": null}`, opts: []guard.ValidationOption{},
			calls: 1, want: `{"city":"Paris","days":3}`, repaired: []string{"number_string at /days"}, stripped: []string{"/units"}},
		{name: "a coercion that breaks another keyword is not made", sent: `{"city": "Paris", "days": "0"}`, opts: []guard.ValidationOption{},
			calls: 2, want: `{"city": "Rome"}`},
		{name: "a number for a string is never coerced", sent: `{"city": 75001}`, opts: []guard.ValidationOption{},
			calls: 2, want: `{"city": "Rome"}`},
		{name: "a Python list sent as a string decoded by default", sent: `{"city": "Paris", "tags": "['sun', 'wind']"}`,
			opts: []guard.ValidationOption{}, calls: 1, want: `{"city":"Paris","tags":["sun","wind"]}`,
			repaired: []string{"python_string at /tags"}},
		{name: "a JSON array sent as a string decoded by default", sent: `{"city": "Paris", "tags": "[\"sun\"]"}`,
			opts: []guard.ValidationOption{}, calls: 1, want: `{"city":"Paris","tags":["sun"]}`,
			repaired: []string{"json_string at /tags"}},
		{name: "a list whose items fail is not decoded", sent: `{"city": "Paris", "tags": "['sun', 3]"}`, opts: []guard.ValidationOption{},
			calls: 2, want: `{"city": "Rome"}`},
		{name: "a single value is never wrapped into a list", sent: `{"city": "Paris", "tags": "sun"}`, opts: []guard.ValidationOption{},
			calls: 2, want: `{"city": "Rome"}`},
		{name: "an enum member in another case is never folded", sent: `{"city": "Paris", "units": "Celsius"}`, opts: []guard.ValidationOption{},
			calls: 2, want: `{"city": "Rome"}`},
		{name: "repair.None turns them off", sent: `{"city": "Paris", "tags": "['sun']"}`, calls: 2, want: `{"city": "Rome"}`,
			opts: []guard.ValidationOption{guard.WithRepair(repair.None())}},
		{name: "repair.None turns coercions off", sent: `{"city": "Paris", "days": "3"}`, calls: 2, want: `{"city": "Rome"}`,
			opts: []guard.ValidationOption{guard.WithRepair(repair.None())}},
		{name: "only the kinds asked for", sent: `{"city": "Paris", "days": "3"}`, calls: 2, want: `{"city": "Rome"}`,
			opts: []guard.ValidationOption{guard.WithRepair(repair.Only(repair.CodeFence))}},
		{name: "with strip off, an empty value stays and fails", sent: `{'city': 'Paris', 'units': None}`, calls: 2,
			want: `{"city": "Rome"}`,
			opts: []guard.ValidationOption{guard.WithRepair(repair.Default()), guard.WithStripEmpty(strip.Off)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := newScript(
				callsStep(call("get_weather", tc.sent)),
				callsStep(call("get_weather", `{"city": "Rome"}`)),
			)
			var rec recorder
			opts := tc.opts
			if opts == nil {
				opts = []guard.ValidationOption{guard.WithRepair(repair.Default())}
			}
			opts = append(opts, guard.WithEventHandler(rec.handle))
			resp, err := wrap(m, toolArgValidation(opts...))(context.Background(), question(weatherTool))
			if err != nil {
				t.Fatal(err)
			}
			if n := len(m.requests()); n != tc.calls {
				t.Errorf("model calls = %d, want %d", n, tc.calls)
			}
			if got := string(resp.Calls[0].Args); got != tc.want {
				t.Errorf("arguments = %s, want %s", got, tc.want)
			}
			e, ok := rec.find(guard.EventRepaired)
			if ok != (tc.repaired != nil) || !slices.Equal(e.Paths, tc.repaired) {
				t.Errorf("EventRepaired = %v (found %v), want paths %q", e.Paths, ok, tc.repaired)
			}
			if ok && (e.Tool != "get_weather" || e.CallID != "call_1" || e.Attempt != 1) {
				t.Errorf("EventRepaired = %+v, want tool, call id and attempt 1", e)
			}
			e, ok = rec.find(guard.EventStripped)
			if ok != (tc.stripped != nil) || !slices.Equal(e.Paths, tc.stripped) {
				t.Errorf("EventStripped = %v (found %v), want paths %q", e.Paths, ok, tc.stripped)
			}
			if tc.calls == 2 {
				// The model's own arguments come back in the replayed call
				// (the codec is given no others: package middleware's
				// replays {} for those that are not a JSON object), and
				// those that are not JSON in the feedback too.
				msgs := m.requests()[1].Msgs[len(question().Msgs):]
				replayed := string(msgs[0].Calls[0].Args)
				feedback := msgs[1].Text
				if replayed != tc.sent {
					t.Errorf("replayed arguments = %s, want the model's own %s", replayed, tc.sent)
				}
				if !json.Valid([]byte(tc.sent)) && !strings.Contains(feedback, "got "+safetext.Quote(tc.sent, 1000)) {
					t.Errorf("feedback %q; want the model's own text in it", feedback)
				}
			}
		})
	}
}

func TestWithClosedObjects(t *testing.T) {
	t.Parallel()
	open := guard.Tool{Name: "get_weather", Schema: map[string]any{
		"type":       "object",
		"properties": map[string]any{"city": map[string]any{"type": "string"}},
		"required":   []any{"city"},
	}}
	const sent = `{"city": "Paris", "verbose": true}`
	tests := []struct {
		name  string
		opts  []guard.ValidationOption
		calls int
	}{
		{"open by default: the invented key passes", nil, 1},
		{"closed: the invented key is re-asked", []guard.ValidationOption{guard.WithClosedObjects()}, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := newScript(
				callsStep(call("get_weather", sent)),
				callsStep(call("get_weather", `{"city": "Paris"}`)),
			)
			var rec recorder
			resp, err := wrap(m, toolArgValidation(append(tc.opts, guard.WithEventHandler(rec.handle))...))(context.Background(), question(open))
			if err != nil {
				t.Fatal(err)
			}
			if n := len(m.requests()); n != tc.calls {
				t.Fatalf("model calls = %d, want %d", n, tc.calls)
			}
			if tc.calls == 1 {
				return
			}
			if got := string(resp.Calls[0].Args); got != `{"city": "Paris"}` {
				t.Errorf("arguments = %s, want the corrected call", got)
			}
			e, ok := rec.find(guard.EventInvalid)
			if !ok || !strings.Contains(e.Feedback, "/verbose") {
				t.Errorf("EventInvalid = %+v (found %v), want feedback naming /verbose", e, ok)
			}
		})
	}
}
