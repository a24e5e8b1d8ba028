package eval_test

import (
	"context"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/corpus"
	"github.com/toolguard/toolguard/examples/eval/internal/eval"
)

// TestRunOutput: on a sample, taking corrupted answers as sent returns
// every one of them as valid, while toolguard's configurations return none
// (a run ends with a valid answer or an error), and the report is the same
// whatever the number of workers.
func TestRunOutput(t *testing.T) {
	t.Parallel()
	d, err := corpus.Shipped(corpus.BFCL)
	if err != nil {
		t.Fatal(err)
	}
	cases, err := eval.LoadFS(d)
	if err != nil {
		t.Fatal(err)
	}
	cases = cases[:40]
	one, err := eval.RunOutput(context.Background(), cases, eval.Options{Seed: 1, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	many, err := eval.RunOutput(context.Background(), cases, eval.Options{Seed: 1, Workers: 4})
	if err != nil {
		t.Fatal(err)
	}
	var a, b strings.Builder
	if err := one.Markdown(&a); err != nil {
		t.Fatal(err)
	}
	if err := many.Markdown(&b); err != nil {
		t.Fatal(err)
	}
	if a.String() != b.String() {
		t.Errorf("1 worker:\n%s\n4 workers:\n%s", a.String(), b.String())
	}
	for i, s := range one.Stats {
		if s.Answers == 0 || s.Answers != one.Stats[0].Answers {
			t.Fatalf("%s: %d answers, want %d > 0", one.Configs[i], s.Answers, one.Stats[0].Answers)
		}
		switch {
		case i == 0 && (s.Valid != 0 || s.Wrong != s.Answers):
			t.Errorf("%s: %+v, want every answer returned invalid", one.Configs[i], s)
		case i > 0 && (s.Wrong != 0 || s.Valid == 0 || s.ModelCalls <= s.Answers-s.NoReask):
			t.Errorf("%s: %+v, want no invalid answer returned, and re-asks", one.Configs[i], s)
		}
	}
	if !strings.Contains(a.String(), "| OutputValidation + repair |") {
		t.Errorf("table lacks the OutputValidation row:\n%s", a.String())
	}
}
