package errfmt_test

import (
	"strings"
	"testing"

	"github.com/toolguard/toolguard/errfmt"
)

func TestModelCallLimitReached(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   errfmt.ModelCallLimit
		want string
	}{
		{errfmt.ModelCallLimit{Scope: "run", Limit: 5, Count: 5}, "Model call limit reached: run limit exceeded (5/5 calls)."},
		{errfmt.ModelCallLimit{Scope: "thread", Limit: 1, Count: 1}, "Model call limit reached: thread limit exceeded (1/1 calls)."},
	} {
		got := tc.in.Reached()
		if got != tc.want {
			t.Errorf("%+v.Reached() = %q, want %q", tc.in, got, tc.want)
		}
		if !strings.HasPrefix(got, errfmt.PrefixModelLimitReached) || !strings.Contains(got, "limit") {
			t.Errorf("%+v.Reached() = %q, want it to start with %q and say \"limit\"", tc.in, got, errfmt.PrefixModelLimitReached)
		}
	}
}
