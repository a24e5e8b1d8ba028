package repair_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/repair"
	"github.com/toolguard/toolguard/validation"
)

var schema = mustCompile(`{
	"type": "object",
	"properties": {
		"city":  {"type": "string"},
		"days":  {"type": "integer"},
		"temp":  {"type": "number"},
		"ok":    {"type": "boolean"},
		"code":  {"type": "string"},
		"maybe": {"type": ["integer", "null"]},
		"ids":   {"type": "array", "items": {"type": "integer"}},
		"units": {"type": "string", "enum": ["celsius", "fahrenheit"]},
		"tags":  {"type": "array", "items": {"type": "string"}, "maxItems": 3},
		"where": {"type": "object", "properties": {"lat": {"type": "number"}}, "required": ["lat"]},
		"pair":  {"type": "array", "enum": [[1, 2]]}
	},
	"required": ["city"]
}`)

func mustCompile(s string) *validation.Schema {
	c, err := validation.Compile(s)
	if err != nil {
		panic(err)
	}
	return c
}

func decode(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("bad test JSON %q: %v", s, err)
	}
	return m
}

// normalize re-decodes v so json.Number and float64 compare equal.
func normalize(t *testing.T, v map[string]any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return decode(t, string(b))
}

func TestRepair(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
		repairs        []string
	}{
		{"code fence", "```json\n{\"city\": \"Paris\"}\n```", `{"city":"Paris"}`, []string{"code_fence"}},
		{"code fence without info string", "```\n{\"city\": \"Paris\"}\n```", `{"city":"Paris"}`, []string{"code_fence"}},
		{"code fence on one line", "```{\"city\": \"Paris\"}```", `{"city":"Paris"}`, []string{"code_fence"}},
		{"code fence with prose", "Here you go:\n```json\n{\"city\": \"Paris\"}\n```\nDone.", `{"city":"Paris"}`,
			[]string{"code_fence", "prose"}},
		{"prose after", "{\"city\": \"Paris\"}\n\nLet me know if you need anything else!", `{"city":"Paris"}`, []string{"prose"}},
		{"prose before", "Sure! Here's the call: {\"city\": \"Paris\"}", `{"city":"Paris"}`, []string{"prose"}},
		{"braces inside strings", "{\"city\": \"Paris {center}\"} is what I'd send", `{"city":"Paris {center}"}`, []string{"prose"}},
		{"trailing commas", `{"city": "Paris", "ids": [1, 2,],}`, `{"city":"Paris","ids":[1,2]}`, []string{"trailing_comma"}},
		{"python dict", `{'city': 'Paris', 'ok': True, 'maybe': None, 'code': 'False'}`,
			`{"city":"Paris","ok":true,"maybe":null,"code":"False"}`, []string{"python_literal"}},
		{"python quoting", `{'city': "O'Brien", 'code': 'it\'s \\ "x"'}`, `{"city":"O'Brien","code":"it's \\ \"x\""}`,
			[]string{"python_literal"}},
		{"python escapes", `{'city': 'a\x41\u00e9\n', 'code': 'C:\dir'}`, `{"city":"aAé\n","code":"C:\\dir"}`,
			[]string{"python_literal"}},
		{"python unknown escape before a non-ASCII character", `{'city': 'a\é\😀', 'code': '\\\é'}`, `{"city":"a\\é\\😀","code":"\\\\é"}`,
			[]string{"python_literal"}},
		{"python with trailing comma", `{'city': 'Paris', 'ids': [1, 2,],}`, `{"city":"Paris","ids":[1,2]}`,
			[]string{"trailing_comma", "python_literal"}},
		{"python in a fence", "```python\n{'city': 'Paris'}\n```", `{"city":"Paris"}`, []string{"code_fence", "python_literal"}},
		{"double encoded", `"{\"city\": \"Paris\", \"days\": 3}"`, `{"city":"Paris","days":3}`, []string{"double_encoded"}},
		{"number strings", `{"city": "Paris", "days": "3", "temp": "-2.5e1", "ids": ["1", 2]}`,
			`{"city":"Paris","days":3,"temp":-25,"ids":[1,2]}`,
			[]string{"number_string at /days", "number_string at /ids/0", "number_string at /temp"}},
		{"bool string", `{"city": "Paris", "ok": "true"}`, `{"city":"Paris","ok":true}`, []string{"bool_string at /ok"}},
		{"number string for a nullable integer", `{"city": "Paris", "maybe": "7"}`, `{"city":"Paris","maybe":7}`,
			[]string{"number_string at /maybe"}},
		{"text and value repairs together", `{'city': 'Paris', 'days': '3'}`, `{"city":"Paris","days":3}`,
			[]string{"python_literal", "number_string at /days"}},
		{"other violations stay", `{"city": 5, "days": "3"}`, `{"city":5,"days":3}`, []string{"number_string at /days"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, reps := repair.Default().Repair([]byte(tc.in), schema)
			if got == nil {
				t.Fatalf("Repair(%q) refused, want %s", tc.in, tc.want)
			}
			if !reflect.DeepEqual(normalize(t, got), decode(t, tc.want)) {
				b, _ := json.Marshal(got)
				t.Errorf("Repair(%q) = %s, want %s", tc.in, b, tc.want)
			}
			var names []string
			for _, r := range reps {
				names = append(names, r.String())
			}
			if !slices.Equal(names, tc.repairs) {
				t.Errorf("Repair(%q) repairs = %q, want %q", tc.in, names, tc.repairs)
			}
		})
	}
}

