package guard

import (
	"errors"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/errfmt"
)

// TestLimitTexts pins every sentence the model reads about a tool call
// limit; each contains "limit".
func TestLimitTexts(t *testing.T) {
	t.Parallel()
	search := limitText{Tool: "search", Scope: "run", Limit: 2, Count: 1}
	all := limitText{Scope: "thread", Limit: 1, Count: 0}
	for _, tc := range []struct{ got, want string }{
		{search.Exceeded("search"), "Tool call limit exceeded: 'search' may be called at most 2 times per run; do not call it again."},
		{all.Exceeded("a\nb"), "Tool call limit exceeded: at most 1 tool call is allowed per thread; do not call 'a b' again."},
		{search.Remaining(), "Not executed: this batch exceeded the tool call limit; 1 call of 'search' remains in this run, so re-issue at most 1."},
		{limitText{Scope: "run", Limit: 5, Count: 2}.Remaining(), "Not executed: this batch exceeded the tool call limit; 3 tool calls remain in this run, so re-issue at most 3."},
		{search.Reached(), "Tool call limit reached: 'search' run limit exceeded (1/2 calls)."},
		{all.Reached(), "Tool call limit reached: thread limit exceeded (0/1 calls)."},
		{siblingText, "Not executed: another call in this batch exceeded the tool call limit; re-issue this call if you still need it."},
	} {
		if tc.got != tc.want {
			t.Errorf("got  %q\nwant %q", tc.got, tc.want)
		}
		if !strings.Contains(tc.got, "limit") {
			t.Errorf("%q lacks the word limit", tc.got)
		}
	}
	if long := (limitText{Scope: "run", Limit: 1}).Exceeded(strings.Repeat("x", 500)); len(long) > 200 {
		t.Errorf("a 500-byte tool name made a %d-byte message, want it cut", len(long))
	}
}

func TestModelFailed(t *testing.T) {
	t.Parallel()
	boom := errors.New("503")
	for _, tc := range []struct {
		attempts int
		want     string
	}{
		{3, "Model call failed after 3 attempts: 503"},
		{1, "Model call failed after 1 attempt: 503"},
		{0, "Model call failed: 503"},
	} {
		if got := modelFailedText(tc.attempts, boom); got != tc.want {
			t.Errorf("ModelFailed(%d) = %q, want %q", tc.attempts, got, tc.want)
		}
	}
}

func TestModelCallLimitReached(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   modelLimitText
		want string
	}{
		{modelLimitText{Scope: "run", Limit: 5, Count: 5}, "Model call limit reached: run limit exceeded (5/5 calls)."},
		{modelLimitText{Scope: "thread", Limit: 1, Count: 1}, "Model call limit reached: thread limit exceeded (1/1 calls)."},
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
