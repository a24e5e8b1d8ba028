package validation_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	gjs "github.com/google/jsonschema-go/jsonschema"
	"github.com/toolguard/toolguard/validation"
)

type Unit string

func (Unit) JSONSchema() *gjs.Schema {
	return &gjs.Schema{Type: "string", Enum: []any{"celsius", "fahrenheit"}}
}

type Days int

func (*Days) JSONSchema() *gjs.Schema { // pointer receiver works too
	lo, hi := 1.0, 14.0
	return &gjs.Schema{Type: "integer", Minimum: &lo, Maximum: &hi}
}

type Place struct {
	City    string `json:"city" jsonschema:"the city name"`
	Country string `json:"country,omitempty"`
}

type weatherArgs struct {
	Place  Place    `json:"place"`
	Units  Unit     `json:"units,omitempty"`
	Days   *Days    `json:"days,omitempty"`
	Tags   []string `json:"tags,omitzero"`
	Ignore string   `json:"-"`
}

func TestTypedSchemaShape(t *testing.T) {
	t.Parallel()
	got := validation.Typed[weatherArgs]().String()
	want := `{"type":"object",` +
		`"properties":{"place":{"type":"object","properties":{"city":{"type":"string","description":"the city name"},"country":{"type":"string"}},"required":["city"],"additionalProperties":false},` +
		`"units":{"type":"string","enum":["celsius","fahrenheit"]},` +
		`"days":{"type":"integer","minimum":1,"maximum":14},` +
		`"tags":{"type":"array","items":{"type":"string"}}},` +
		`"required":["place"],"additionalProperties":false}`
	if got != want {
		t.Errorf("Typed[weatherArgs]() =\n%s\nwant\n%s", got, want)
	}
	for _, banned := range []string{`"$ref"`, `"$defs"`, `["null"`, `"null"]`} {
		if strings.Contains(got, banned) {
			t.Errorf("typed schema contains %s; providers want inlined single-type schemas", banned)
		}
	}
}

func TestTypedValidates(t *testing.T) {
	t.Parallel()
	s := validation.Typed[weatherArgs]()
	if err := s.ValidateJSON([]byte(`{"place": {"city": "Paris"}, "units": "celsius", "days": 3, "tags": ["x"]}`)); err != nil {
		t.Errorf("valid arguments rejected: %v", err)
	}
	got := violations(t, s, `{"place": {"country": 1}, "units": "kelvin", "days": 30, "extra": true}`)
	var lines []string
	for _, v := range got {
		lines = append(lines, v.String())
	}
	want := []string{
		`/days: expected a number <= 14, got 30`,
		`/extra: unexpected property; allowed properties: "days", "place", "tags", "units", got true`,
		`/place/city: missing required property (string)`,
		`/place/country: expected string, got 1`,
		`/units: expected one of "celsius", "fahrenheit", got "kelvin"`,
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("violations:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}

func TestTypedIsCachedPerType(t *testing.T) {
	t.Parallel()
	first, second := validation.Typed[weatherArgs](), validation.Typed[weatherArgs]()
	if first != second {
		t.Errorf("Typed returned two schemas for one type")
	}
	if validation.Typed[Place]() == validation.Typed[weatherArgs]() {
		t.Errorf("Typed returned one schema for two types")
	}
}

type rangeArgs struct {
	From int `json:"from"`
	To   int `json:"to"`
}

func (r rangeArgs) Validate() error {
	if r.To < r.From {
		return validation.FieldError("/to", fmt.Sprintf("must be >= from (%d)", r.From))
	}
	return nil
}

type ptrValidated struct {
	Name string `json:"name"`
}

func (p *ptrValidated) Validate() error {
	if strings.TrimSpace(p.Name) == "" {
		return errors.New("name must not be blank")
	}
	return nil
}

func TestTypedValidateHook(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		s    *validation.Schema
		args string
		want string // the one violation, "" for valid
	}{
		{"value receiver, valid", validation.Typed[rangeArgs](), `{"from": 1, "to": 2}`, ""},
		{"value receiver, FieldError path", validation.Typed[rangeArgs](), `{"from": 3, "to": 2}`, "/to: must be >= from (3)"},
		{"pointer receiver, plain error at root", validation.Typed[ptrValidated](), `{"name": "  "}`, "(root): name must not be blank"},
		{"schema violations come first, hook not run", validation.Typed[rangeArgs](), `{"from": "x", "to": 2}`, "/from: expected integer, got \"x\""},
		{"Validate on a decoded value", validation.Typed[rangeArgs](), "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var err error
			if tc.args == "" {
				err = tc.s.Validate(map[string]any{"from": json.Number("5"), "to": json.Number("6")})
			} else {
				err = tc.s.ValidateJSON([]byte(tc.args))
			}
			if tc.want == "" {
				if err != nil {
					t.Errorf("got %v, want valid", err)
				}
				return
			}
			var ve *validation.Error
			if !errors.As(err, &ve) || len(ve.Violations) != 1 || ve.Violations[0].String() != tc.want {
				t.Errorf("got %v, want the one violation %q", err, tc.want)
			}
		})
	}
	if err := validation.Typed[rangeArgs]().Validate(map[string]any{"from": json.Number("5"), "to": json.Number("1")}); err == nil {
		t.Errorf("Validate(decoded value) skipped the hook")
	}
}

func TestTypedPanics(t *testing.T) {
	t.Parallel()
	type withChan struct {
		C chan int `json:"c"`
	}
	for name, f := range map[string]func(){
		"channel field":    func() { validation.Typed[withChan]() },
		"not an object":    func() { validation.Typed[int]() },
		"slice of structs": func() { validation.Typed[[]Place]() },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if r := recover(); r == nil || !strings.HasPrefix(fmt.Sprint(r), "validation: Typed[") {
					t.Errorf("panic = %v, want a validation: Typed[...] message", r)
				}
			}()
			f()
		})
	}
}

// TestTypedMapIsPlainJSON: Map() is the typed schema's JSON and nothing
// more. Compiled again it validates what the JSON Schema says, but not what
// the Validate hook checks: no process-wide table links maps back to their
// *Schema (the hook travels with the *Schema itself).
func TestTypedMapIsPlainJSON(t *testing.T) {
	t.Parallel()
	m := validation.Typed[rangeArgs]().Map()
	if m["type"] != "object" {
		t.Fatalf("Map()[type] = %v", m["type"])
	}
	s, err := validation.NewCache().Get(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.ValidateJSON([]byte(`{"from": 2, "to": 1}`)); err != nil {
		t.Errorf("compiled Map() = %v, want valid: a map carries no Validate hook", err)
	}
	if err := s.ValidateJSON([]byte(`{"from": "2"}`)); err == nil {
		t.Errorf("compiled Map() accepted a string for an integer")
	}
	if err := validation.Typed[rangeArgs]().ValidateJSON([]byte(`{"from": 2, "to": 1}`)); err == nil {
		t.Errorf("the typed *Schema lost its Validate hook")
	}
}