// TestRepairRefusesAmbiguity: input with more than one plausible reading,
// or nothing to repair, is left alone.
func TestRepairRefusesAmbiguity(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		`{"city": "Paris"}`,                                  // nothing to repair
		`{"city": "Par`,                                      // truncated
		`{city: "Paris"}`,                                    // unquoted key
		`{"city": Paris}`,                                    // unquoted string
		`{"city": "Paris"} {"city": "Rome"}`,                 // two objects
		`Use {city} like {"city": "Paris"}`,                  // braces in the prose
		"```json\n{\"a\": 1}\n```\n```json\n{\"b\": 2}\n```", // two fences
		`{"city": "Paris", // a comment
		}`,
		`{"city": "Paris",, "days": 1}`, // double comma
		`{"days": 0x10, "city": "x"}`,   // hex
		`{"days": NaN, "city": "x"}`,    // NaN
		`{"city": "line
break"}`, // raw newline in a string
		`{'city': 'Paris', 'days': true_}`,      // identifier
		"{'city': 'a\\\tb'}",                    // an escaped raw control character
		`"just a string"`,                       // double encoded, but not an object
		`[{"city": "Paris"}]`,                   // an array
		`{"city": "Paris", "days": "three"}`,    // a word is not a number
		`{"city": "Paris", "days": " 3"}`,       // nor a padded number
		`{"city": "Paris", "days": "3.5"}`,      // a number, but not an integer: the repair would not help
		`{"city": "Paris", "ok": "yes"}`,        // only true and false, in any case
		`{"city": "Paris", "code": 5}`,          // number to string is not a repair we make
		`{"city": "Paris", "units": "Celsius"}`, // nor enum case folding
	} {
		if got, reps := repair.Default().Repair([]byte(in), schema); got != nil || reps != nil {
			b, _ := json.Marshal(got)
			t.Errorf("Repair(%q) = %s, %v; want it refused", in, b, reps)
		}
	}
}

func TestOnly(t *testing.T) {
	t.Parallel()
	r := repair.Only(repair.CodeFence)
	if got, _ := r.Repair([]byte("```json\n{\"city\": \"Paris\"}\n```"), schema); got == nil {
		t.Error("Only(CodeFence) refused a fenced object")
	}
	for _, in := range []string{
		"```json\n{'city': 'Paris'}\n```",            // needs python_literal too
		"Here:\n```json\n{\"city\": \"Paris\"}\n```", // needs prose too
		`{"city": "Paris", "days": "3"}`,
	} {
		if got, reps := r.Repair([]byte(in), schema); got != nil {
			t.Errorf("Only(CodeFence).Repair(%q) = %v, %v; want refused", in, got, reps)
		}
	}
	if got, _ := repair.Only(repair.NumberString).Repair([]byte(`{"city": "x", "ok": "true", "days": "2"}`), schema); got == nil ||
		got["ok"] != "true" {
		t.Errorf("Only(NumberString) = %v, want days repaired and ok left alone", got)
	}
	for _, tc := range []struct {
		kind     repair.Kind
		in, want string // want "" for refused
	}{
		{repair.BoolAnyCase, `{"city": "x", "ok": "True"}`, `{"city": "x", "ok": true}`},
		{repair.BoolAnyCase, `{"city": "x", "ok": "true"}`, ""}, // JSON's spelling is BoolString's
		{repair.BoolString, `{"city": "x", "ok": "True"}`, ""},
		{repair.JSONString, `{"city": "x", "tags": "[\"M\"]"}`, `{"city": "x", "tags": ["M"]}`},
		{repair.JSONString, `{"city": "x", "tags": "['M']"}`, ""},
		{repair.PythonString, `{"city": "x", "tags": "['M']"}`, `{"city": "x", "tags": ["M"]}`},
		{repair.NumberString, `{"city": "x", "tags": "['M']"}`, ""},
	} {
		got, reps := repair.Only(tc.kind).Repair([]byte(tc.in), schema)
		switch {
		case tc.want == "" && got != nil:
			t.Errorf("Only(%s).Repair(%s) = %v, %v; want refused", tc.kind, tc.in, got, reps)
		case tc.want != "" && (got == nil || !reflect.DeepEqual(normalize(t, got), decode(t, tc.want)) || reps[0].Kind != tc.kind):
			t.Errorf("Only(%s).Repair(%s) = %v, %v; want %s", tc.kind, tc.in, got, reps, tc.want)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("Only(\"bogus\") did not panic")
		}
	}()
	repair.Only("bogus")
}

