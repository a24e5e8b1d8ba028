package middleware_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sync"
	"testing"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/corpus/bfcl"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/fakemodel"
	"github.com/toolguard/toolguard/strip"
	"github.com/toolguard/toolguard/validation"
)

// The tests in this file send real BFCL tool calls (corpus/bfcl: shipped,
// or the full corpus with $TOOLGUARD_CORPUS)
// through Wrap(fakemodel, ToolArgValidation()) with the default options, the
// tool offered to the model the way an application would: its schema as a
// map[string]any in llms.WithTools.
// Under -short they check every shortStride-th ground-truth call.

const shortStride = 7

type corpusTools struct {
	*bfcl.Corpus
	tools   map[string]llms.Tool          // by tool id; the same map each call, as an application keeps it
	schemas map[string]*validation.Schema // by tool id, compiled independently of the middleware
}

var (
	toolsOnce sync.Once
	toolsVal  *corpusTools
	toolsErr  error
)

func openTools(t *testing.T) *corpusTools {
	t.Helper()
	c, err := bfcl.Load()
	if err != nil {
		t.Fatal(err)
	}
	toolsOnce.Do(func() {
		ct := &corpusTools{Corpus: c, tools: map[string]llms.Tool{}, schemas: map[string]*validation.Schema{}}
		for _, tool := range c.Tools {
			var params map[string]any
			if err := json.Unmarshal(tool.Parameters, &params); err != nil {
				toolsErr = err
				return
			}
			ct.tools[tool.ID] = llms.Tool{Type: "function", Function: &llms.FunctionDefinition{
				Name: tool.Name, Description: tool.Description, Parameters: params,
			}}
			s, err := validation.Compile(tool.Parameters)
			if err != nil {
				toolsErr = err
				return
			}
			ct.schemas[tool.ID] = s
		}
		toolsVal = ct
	})
	if toolsErr != nil {
		t.Fatal(toolsErr)
	}
	return toolsVal
}

// outcome is what became of one call sent through the middleware.
type outcome struct {
	modelCalls int
	args       string // the arguments of the returned response's tool call; "" if it has none
	reasked    bool   // the second model call carried a tool message with feedback
}

// send answers the first model call with a call of tool carrying args and
// any further call with plain text, and runs the request through mw.
func send(t *testing.T, mw middleware.Middleware, tool llms.Tool, args string) outcome {
	t.Helper()
	fake := fakemodel.New(
		fakemodel.ToolCalls(fakemodel.Call(tool.Function.Name, args)),
		fakemodel.Text("re-asked"),
	)
	model := middleware.Wrap(fake, mw)
	resp, err := model.GenerateContent(context.Background(),
		[]llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "call the tool")},
		llms.WithTools([]llms.Tool{tool}))
	if err != nil {
		t.Fatalf("GenerateContent(%s %s) = %v", tool.Function.Name, args, err)
	}
	reqs := fake.Requests()
	o := outcome{modelCalls: len(reqs)}
	if len(resp.Choices) == 1 && len(resp.Choices[0].ToolCalls) == 1 {
		o.args = resp.Choices[0].ToolCalls[0].FunctionCall.Arguments
	}
	if len(reqs) > 1 {
		msgs := reqs[1].Messages
		o.reasked = len(msgs) > 0 && msgs[len(msgs)-1].Role == llms.ChatMessageTypeTool
	}
	return o
}

func sameJSON(a, b []byte) bool {
	return reflect.DeepEqual(bfcl.Decode(a), bfcl.Decode(b))
}

// TestBFCLCallsPassUntouched: every ground-truth call leaves the middleware
// after one model call with its arguments byte for byte as the model sent
// them: no false positive, nothing stripped.
func TestBFCLCallsPassUntouched(t *testing.T) {
	t.Parallel()
	c := openTools(t)
	mw := middleware.ToolArgValidation()
	calls := c.Calls
	if testing.Short() {
		calls = nil
		for i := 0; i < len(c.Calls); i += shortStride {
			calls = append(calls, c.Calls[i])
		}
	}
	passed := 0
	for _, call := range calls {
		o := send(t, mw, c.tools[call.SchemaRef], string(call.Args))
		if o.modelCalls != 1 || o.args != string(call.Args) {
			t.Errorf("call %s (%s) %s: %d model calls, arguments %s; want 1 call, arguments unchanged", call.ID, call.Tool, call.Args, o.modelCalls, o.args)
			continue
		}
		passed++
	}
	t.Logf("BFCL middleware: %d/%d ground-truth calls passed untouched after one model call", passed, len(calls))
	if passed != len(calls) || (!testing.Short() && passed != c.Want.Calls) {
		t.Errorf("%d of %d calls passed, want all %d", passed, len(calls), c.Want.Calls)
	}
}

