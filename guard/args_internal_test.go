package guard

import (
	"slices"
	"testing"

	"github.com/toolguard/toolguard/repair"
	"github.com/toolguard/toolguard/strip"
	"github.com/toolguard/toolguard/validation"
)

const schemaJSON = `{"type": "object",
	"properties": {"city": {"type": "string"}, "days": {"type": "integer"}, "tags": {"type": "array"}, "note": {"type": ["string", "null"]}},
	"required": ["city"]}`

func TestCheck(t *testing.T) {
	t.Parallel()
	s, err := validation.Compile(schemaJSON)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name         string
		schema       *validation.Schema
		raw          string
		opts         ArgsOptions
		wantArgs     string
		wantChanged  bool
		wantStripped []string
		wantRepairs  []string
		wantErr      []string // violation paths
	}{
		{name: "valid untouched", schema: s, raw: `{"city": "Paris", "tags": []}`, wantArgs: `{"city": "Paris", "tags": []}`},
		{name: "empty means {} but is invalid here", schema: s, raw: ``, wantArgs: `{}`, wantChanged: true, wantErr: []string{"/city"}},
		{name: "empty is written back as {} (no schema)", raw: ``, wantArgs: `{}`, wantChanged: true},
		{name: "blank is written back as {}", schema: validation.Typed[struct{}](), raw: " \n", wantArgs: `{}`, wantChanged: true},
		{name: "not JSON is left as it is", raw: `nope`, wantArgs: `nope`, wantErr: []string{""}},
		{name: "schema-aware strip of an optional null", schema: s, raw: `{"city": "Paris", "days": null}`,
			wantArgs: `{"city":"Paris"}`, wantChanged: true, wantStripped: []string{"/days"}},
		{name: "nullable null stays", schema: s, raw: `{"city": "Paris", "note": null, "days": null}`,
			wantArgs: `{"city":"Paris","note":null}`, wantChanged: true, wantStripped: []string{"/days"}},
		{name: "stripped but still invalid is written back", schema: s, raw: `{"city": 1, "days": null}`,
			wantArgs: `{"city":1}`, wantChanged: true, wantStripped: []string{"/days"}, wantErr: []string{"/city"}},
		{name: "strip off", schema: s, raw: `{"city": "Paris", "days": null}`, opts: ArgsOptions{Strip: strip.Off},
			wantArgs: `{"city": "Paris", "days": null}`, wantErr: []string{"/days"}},
		{name: "recursive strips valid calls too", schema: s, raw: `{"city": "Paris", "tags": [], "note": null}`, opts: ArgsOptions{Strip: strip.Recursive},
			wantArgs: `{"city":"Paris"}`, wantChanged: true, wantStripped: []string{"/note", "/tags"}},
		{name: "not JSON is never stripped", schema: s, raw: `{"city": "Paris", "days": null`, wantArgs: `{"city": "Paris", "days": null`, wantErr: []string{""}},
		{name: "repair a number string", schema: s, raw: `{"city": "Paris", "days": "3"}`, opts: ArgsOptions{Repair: repair.Default()},
			wantArgs: `{"city":"Paris","days":3}`, wantChanged: true, wantRepairs: []string{"number_string at /days"}},
		{name: "repair then strip", schema: s, raw: "```json\n{\"city\": \"Paris\", \"days\": null}\n```", opts: ArgsOptions{Repair: repair.Default()},
			wantArgs: `{"city":"Paris"}`, wantChanged: true, wantStripped: []string{"/days"}, wantRepairs: []string{"code_fence"}},
		{name: "a repair that does not validate is not used", schema: s, raw: "```json\n{\"city\": 1}\n```", opts: ArgsOptions{Repair: repair.Default()},
			wantArgs: "```json\n{\"city\": 1}\n```", wantErr: []string{""}},
		{name: "an injected value is not coerced", schema: s, raw: `{"city": "Paris", "days": "3"}`,
			opts: ArgsOptions{Repair: repair.Coercions(), Injected: []string{"days"}}, wantArgs: `{"city": "Paris", "days": "3"}`, wantErr: []string{"/days"}},
		{name: "an injected array is not decoded", schema: s, raw: `{"city": "Paris", "tags": "['a']"}`,
			opts: ArgsOptions{Repair: repair.Coercions(), Injected: []string{"tags"}}, wantArgs: `{"city": "Paris", "tags": "['a']"}`, wantErr: []string{"/tags"}},
		{name: "the model's values beside valid injected ones are", schema: s, raw: `{"city": "Paris", "days": "3", "tags": ["a"]}`,
			opts: ArgsOptions{Repair: repair.Coercions(), Injected: []string{"tags", "note"}}, wantArgs: `{"city":"Paris","days":3,"tags":["a"]}`,
			wantChanged: true, wantRepairs: []string{"number_string at /days"}},
		{name: "injected values cannot be compared in text that is not an object", schema: s, raw: `"{\"city\": \"Paris\", \"days\": 3}"`,
			opts: ArgsOptions{Repair: repair.Coercions(), Injected: []string{"days"}}, wantArgs: `"{\"city\": \"Paris\", \"days\": 3}"`, wantErr: []string{""}},
		{name: "nil schema: any object", raw: `{"x": null}`, wantArgs: `{"x": null}`},
		{name: "nil schema: still an object", raw: `[1]`, wantArgs: `[1]`, wantErr: []string{""}},
		{name: "nil schema, recursive", raw: `{"x": null, "y": 1}`, opts: ArgsOptions{Strip: strip.Recursive},
			wantArgs: `{"y":1}`, wantChanged: true, wantStripped: []string{"/x"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := CheckArgs(tc.schema, []byte(tc.raw), tc.opts)
			if string(res.Args) != tc.wantArgs || res.Changed != tc.wantChanged {
				t.Errorf("Args = %s (changed %v), want %s (changed %v)", res.Args, res.Changed, tc.wantArgs, tc.wantChanged)
			}
			if !slices.Equal(res.Stripped, tc.wantStripped) {
				t.Errorf("Stripped = %q, want %q", res.Stripped, tc.wantStripped)
			}
			var reps []string
			for _, r := range res.Repairs {
				reps = append(reps, r.String())
			}
			if !slices.Equal(reps, tc.wantRepairs) {
				t.Errorf("Repairs = %q, want %q", reps, tc.wantRepairs)
			}
			var paths []string
			if res.Err != nil {
				for _, v := range res.Err.Violations {
					paths = append(paths, v.Path)
				}
			}
			if !slices.Equal(paths, tc.wantErr) {
				t.Errorf("Err = %v, want violations at %q", res.Err, tc.wantErr)
			}
			if res.Err == nil && res.Value == nil {
				t.Errorf("Value = nil for valid arguments")
			}
		})
	}
}

// A call with more violations than an Error lists is not stripped: its
// violations cannot be compared.
func TestCheckLeavesIncompleteViolationsAlone(t *testing.T) {
	t.Parallel()
	s, err := validation.Compile(`{"type": "object", "additionalProperties": {"type": "string"}}`)
	if err != nil {
		t.Fatal(err)
	}
	raw := []byte(`{`)
	for i := range 1500 {
		if i > 0 {
			raw = append(raw, ',')
		}
		raw = append(raw, []byte(`"k`+string(rune('a'+i%26))+string(rune('a'+i/26%26))+string(rune('a'+i/676))+`": null`)...)
	}
	raw = append(raw, '}')
	res := CheckArgs(s, raw, ArgsOptions{})
	if res.Err == nil || res.Err.Omitted == 0 || res.Changed || len(res.Stripped) > 0 {
		t.Errorf("Check = changed %v, stripped %d, err omitted %v; want untouched with an incomplete error", res.Changed, len(res.Stripped), res.Err)
	}
}
