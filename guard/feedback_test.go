package guard_test

import (
	"strings"
	"testing"

	"github.com/toolguard/toolguard/errfmt"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/repair"
	"github.com/toolguard/toolguard/validation"
)

// TestFeedbackListsOnlyWhatRemains: a call with "1" for an integer (which
// the default coercions fix) next to a missing required property is
// re-asked for the missing property alone: the coercion is made (and
// written back), and only what remains is the model's to fix.
func TestFeedbackListsOnlyWhatRemains(t *testing.T) {
	t.Parallel()
	s, err := validation.Compile(`{"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city", "days"]}`)
	if err != nil {
		t.Fatal(err)
	}
	raw := []byte(`{"days": "1"}`)
	res := guard.CheckArgs(s, raw, guard.ArgsOptions{Repair: repair.Coercions()})
	if res.Err == nil {
		t.Fatal("CheckArgs accepted a call missing a required property")
	}
	res.Err.Tool = "get_forecast"
	feedback := errfmt.Feedback(res.Err)
	t.Logf("feedback:\n%s", feedback)
	if !strings.Contains(feedback, "/city: missing required property") {
		t.Errorf("feedback lacks the missing property:\n%s", feedback)
	}
	if strings.Contains(feedback, "/days") {
		t.Errorf("feedback names /days, which the coercions fix:\n%s", feedback)
	}
	if !res.Changed || string(res.Args) != `{"days":1}` || len(res.Repairs) != 1 {
		t.Errorf("CheckArgs = %s (changed %v, repairs %v), want {\"days\":1} with the coercion", res.Args, res.Changed, res.Repairs)
	}
	// Without repair, every violation is the model's to fix.
	none := guard.CheckArgs(s, raw, guard.ArgsOptions{})
	if none.Err == nil || len(none.Err.Violations) != 2 {
		t.Errorf("without repair: %v, want both violations", none.Err)
	}
}
