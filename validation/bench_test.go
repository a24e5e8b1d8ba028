package validation_test

import (
	"encoding/json"
	"testing"

	"github.com/toolguard/toolguard/validation"
)

// The benchmarks cycle through real BFCL calls (corpus/bfcl: shipped, or
// the full corpus with $TOOLGUARD_CORPUS), one call per op. Schemas are compiled
// before the timed loop.

type benchCall struct {
	schema *validation.Schema
	args   []byte
}

func benchCalls(b *testing.B) (valid, invalid []benchCall) {
	c := openCorpus(b)
	for _, call := range c.UniqueCalls() {
		valid = append(valid, benchCall{c.schemas[call.SchemaRef], call.Args})
	}
	for _, call := range c.Violations {
		invalid = append(invalid, benchCall{c.schemas[call.SchemaRef], call.Args})
	}
	return valid, invalid
}

// BenchmarkValidateJSON validates one BFCL call per op: "valid" cycles
// through the 4,439 unique ground-truth calls (which the fast path
// decides alone), "valid-reference-path" through the same calls without
// the fast path, "invalid" through the 330 violations (which build a
// *Error listing every violation).
func BenchmarkValidateJSON(b *testing.B) {
	valid, invalid := benchCalls(b)
	b.Run("valid", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			c := valid[i%len(valid)]
			if err := c.schema.ValidateJSON(c.args); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	// The same calls through the reference path alone (decode, then
	// jsonschema/v5): what a schema outside the fast path costs.
	b.Run("valid-reference-path", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			c := valid[i%len(valid)]
			if err := validation.ValidateJSONReference(c.schema, c.args); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("invalid", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			c := invalid[i%len(invalid)]
			if err := c.schema.ValidateJSON(c.args); err == nil {
				b.Fatalf("ValidateJSON(%s) = nil, want violations", c.args)
			}
			i++
		}
	})
}

// BenchmarkUnmarshal is the floor for BenchmarkValidateJSON/valid: plain
// json.Unmarshal of the same arguments into a map[string]any.
func BenchmarkUnmarshal(b *testing.B) {
	valid, _ := benchCalls(b)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		var m map[string]any
		if err := json.Unmarshal(valid[i%len(valid)].args, &m); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkDecodeArgs is the decoding part of ValidateJSON on the same
// arguments: json.Decoder with UseNumber and the one-object checks.
func BenchmarkDecodeArgs(b *testing.B) {
	valid, _ := benchCalls(b)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := validation.DecodeArgs(valid[i%len(valid)].args); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
