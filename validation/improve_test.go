package validation_test

import (
	"testing"

	"github.com/toolguard/toolguard/validation"
)

func TestImproves(t *testing.T) {
	t.Parallel()
	a := validation.Violation{Path: "/a", Keyword: "type", Message: "expected string", Got: "1"}
	b := validation.Violation{Path: "/b", Keyword: "required", Message: "missing property"}
	aOther := a
	aOther.Got = "2" // the same violation with another value
	c := validation.Violation{Path: "/c", Keyword: "type", Message: "expected string"}
	tests := []struct {
		name   string
		after  *validation.Error
		before []validation.Violation
		want   bool
	}{
		{"valid after invalid", nil, []validation.Violation{a}, true},
		{"valid before", nil, nil, false},
		{"one fewer", &validation.Error{Violations: []validation.Violation{a}}, []validation.Violation{a, b}, true},
		{"same", &validation.Error{Violations: []validation.Violation{a, b}}, []validation.Violation{a, b}, false},
		{"value changed, violation kept", &validation.Error{Violations: []validation.Violation{aOther}}, []validation.Violation{a, b}, true},
		{"a new violation", &validation.Error{Violations: []validation.Violation{c}}, []validation.Violation{a, b}, false},
		{"incomplete after", &validation.Error{Violations: []validation.Violation{a}, Omitted: 3}, []validation.Violation{a, b}, false},
	}
	for _, tc := range tests {
		if got := validation.Improves(tc.after, tc.before); got != tc.want {
			t.Errorf("%s: Improves = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestTryKeepsOrUndoes(t *testing.T) {
	t.Parallel()
	s, err := validation.Compile(`{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}}}`)
	if err != nil {
		t.Fatal(err)
	}
	v := map[string]any{"a": nil, "b": nil}
	before := s.Check(v).Violations
	if len(before) != 2 {
		t.Fatalf("Check = %v, want 2 violations", before)
	}
	after, kept := s.TryChange(v, before, func() func() {
		delete(v, "a")
		return func() { v["a"] = nil }
	})
	if !kept || len(after) != 1 || after[0].Path != "/b" {
		t.Fatalf("TryChange(remove /a) = %v, %v; want kept with /b left", after, kept)
	}
	if _, ok := v["a"]; ok {
		t.Error("the kept change was undone")
	}
	got, kept := s.TryChange(v, after, func() func() {
		v["b"] = 1.0 // still a type violation at /b: no improvement
		return func() { v["b"] = nil }
	})
	if kept || v["b"] != nil || len(got) != 1 {
		t.Errorf("TryChange(no improvement) = %v, %v, b = %v; want undone", got, kept, v["b"])
	}
}
