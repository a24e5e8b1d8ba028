package validation_test

import (
	"strings"
	"testing"

	"github.com/toolguard/toolguard/validation"
)

func TestWithClosedObjects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, schema, args string
		wantInvalid        bool
	}{
		{"top level closed", `{"type":"object","properties":{"a":{"type":"string"}}}`, `{"a":"x","b":1}`, true},
		{"declared keys pass", `{"type":"object","properties":{"a":{"type":"string"}}}`, `{"a":"x"}`, false},
		{"no type, properties", `{"properties":{"a":{}}}`, `{"b":1}`, true},
		{"nested object closed", `{"type":"object","properties":{"p":{"type":"object","properties":{"x":{}}}}}`, `{"p":{"x":1,"y":2}}`, true},
		{"array items closed", `{"type":"object","properties":{"l":{"type":"array","items":{"type":"object","properties":{"x":{}}}}}}`, `{"l":[{"x":1,"y":2}]}`, true},
		{"anyOf alternatives closed", `{"type":"object","properties":{"p":{"anyOf":[{"type":"object","properties":{"x":{}}},{"type":"null"}]}}}`, `{"p":{"y":1}}`, true},
		{"defs closed", `{"type":"object","properties":{"p":{"$ref":"#/$defs/P"}},"$defs":{"P":{"type":"object","properties":{"x":{}}}}}`, `{"p":{"y":1}}`, true},
		{"free-form object stays open", `{"type":"object","properties":{"kw":{"type":"object"}}}`, `{"kw":{"any":1}}`, false},
		{"explicit additionalProperties kept", `{"type":"object","properties":{"a":{}},"additionalProperties":{"type":"integer"}}`, `{"b":1}`, false},
		{"patternProperties stays open", `{"type":"object","properties":{"a":{}},"patternProperties":{"^x":{}}}`, `{"b":1}`, false},
		{"required names an undeclared key", `{"type":"object","properties":{"a":{}},"required":["b"]}`, `{"b":1,"c":2}`, false},
		{"allOf branches stay open", `{"allOf":[{"type":"object","properties":{"a":{}}},{"type":"object","properties":{"b":{}}}]}`, `{"a":1,"b":2}`, false},
		{"properties beside anyOf stay open", `{"type":"object","properties":{"kind":{}},"anyOf":[{"properties":{"x":{}}},{"properties":{"y":{}}}]}`, `{"kind":1,"x":2}`, false},
		{"not left alone", `{"type":"object","properties":{"a":{}},"not":{"type":"object","properties":{"a":{"const":1}}}}`, `{"a":2}`, false},
		{"if/then left alone", `{"type":"object","properties":{"a":{},"b":{}},"if":{"properties":{"a":{"const":1}}},"then":{"required":["b"]}}`, `{"a":1,"b":2}`, false},
		{"defs beside allOf stay open", `{"allOf":[{"$ref":"#/$defs/P"},{"properties":{"y":{}}}],"$defs":{"P":{"type":"object","properties":{"x":{}}}}}`, `{"x":1,"y":2}`, false},
		{"no properties: tool without parameters", `{"type":"object","properties":{}}`, `{"a":1}`, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := validation.Compile(tc.schema, validation.WithClosedObjects())
			if err != nil {
				t.Fatal(err)
			}
			if err := s.ValidateJSON([]byte(tc.args)); (err != nil) != tc.wantInvalid {
				t.Errorf("ValidateJSON(%s) against %s closed = %v, want invalid %v", tc.args, tc.schema, err, tc.wantInvalid)
			}
			open, err := validation.Compile(tc.schema)
			if err != nil {
				t.Fatal(err)
			}
			if err := open.ValidateJSON([]byte(tc.args)); err != nil && !tc.wantInvalid {
				t.Errorf("ValidateJSON(%s) against %s open = %v, want valid", tc.args, tc.schema, err)
			}
		})
	}
}

func TestWithClosedObjectsMarshalsClosed(t *testing.T) {
	t.Parallel()
	s, err := validation.Compile(`{"type":"object","properties":{"n":{"type":"number","maximum":1e400}}}`, validation.WithClosedObjects())
	if err != nil {
		t.Fatal(err)
	}
	got := s.String()
	if !strings.Contains(got, `"additionalProperties":false`) || !strings.Contains(got, `1e400`) {
		t.Errorf("closed schema = %s, want additionalProperties false and the number kept exactly", got)
	}
}

// TestClosedObjectsBFCL compiles every BFCL tool schema with
// WithClosedObjects and counts the ground-truth calls it would reject. It is
// not zero: BFCL's multi-turn "composite" category hands the model API docs
// that leave out parameters the functions accept (book_flight's travel_cost,
// send_message's sender_id), and four other answers use a parameter their
// schema does not list. So closed objects are unsafe for a schema that does
// not list every parameter its tool accepts; package guard's doc ("Closed objects") says so.
func TestClosedObjectsBFCL(t *testing.T) {
	c := openCorpus(t)
	closed := make(map[string]*validation.Schema, len(c.Tools))
	changed := 0
	for _, tool := range c.Tools {
		s, err := validation.Compile(tool.Parameters, validation.WithClosedObjects())
		if err != nil {
			if c.errs[tool.ID] == nil {
				t.Errorf("tool %s: compiles open but not closed: %v", tool.ID, err)
			}
			continue
		}
		closed[tool.ID] = s
		if open := c.schemas[tool.ID]; open != nil && open.String() != s.String() {
			changed++
		}
	}
	rejected, composite := 0, 0
	for _, call := range c.Calls {
		s := closed[call.SchemaRef]
		if s == nil {
			continue
		}
		verr, _ := s.ValidateJSON(call.Args).(*validation.Error)
		if verr == nil {
			continue
		}
		rejected++
		if strings.HasPrefix(call.Category, "multi_turn_composite") {
			composite++
		}
		if open := c.schemas[call.SchemaRef]; open.ValidateJSON(call.Args) != nil {
			t.Errorf("call %s: invalid even open", call.ID)
		}
		for _, v := range verr.Violations {
			if v.Keyword != "additionalProperties" {
				t.Errorf("call %s: closing added a %s violation at %q: %s", call.ID, v.Keyword, v.Path, v.Message)
			}
		}
	}
	t.Logf("WithClosedObjects: %d of %d schemas closed; %d of %d ground-truth calls rejected, %d of them multi_turn_composite",
		changed, len(c.Tools), rejected, len(c.Calls), composite)
	if want := c.Pick(86, 85); rejected != want {
		t.Errorf("ground-truth calls rejected by closed schemas = %d, want %d", rejected, want)
	}
	if want := rejected - 4; composite != want {
		t.Errorf("of them in multi_turn_composite = %d, want %d (all but 4)", composite, want)
	}
}
