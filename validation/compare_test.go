package validation_test

import (
	"errors"
	"testing"

	"github.com/toolguard/toolguard/validation"
)

func TestImproves(t *testing.T) {
	t.Parallel()
	v := func(path, msg, got string) validation.Violation {
		return validation.Violation{Path: path, Keyword: "type", Message: msg, Got: got}
	}
	two := &validation.Error{Violations: []validation.Violation{v("/a", "expected string", "1"), v("/b", "expected string", "2")}}
	tests := []struct {
		name          string
		after, before error
		want          bool
	}{
		{"all fixed", nil, two, true},
		{"one fixed", &validation.Error{Violations: []validation.Violation{v("/b", "expected string", "2")}}, two, true},
		{"one fixed, other shows a new value", &validation.Error{Violations: []validation.Violation{v("/b", "expected string", "3")}}, two, true},
		{"nothing fixed", two, two, false},
		{"one fixed, one added", &validation.Error{Violations: []validation.Violation{v("/b", "expected string", "2"), v("/c", "expected string", "")}}, two, false},
		{"nothing to improve", nil, nil, false},
		{"before incomplete", nil, &validation.Error{Violations: two.Violations, Omitted: 5}, false},
		{"after incomplete", &validation.Error{Omitted: 1}, two, false},
		{"not a validation error", errors.New("x"), two, false},
	}
	for _, tc := range tests {
		if got := validation.Improves(tc.after, tc.before); got != tc.want {
			t.Errorf("%s: Improves = %v, want %v", tc.name, got, tc.want)
		}
	}
}
