package httpguard

import (
	"encoding/json"
	"testing"

	"github.com/toolguard/toolguard/validation"
)

// The converted schema means what the Gemini schema means: each case
// lists arguments Gemini's schema admits and arguments it refuses, and the
// JSON Schema validator must agree on every one.
func TestGeminiSchemaMeaning(t *testing.T) {
	tests := []struct {
		name   string
		schema string
		ok, no []string
	}{
		{"upper-case types", `{"type":"OBJECT","properties":{"city":{"type":"STRING"},"days":{"type":"INTEGER"},"hot":{"type":"BOOLEAN"},"t":{"type":"NUMBER"}},"required":["city"]}`,
			[]string{`{"city":"Paris"}`, `{"city":"Paris","days":3,"hot":true,"t":1.5}`},
			[]string{`{}`, `{"city":1}`, `{"city":"P","days":1.5}`, `{"city":"P","hot":"yes"}`, `{"city":null}`}},
		{"nullable", `{"type":"OBJECT","properties":{"note":{"type":"STRING","nullable":true}}}`,
			[]string{`{"note":null}`, `{"note":"x"}`, `{}`},
			[]string{`{"note":1}`}},
		{"not nullable", `{"type":"OBJECT","properties":{"note":{"type":"STRING","nullable":false}}}`,
			[]string{`{"note":"x"}`},
			[]string{`{"note":null}`}},
		{"enum with format enum", `{"type":"OBJECT","properties":{"unit":{"type":"STRING","format":"enum","enum":["C","F"]}}}`,
			[]string{`{"unit":"C"}`},
			[]string{`{"unit":"K"}`}},
		{"nullable enum", `{"type":"OBJECT","properties":{"unit":{"type":"STRING","enum":["C","F"],"nullable":true}}}`,
			[]string{`{"unit":"F"}`, `{"unit":null}`},
			[]string{`{"unit":"K"}`}},
		{"array items and int64 counts as strings", `{"type":"OBJECT","properties":{"tags":{"type":"ARRAY","items":{"type":"STRING"},"minItems":"1","maxItems":"2"}}}`,
			[]string{`{"tags":["a"]}`, `{"tags":["a","b"]}`},
			[]string{`{"tags":[]}`, `{"tags":["a","b","c"]}`, `{"tags":[1]}`}},
		{"string bounds and pattern", `{"type":"OBJECT","properties":{"code":{"type":"STRING","minLength":2,"maxLength":"3","pattern":"^[A-Z]+$"}}}`,
			[]string{`{"code":"AB"}`},
			[]string{`{"code":"A"}`, `{"code":"ABCD"}`, `{"code":"ab"}`}},
		{"numeric bounds, int64 format dropped", `{"type":"OBJECT","properties":{"n":{"type":"INTEGER","format":"int64","minimum":1,"maximum":10}}}`,
			[]string{`{"n":1}`, `{"n":10}`},
			[]string{`{"n":0}`, `{"n":11}`}},
		{"date-time format kept", `{"type":"OBJECT","properties":{"at":{"type":"STRING","format":"date-time"}}}`,
			[]string{`{"at":"2026-01-01T00:00:00Z"}`},
			[]string{`{"at":"tomorrow"}`}},
		{"anyOf nested", `{"type":"OBJECT","properties":{"v":{"anyOf":[{"type":"STRING"},{"type":"OBJECT","properties":{"x":{"type":"INTEGER"}},"required":["x"]}]}}}`,
			[]string{`{"v":"s"}`, `{"v":{"x":1}}`},
			[]string{`{"v":1}`, `{"v":{}}`}},
		{"object property counts", `{"type":"OBJECT","minProperties":"1","propertyOrdering":["a"],"properties":{"a":{"type":"STRING","example":"x"}}}`,
			[]string{`{"a":"y"}`},
			[]string{`{}`}},
		{"unspecified type", `{"type":"OBJECT","properties":{"v":{"type":"TYPE_UNSPECIFIED"}}}`, []string{`{"v":1}`, `{"v":"x"}`, `{"v":null}`}, nil},
		{"Type numbers (proto JSON, enum-encoding=int)", `{"type":6,"properties":{"city":{"type":1},"days":{"type":3},"t":{"type":2},"hot":{"type":4},"tags":{"type":5,"items":{"type":1}},"note":{"type":1,"nullable":true},"v":{"type":0}},"required":["city"]}`,
			[]string{`{"city":"Paris","days":3,"t":1.5,"hot":true,"tags":["a"],"note":null,"v":{}}`},
			[]string{`{}`, `{"city":1}`, `{"city":"P","days":1.5}`, `{"city":"P","hot":"yes"}`, `{"city":"P","tags":[1]}`, `{"city":null}`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			js, err := geminiSchemaToJSONSchema(json.RawMessage(tc.schema))
			if err != nil {
				t.Fatal(err)
			}
			s, err := validation.Compile(js)
			if err != nil {
				t.Fatalf("Compile(%s): %v", js, err)
			}
			for _, a := range tc.ok {
				if err := s.ValidateJSON([]byte(a)); err != nil {
					t.Errorf("%s refuses %s, which Gemini's schema admits: %v", js, a, err)
				}
			}
			for _, a := range tc.no {
				if err := s.ValidateJSON([]byte(a)); err == nil {
					t.Errorf("%s admits %s, which Gemini's schema refuses", js, a)
				}
			}
		})
	}
}

func TestGeminiSchemaRefusesNonsense(t *testing.T) {
	for _, s := range []string{`[]`, `{"type":"TUPLE"}`, `{"type":8}`, `{"type":-1}`, `{"type":1.5}`, `{"type":true}`, `{"properties":[]}`, `{"items":"x"}`, `{"maxItems":"many"}`, `{"anyOf":{}}`, `not json`} {
		if _, err := geminiSchemaToJSONSchema(json.RawMessage(s)); err == nil {
			t.Errorf("geminiSchemaToJSONSchema(%s) = nil error", s)
		}
	}
}

// A Gemini request's OpenAPI-subset parameters become the tool's JSON
// Schema; parametersJsonSchema is taken as it is.
func TestGeminiToolSchemas(t *testing.T) {
	body := `{"contents":[],"tools":[{"functionDeclarations":[` +
		`{"name":"a","parameters":{"type":"OBJECT","properties":{"x":{"type":"STRING","nullable":true}}}},` +
		`{"name":"b","parametersJsonSchema":{"type":"object","properties":{"y":{"type":"integer"}}}},` +
		`{"name":"c"}]},{"function_declarations":[{"name":"d","parameters_json_schema":{"type":"object"}}]}]}`
	r, err := geminiWire{}.parseRequest("/v1beta/models/m:generateContent", []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Tools) != 4 || r.Model != "m" || r.Stream {
		t.Fatalf("tools = %+v", r)
	}
	if want := `{"properties":{"x":{"type":["string","null"]}},"type":"object"}`; string(r.Tools[0].Schema) != want {
		t.Errorf("a: %s, want %s", r.Tools[0].Schema, want)
	}
	if string(r.Tools[1].Schema) != `{"type":"object","properties":{"y":{"type":"integer"}}}` || r.Tools[2].Schema != nil || string(r.Tools[3].Schema) != `{"type":"object"}` {
		t.Errorf("tools = %+v", r.Tools)
	}
}