func TestRepairWithoutSchema(t *testing.T) {
	t.Parallel()
	got, reps := repair.Default().Repair([]byte(`{'days': '3'}`), nil)
	if got == nil || got["days"] != "3" || len(reps) != 1 || reps[0].Kind != repair.PythonLiteral {
		t.Errorf("Repair without schema = %v, %v; want only the text repaired", got, reps)
	}
}

func FuzzRepair(f *testing.F) {
	for _, s := range []string{"```json\n{\"a\": 1}\n```", `{'a': True,}`, `"{\"a\":1}"`, `{"days": "3"}`, `x {"a": [1,]} y`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, reps := repair.Default().Repair([]byte(in), schema)
		if (got == nil) != (reps == nil) {
			t.Fatalf("Repair(%q) = %v, %v: result and repairs disagree", in, got, reps)
		}
		if got != nil {
			if _, err := json.Marshal(got); err != nil {
				t.Fatalf("Repair(%q) result does not marshal: %v", in, err)
			}
		}
	})
}

func TestCoercions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    string // "" for refused
		repairs string // the repairs, when given
	}{
		{`{"city": "Paris", "days": "3"}`, `{"city": "Paris", "days": 3}`, ""},
		{`{"city": "Paris", "temp": "-2.5", "ok": "false"}`, `{"city": "Paris", "temp": -2.5, "ok": false}`, ""},
		{`{"city": "Paris", "days": "\u0033"}`, `{"city": "Paris", "days": 3}`, ""}, // an escaped digit is still "3"
		{`"{\"city\": \"Paris\"}"`, `{"city": "Paris"}`, ""},
		{"```json\n{\"city\": \"Paris\"}\n```", "", ""},            // text repairs are not coercions
		{`{"city": "Paris", "days": 3,}`, "", ""},                  // nor is a trailing comma
		{`{"city": "Paris", "units": "Celsius"}`, "", ""},          // nothing a coercion fixes
		{`{"city": "Paris", "days": "2.5"}`, "", ""},               // still not an integer
		{`{"city": 7, "days": "3"}`, `{"city": 7, "days": 3}`, ""}, // coerced; the caller then finds city invalid

		{`{"city": "Paris", "ok": "True"}`, `{"city": "Paris", "ok": true}`, "bool_any_case at /ok"},
		{`{"city": "Paris", "ok": "FALSE"}`, `{"city": "Paris", "ok": false}`, "bool_any_case at /ok"},
		{`{"city": "Paris", "ok": "tRuE"}`, `{"city": "Paris", "ok": true}`, "bool_any_case at /ok"},
		{`{"city": "Paris", "ok": "falſe"}`, "", ""},  // a long s folds to s in Unicode, not here
		{`{"city": "Paris", "ok": "yes"}`, "", ""},    // other words for a boolean are re-asked
		{`{"city": "Paris", "ok": "1"}`, "", ""},      //
		{`{"city": "Paris", "ok": " True"}`, "", ""},  //
		{`{"city": "Paris", "code": "True"}`, "", ""}, // a string is wanted: nothing to coerce

		{`{"city": "Paris", "tags": "[\"M\", \"L\"]"}`, `{"city": "Paris", "tags": ["M", "L"]}`, "json_string at /tags"},
		{`{"city": "Paris", "tags": "['M', 'L']"}`, `{"city": "Paris", "tags": ["M", "L"]}`, "python_string at /tags"},
		{`{"city": "Paris", "tags": "[\"M\", 'it\\'s']"}`, `{"city": "Paris", "tags": ["M", "it's"]}`, "python_string at /tags"},
		{`{"city": "Paris", "tags": "[]"}`, `{"city": "Paris", "tags": []}`, "json_string at /tags"},
		{`{"city": "Paris", "ids": "[1, 2]"}`, `{"city": "Paris", "ids": [1, 2]}`, "json_string at /ids"},
		{`{"city": "Paris", "where": "{\"lat\": 48.85}"}`, `{"city": "Paris", "where": {"lat": 48.85}}`, "json_string at /where"},
		{`{"city": "Paris", "where": "{'lat': 48.85}"}`, `{"city": "Paris", "where": {"lat": 48.85}}`, "python_string at /where"},
		{`{"city": "Paris", "pair": "[1, 2]"}`, `{"city": "Paris", "pair": [1, 2]}`, "json_string at /pair"},
		{`{"city": "Paris", "tags": "['M']", "days": "3", "ok": "True"}`, `{"city": "Paris", "tags": ["M"], "days": 3, "ok": true}`,
			"number_string at /days, bool_any_case at /ok, python_string at /tags"},
		{`"{\"city\": \"Paris\", \"tags\": \"['M']\"}"`, `{"city": "Paris", "tags": ["M"]}`, "double_encoded, python_string at /tags"},

		{`{"city": "Paris", "tags": "['M', 5]"}`, "", ""},                  // decoded, it still fails its subschema
		{`{"city": "Paris", "tags": "['a', 'b', 'c', 'd']"}`, "", ""},      //
		{`{"city": "Paris", "where": "{'lon': 2.35}"}`, "", ""},            //
		{`{"city": "Paris", "ids": "[\"1\"]"}`, "", ""},                    // no coercion inside a coercion
		{`{"city": "Paris", "pair": "[3]"}`, "", ""},                       // a violation stays at the path (enum)
		{`{"city": "Paris", "days": "[3]"}`, "", ""},                       // an integer is wanted
		{`{"city": "Paris", "tags": "M"}`, "", ""},                         // a single value is not wrapped
		{`{"city": "Paris", "units": "Celsius"}`, "", ""},                  // nor an enum member matched in another case
		{`{"city": "Paris", "tags": " [\"M\"]"}`, "", ""},                  // blanks around the array
		{`{"city": "Paris", "tags": "[\"M\"]\n"}`, "", ""},                 //
		{`{"city": "Paris", "tags": "['M', true]"}`, "", ""},               // neither JSON nor Python
		{`{"city": "Paris", "tags": "('M', 'L')"}`, "", ""},                // a tuple
		{`{"city": "Paris", "tags": "['M'] + ['L']"}`, "", ""},             // an expression
		{`{"city": "Paris", "where": "{\"lat\": 1, \"lat\": 2}"}`, "", ""}, // a key twice
		{`{"city": "Paris", "where": "{'lat': 1, 'lat': 2}"}`, "", ""},     //
		{`{"city": "Paris", "ids": "[1e999999]"}`, "", ""},                 // a number beyond validation's limits
		{`{"city": "Paris", "ids": "[1, 2], \"x\": [3]"}`, "", ""},         // not one JSON value
	}
	for _, tc := range tests {
		got, reps := repair.Coercions().Repair([]byte(tc.in), schema)
		if tc.want == "" {
			if got != nil || reps != nil {
				t.Errorf("Coercions().Repair(%s) = %v, %v; want refused", tc.in, got, reps)
			}
			continue
		}
		if !reflect.DeepEqual(normalize(t, got), decode(t, tc.want)) {
			t.Errorf("Coercions().Repair(%s) = %v (%v), want %s", tc.in, got, reps, tc.want)
		}
		if tc.repairs != "" {
			var names []string
			for _, r := range reps {
				names = append(names, r.String())
			}
			if got := strings.Join(names, ", "); got != tc.repairs {
				t.Errorf("Coercions().Repair(%s) repairs = %s, want %s", tc.in, got, tc.repairs)
			}
		}
	}
	if got, reps := repair.None().Repair([]byte(`{"city": "Paris", "days": "3"}`), schema); got != nil || reps != nil {
		t.Errorf("None().Repair = %v, %v; want nothing repaired", got, reps)
	}
}
