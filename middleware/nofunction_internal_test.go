package middleware

import (
	"strings"
	"testing"
)

func TestIsNoFunctionCalls(t *testing.T) {
	t.Parallel()
	if got := noFunctionCalls(2); !strings.Contains(got, "2 tool call(s) without a function name") {
		t.Errorf("noFunctionCalls(2) = %q", got)
	}
	msg := noFunctionCalls(12)
	for _, tc := range []struct {
		s    string
		want bool
	}{
		{noFunctionCalls(1), true},
		{msg, true},
		{strings.Replace(msg, "12", "x", 1), false},
		{strings.Replace(msg, "12", "", 1), false},
		{msg + " ", false},
		{"Pay alice.", false},
		{"", false},
	} {
		if got := isNoFunctionCalls(tc.s); got != tc.want {
			t.Errorf("isNoFunctionCalls(%q) = %v, want %v", tc.s, got, tc.want)
		}
	}
}
