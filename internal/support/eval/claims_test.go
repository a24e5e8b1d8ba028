package eval_test

import (
	"context"
	"testing"

	"github.com/toolguard/toolguard/internal/support/eval"
)

// TestPublishedClaims runs the evaluation on a deterministic sample of the
// corpus (every 8th unique call) and checks, kind by kind, what the README's
// table says of toolguard: with the default configuration every corrupted
// call ends valid within max_retries = 2, at one re-ask at most, and the
// empty-value kinds cost no re-ask at all; with repair, every formatting and
// scalar-string kind is fixed without a model call. A regression in
// validation, feedback, stripping, repair or the re-ask layout shows here
// before it shows in the published numbers.
func TestPublishedClaims(t *testing.T) {
	t.Parallel()
	all := loadCorpus(t)
	var cases []eval.Case
	for i := 0; i < len(all); i += 8 {
		cases = append(cases, all[i])
	}
	configs := eval.Configs()[:2] // toolguard default, default + repair
	r, err := eval.Run(context.Background(), cases, eval.Options{Seed: 20260921, Configs: configs})
	if err != nil {
		t.Fatal(err)
	}
	free := map[eval.Kind]bool{eval.NullOptional: true, eval.EmptyObject: true, eval.EmptyArray: true}
	repaired := map[eval.Kind]bool{eval.NumberAsString: true, eval.BoolAsString: true, eval.DoubleEncoded: true,
		eval.CodeFence: true, eval.TrailingProse: true, eval.TrailingComma: true, eval.PythonLiteral: true}
	for _, k := range r.Kinds {
		def, rep := k.ByConfig[0], k.ByConfig[1]
		if def.Calls == 0 {
			t.Errorf("%s: no sampled call to corrupt", k.Kind)
			continue
		}
		if def.Valid != def.Calls {
			t.Errorf("%s, default: %d of %d calls end valid, want all", k.Kind, def.Valid, def.Calls)
		}
		switch {
		case free[k.Kind] && def.ModelCalls != def.Calls:
			t.Errorf("%s, default: %d model calls for %d calls, want one each (no re-ask)", k.Kind, def.ModelCalls, def.Calls)
		case def.ModelCalls > 2*def.Calls:
			t.Errorf("%s, default: %d model calls for %d calls, want at most one re-ask each", k.Kind, def.ModelCalls, def.Calls)
		}
		if repaired[k.Kind] && (rep.NoCall != rep.Calls || rep.ModelCalls != rep.Calls) {
			t.Errorf("%s, repair: %d of %d fixed without a re-ask (%d model calls), want all", k.Kind, rep.NoCall, rep.Calls, rep.ModelCalls)
		}
	}
}