// TestBFCLViolationsThroughMiddleware: of the 330 ground-truth violations,
// the 106 BFCL marks valid_after_strip_top_level are repaired by the default
// SchemaAware strip with exactly one model call, and the arguments written
// back validate; 3 others send an integer as a string ({"ticket_id":
// "83912"}) and are coerced by the default repair.Coercions with one model
// call; the 221 others make the middleware re-ask the model with feedback.
func TestBFCLViolationsThroughMiddleware(t *testing.T) {
	t.Parallel()
	c := openTools(t)
	mw := middleware.ToolArgValidation()
	repaired, coerced, reasked := 0, 0, 0
	for _, call := range c.Violations {
		o := send(t, mw, c.tools[call.SchemaRef], string(call.Args))
		switch {
		case call.ValidAfterStripTopLevel:
			if o.modelCalls != 1 {
				t.Errorf("violation %s %s: %d model calls, want 1 (repaired by stripping)", call.ID, call.Args, o.modelCalls)
				continue
			}
			if err := c.schemas[call.SchemaRef].ValidateJSON([]byte(o.args)); err != nil {
				t.Errorf("violation %s %s: written back as %s, which is invalid: %v", call.ID, call.Args, o.args, err)
				continue
			}
			// Only top-level empty values went: what is left is the
			// original call minus some of its top-level null/{}/[].
			got, orig := bfcl.Decode([]byte(o.args)).(map[string]any), bfcl.Decode(call.Args).(map[string]any)
			for k, v := range orig {
				if w, kept := got[k]; kept && !reflect.DeepEqual(v, w) || !kept && !strip.IsEmpty(v) {
					t.Errorf("violation %s %s: written back as %s; key %q changed", call.ID, call.Args, o.args, k)
				}
			}
			repaired++
		case o.modelCalls == 1:
			// Coerced: valid now, and what changed is a string that became
			// the number or boolean it spelled.
			if err := c.schemas[call.SchemaRef].ValidateJSON([]byte(o.args)); err != nil {
				t.Errorf("violation %s %s: written back as %s, which is invalid: %v", call.ID, call.Args, o.args, err)
				continue
			}
			got, orig := bfcl.Decode([]byte(o.args)).(map[string]any), bfcl.Decode(call.Args).(map[string]any)
			for k, v := range orig {
				if w := got[k]; !reflect.DeepEqual(v, w) {
					if str, ok := v.(string); !ok || fmt.Sprint(w) != str {
						t.Errorf("violation %s %s: written back as %s; key %q changed beyond a coercion", call.ID, call.Args, o.args, k)
					}
				}
			}
			coerced++
		default:
			if o.modelCalls != 2 || !o.reasked {
				t.Errorf("violation %s %s: %d model calls, re-asked with feedback %v; want 2, true", call.ID, call.Args, o.modelCalls, o.reasked)
				continue
			}
			reasked++
		}
	}
	t.Logf("BFCL middleware: %d violations repaired by stripping and %d coerced with one model call, %d re-asked with feedback (of %d)",
		repaired, coerced, reasked, len(c.Violations))
	const wantCoerced = 3
	if repaired != c.Want.StripRepairable || coerced != wantCoerced || reasked != c.Want.Violations-c.Want.StripRepairable-wantCoerced {
		t.Errorf("repaired %d, coerced %d, re-asked %d; want %d, %d, %d", repaired, coerced, reasked,
			c.Want.StripRepairable, wantCoerced, c.Want.Violations-c.Want.StripRepairable-wantCoerced)
	}
}

// TestBFCLEmptyOnOptionalThroughMiddleware corrupts each ground-truth call
// with an empty value (null, {} or []) on the absent optional property
// bfcl.AbsentOptional picks (the first in sorted order whose type excludes
// the empty value) and checks that the middleware strips it again with one
// model call, writing back arguments equal to the original call.
func TestBFCLEmptyOnOptionalThroughMiddleware(t *testing.T) {
	t.Parallel()
	c := openTools(t)
	tests := []struct {
		name      string
		empty     any
		jsonType  string
		corrupted [2]int // of the full corpus's 9,523 calls, of the 4,439 shipped
	}{
		{"null", nil, "null", [2]int{568, 353}},
		{"object", map[string]any{}, "object", [2]int{568, 353}},
		{"array", []any{}, "array", [2]int{448, 294}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			mw := middleware.ToolArgValidation()
			corrupted, repaired, skipped := 0, 0, 0
			for i, call := range c.Calls {
				if testing.Short() && i%shortStride != 0 {
					continue
				}
				tool := c.tools[call.SchemaRef]
				args := bfcl.Decode(call.Args).(map[string]any)
				key, _ := bfcl.AbsentOptional(tool.Function.Parameters.(map[string]any), args, tc.jsonType)
				if key == "" {
					skipped++
					continue
				}
				corrupted++
				args[key] = tc.empty
				raw, err := json.Marshal(args)
				if err != nil {
					t.Fatal(err)
				}
				o := send(t, mw, tool, string(raw))
				if o.modelCalls != 1 || !sameJSON([]byte(o.args), call.Args) {
					t.Errorf("call %s with %s at %q: %d model calls, written back as %s; want 1 call and %s",
						call.ID, tc.name, key, o.modelCalls, o.args, call.Args)
					continue
				}
				repaired++
			}
			t.Logf("BFCL middleware: %s on an absent optional key: %d calls corrupted, %d repaired with one model call, %d skipped",
				tc.name, corrupted, repaired, skipped)
			if want := c.Pick(tc.corrupted[0], tc.corrupted[1]); repaired != corrupted || (!testing.Short() && corrupted != want) {
				t.Errorf("repaired %d of %d corrupted calls, want all of %d", repaired, corrupted, want)
			}
		})
	}
}
