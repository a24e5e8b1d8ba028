package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/toolguard/toolguard/agent"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/middleware/fakemodel"
	"github.com/toolguard/toolguard/toolstage"
)

// rawTool is a tool with a raw JSON Schema (as an MCP server gives one) that
// records the exact argument text it runs with.
type rawTool struct {
	name   string
	schema json.RawMessage
	mu     sync.Mutex
	ran    []string
}

func (t *rawTool) Name() string        { return t.name }
func (t *rawTool) Description() string { return "A tool with a raw schema." }
func (t *rawTool) Schema() any         { return t.schema }

func (t *rawTool) Call(_ context.Context, args string) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.ran = append(t.ran, args)
	return "paid", nil
}

func (t *rawTool) runs() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.ran...)
}

// numbersOf decodes a JSON object keeping its numbers as written.
func numbersOf(t *testing.T, args string) map[string]any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader([]byte(args)))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("the tool's arguments %s are not a JSON object: %v", args, err)
	}
	return m
}

// The fault: the package doc's own round trip ("Approval") — json.Marshal to the reviewer's
// screen, json.Unmarshal back — rewrites the numbers of a raw schema held
// in the interrupt (0.0, 1e6, 0.50, integers beyond 2^53 read as doubles),
// and json.Marshal escapes "<" and "&" in the arguments, so the signature
// and the digests no longer verified: the approval could never be applied.
// Signed over a canonical form, they verify, and the tool gets exactly the
// approved numbers, digit for digit.
func TestApprovalSignatureSurvivesJSONRoundTrip(t *testing.T) {
	t.Parallel()
	const schema = `{"type": "object", "properties": {
		"amount": {"type": "number", "minimum": 0.0, "maximum": 1e6, "multipleOf": 0.50},
		"cap": {"type": "number", "maximum": 1e6},
		"floor": {"type": "number", "minimum": 0.0},
		"ref": {"type": "integer", "maximum": 9007199254740993},
		"note": {"type": "string", "default": "a<b & c"}},
		"required": ["amount"]}`
	const args = `{"amount": 0.50, "cap": 1e6, "floor": 0.0, "ref": 9007199254740993, "note": "a<b & c"}`
	want := map[string]string{"amount": "0.50", "cap": "1e6", "floor": "0.0", "ref": "9007199254740993"}
	for _, tc := range []struct {
		name   string
		thread bool
	}{{"state in the interrupt", false}, {"state in the checkpointer", true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pay := &rawTool{name: "pay", schema: json.RawMessage(schema)}
			model := fakemodel.New(fakemodel.ToolCalls(fakemodel.Call("pay", args)), fakemodel.Text("Paid."))
			ctx := context.Background()
			opts := []any{toolstage.WithApprovalFor("pay"), toolstage.WithInterruptKey([]byte("a secret of 16 bytes or more"))}
			if tc.thread {
				ctx = guard.WithThread(ctx, "t-1")
				opts = append(opts, agent.WithCheckpointer(new(toolstage.MemoryCheckpointer)))
			}
			a := build(model, []toolstage.Tool{pay}, opts...)
			_, err := a.Run(ctx, "pay")
			in := viaJSON(t, interruptOf(t, err))
			if _, err := a.Resume(ctx, in, decide(in.Pending[0], toolstage.Accept, "")); err != nil {
				t.Fatalf("Resume(the interrupt after json.Marshal and json.Unmarshal) error = %v", err)
			}
			runs := pay.runs()
			if len(runs) != 1 {
				t.Fatalf("pay ran %d times, want once", len(runs))
			}
			got := numbersOf(t, runs[0])
			for k, w := range want {
				if n, ok := got[k].(json.Number); !ok || string(n) != w {
					t.Errorf("the tool got %s = %v, want %s exactly (arguments %s)", k, got[k], w, runs[0])
				}
			}
			if got["note"] != "a<b & c" {
				t.Errorf("the tool got note = %v, want %q", got["note"], "a<b & c")
			}
		})
	}
}

// A signature over the canonical form still binds the interrupt: changing
// a pending call's arguments, or the state's, after the round trip is
// refused, and so is a number the canonical form rounds: the digest binds
// the arguments digit for digit.
func TestApprovalCanonicalSignatureStillBinds(t *testing.T) {
	t.Parallel()
	pay := &rawTool{name: "pay", schema: json.RawMessage(`{"type": "object", "properties": {"ref": {"type": "integer"}}}`)}
	model := fakemodel.New(fakemodel.ToolCalls(fakemodel.Call("pay", `{"ref": 9007199254740993}`)), fakemodel.Text("Paid."))
	a := agent.New(model, toolstage.New([]toolstage.Tool{pay}, toolstage.WithApprovalFor("pay"), toolstage.WithInterruptKey([]byte("a secret of 16 bytes or more"))))
	_, err := a.Run(context.Background(), "pay")
	in := interruptOf(t, err)
	for _, tamper := range []struct{ name, from, to string }{
		{"pending arguments", `"args":{"ref":9007199254740993}`, `"args":{"ref":9007199254740995}`},
		{"the state's pending arguments, one double away", `"args":{"ref":9007199254740993},"schema"`, `"args":{"ref":9007199254740992},"schema"`},
	} {
		raw, _ := json.Marshal(in)
		changed := bytes.Replace(raw, []byte(tamper.from), []byte(tamper.to), -1)
		if bytes.Equal(changed, raw) {
			t.Fatalf("%s: the interrupt has no %s: %s", tamper.name, tamper.from, raw)
		}
		var forged toolstage.Interrupt
		if err := json.Unmarshal(changed, &forged); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Resume(context.Background(), &forged, decide(forged.Pending[0], toolstage.Accept, "")); err == nil {
			t.Errorf("%s changed: Resume() error = nil, want a refusal", tamper.name)
		}
	}
	if runs := pay.runs(); len(runs) != 0 {
		t.Fatalf("pay ran %q with changed arguments", runs)
	}
	if _, err := a.Resume(context.Background(), viaJSON(t, in), decide(in.Pending[0], toolstage.Accept, "")); err != nil {
		t.Fatalf("Resume(the untouched interrupt) error = %v", err)
	}
	if runs := pay.runs(); len(runs) != 1 || string(numbersOf(t, runs[0])["ref"].(json.Number)) != "9007199254740993" {
		t.Errorf("pay ran %q, want once with ref 9007199254740993", runs)
	}
}
