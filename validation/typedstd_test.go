package validation_test

import (
	"encoding/json"
	"errors"
	"log/slog"
	"math/big"
	"strings"
	"testing"
	"time"

	gjs "github.com/google/jsonschema-go/jsonschema"
	"github.com/toolguard/toolguard/validation"
)

type meetingArgs struct {
	When  time.Time  `json:"when"`
	Until *time.Time `json:"until,omitempty"`
	Count *big.Int   `json:"count,omitempty"`
	Ratio *big.Rat   `json:"ratio,omitempty"`
	Level slog.Level `json:"level,omitempty"`
}

// TestTypedStdlibFormats: the standard-library types jsonschema-go v0.4.3
// maps to a bare string get the schema encoding/json really needs.
func TestTypedStdlibFormats(t *testing.T) {
	t.Parallel()
	props, _ := validation.Typed[meetingArgs]().Map()["properties"].(map[string]any)
	want := map[string]string{
		"when":  `{"format":"date-time","type":"string"}`,
		"until": `{"format":"date-time","type":"string"}`,
		"count": `{"type":"integer"}`,
		"ratio": `{"type":"string"}`,
		"level": `{"pattern":"^([Dd][Ee][Bb][Uu][Gg]|[Ii][Nn][Ff][Oo]|[Ww][Aa][Rr][Nn]|[Ee][Rr][Rr][Oo][Rr])([+-][0-9]+)?$","type":"string"}`,
	}
	for name, w := range want {
		got, _ := json.Marshal(props[name])
		if string(got) != w {
			t.Errorf("Typed[meetingArgs]() property %q = %s, want %s", name, got, w)
		}
	}
}

// TestTypedStdlibValues: what the schema accepts decodes, and a bad value
// is a violation at its own path, never at the root in Go's layout text.
func TestTypedStdlibValues(t *testing.T) {
	t.Parallel()
	s := validation.Typed[meetingArgs]()
	tests := []struct {
		args string
		want string // the one violation's path and keyword, "" for valid
	}{
		{`{"when": "2026-11-24T10:00:00Z"}`, ""},
		{`{"when": "2026-11-24T10:00:00+01:00", "until": "2026-11-24T11:00:00Z", "count": 123456789012345678901234567890, "ratio": "1/3", "level": "warn+2"}`, ""},
		{`{"when": "tomorrow"}`, "/when format"},
		{`{"when": "2026-11-24"}`, "/when format"},
		{`{"when": "2016-12-31T23:59:60Z"}`, "/when format"}, // a leap second: the format allows it, Go's time does not
		{`{"when": "2026-11-24T10:00:00Z", "until": "noon"}`, "/until format"},
		{`{"when": "2026-11-24T10:00:00Z", "count": "12"}`, "/count type"},
		{`{"when": "2026-11-24T10:00:00Z", "count": 1.5}`, "/count type"},
		{`{"when": "2026-11-24T10:00:00Z", "level": "loud"}`, "/level pattern"},
	}
	for _, tc := range tests {
		err := s.ValidateJSON([]byte(tc.args))
		var got string
		var ve *validation.Error
		if errors.As(err, &ve) && len(ve.Violations) == 1 {
			got = ve.Violations[0].Path + " " + ve.Violations[0].Keyword
		} else if err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("ValidateJSON(%q) = %v, want %q", tc.args, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "parsing time") {
			t.Errorf("ValidateJSON(%q) = %v: Go's parser text leaks to the model", tc.args, err)
		}
		if err == nil {
			var m meetingArgs
			if derr := json.Unmarshal([]byte(tc.args), &m); derr != nil {
				t.Errorf("ValidateJSON(%q) = nil but json.Unmarshal fails: %v", tc.args, derr)
			}
		}
	}
}

// strictDate decodes only "YYYY-MM-DD": a decode error its schema (any
// string) does not catch.
type strictDate struct{ t time.Time }

func (strictDate) JSONSchema() *gjs.Schema { return &gjs.Schema{Type: "string"} }

func (d *strictDate) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	t, err := time.Parse(time.DateOnly, s)
	d.t = t
	return err
}

// window checks itself: its errors belong at the field that holds it.
type window struct {
	From int `json:"from"`
	To   int `json:"to"`
}

func (w window) Validate() error {
	if w.To < w.From {
		return validation.FieldError("/to", "must not be before from")
	}
	return nil
}

type nonEmpty string

func (n nonEmpty) Validate() error {
	if strings.TrimSpace(string(n)) == "" {
		return errors.New("must not be blank")
	}
	return nil
}

type planArgs struct {
	Day     strictDate          `json:"day"`
	Windows []window            `json:"windows,omitempty"`
	Main    *window             `json:"main,omitempty"`
	Labels  map[string]nonEmpty `json:"labels,omitempty"`
}

// TestTypedFieldErrorPaths: a decode error of a field, and the Validate
// error of a field's type, are reported at the field's path.
func TestTypedFieldErrorPaths(t *testing.T) {
	t.Parallel()
	s := validation.Typed[planArgs]()
	tests := []struct {
		name, args string
		want       []string // violations as Path: keyword
	}{
		{"valid", `{"day": "2026-11-24", "windows": [{"from": 1, "to": 2}], "main": {"from": 0, "to": 0}, "labels": {"a": "x"}}`, nil},
		{"decode error at the field", `{"day": "24/11/2026"}`, []string{"/day: format"}},
		{"Validate of an element", `{"day": "2026-11-24", "windows": [{"from": 1, "to": 2}, {"from": 5, "to": 1}]}`, []string{"/windows/1/to: validate"}},
		{"Validate of a pointer field", `{"day": "2026-11-24", "main": {"from": 5, "to": 1}}`, []string{"/main/to: validate"}},
		{"Validate of map values", `{"day": "2026-11-24", "labels": {"a": " ", "b/c": ""}}`, []string{"/labels/a: validate", "/labels/b~1c: validate"}},
	}
	err := s.ValidateJSON([]byte(`{"day": "24/11/2026"}`))
	if want := `/day: expected a date/time written like "2026-03-14" (got "24/11/2026")`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("ValidateJSON(bad day) = %v, want %s", err, want)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := s.ValidateJSON([]byte(tc.args))
			var got []string
			var ve *validation.Error
			if errors.As(err, &ve) {
				for _, v := range ve.Violations {
					got = append(got, v.Path+": "+v.Keyword)
				}
			} else if err != nil {
				got = []string{err.Error()}
			}
			if strings.Join(got, ", ") != strings.Join(tc.want, ", ") {
				t.Errorf("ValidateJSON(%s) = %v, want %q", tc.args, err, tc.want)
			}
			if ve != nil && (strings.Contains(ve.Error(), "2006") || strings.Contains(ve.Error(), "parsing time")) {
				t.Errorf("ValidateJSON(%s) = %v: Go's layout text leaks to the model", tc.args, err)
			}
		})
	}
}
