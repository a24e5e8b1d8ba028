package eval_test

import (
	"context"
	"testing"

	"github.com/toolguard/toolguard/examples/eval/internal/eval"
)

// TestPublishedClaims runs the evaluation on a deterministic sample of the
// corpus (every 8th unique call) and checks, kind by kind, what the tables in
// examples/eval/README.md say of toolguard: with the default configuration every corrupted
// call ends valid within max_retries = 2, at one re-ask at most, and the
// empty-value kinds and the coerced kinds (numbers, booleans and arrays as
// strings, the object double-encoded) cost no re-ask at all; with repair, every
// formatting and scalar-string kind is fixed without a model call; an
// invented key on an open schema passes every configuration but strict,
// which re-asks it once. A regression in validation, feedback, stripping,
// repair or the re-ask layout shows here before it shows in the published
// numbers.
func TestPublishedClaims(t *testing.T) {
	t.Parallel()
	all := loadCorpus(t)
	var cases []eval.Case
	for i := 0; i < len(all); i += 8 {
		cases = append(cases, all[i])
	}
	byName := map[string]eval.Config{}
	for _, c := range eval.Configs() {
		byName[c.Name] = c
	}
	configs := []eval.Config{byName["default (coercions)"], byName["coercions and text repairs (repair.Default())"], byName["closed objects (WithClosedObjects)"]}
	r, err := eval.Run(context.Background(), cases, eval.Options{Seed: 20260921, Configs: configs})
	if err != nil {
		t.Fatal(err)
	}
	free := map[eval.Kind]bool{eval.NullOptional: true, eval.EmptyObject: true, eval.EmptyArray: true,
		eval.NumberAsString: true, eval.BoolAsString: true, eval.DoubleEncoded: true,
		eval.CapitalisedBool: true, eval.ArrayAsJSONString: true, eval.ArrayAsPythonString: true}
	repaired := map[eval.Kind]bool{eval.NumberAsString: true, eval.BoolAsString: true, eval.DoubleEncoded: true,
		eval.CapitalisedBool: true, eval.ArrayAsJSONString: true, eval.ArrayAsPythonString: true,
		eval.CodeFence: true, eval.TrailingProse: true, eval.TrailingComma: true, eval.PythonLiteral: true}
	for _, k := range r.Kinds {
		def, rep, strict := k.ByConfig[0], k.ByConfig[1], k.ByConfig[2]
		if def.Calls == 0 {
			t.Errorf("%s: no sampled call to corrupt", k.Kind)
			continue
		}
		if k.Kind == eval.InventedKey {
			if def.Valid != 0 || def.ModelCalls != def.Calls {
				t.Errorf("%s, default: %d of %d calls end valid with %d model calls, want none (the key passes) and one call each",
					k.Kind, def.Valid, def.Calls, def.ModelCalls)
			}
			if strict.Valid != strict.Calls || strict.ModelCalls != 2*strict.Calls {
				t.Errorf("%s, strict: %d of %d calls end valid with %d model calls, want all with one re-ask each",
					k.Kind, strict.Valid, strict.Calls, strict.ModelCalls)
			}
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
