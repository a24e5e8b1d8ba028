// Package bench compares toolguard's validator with the other Go JSON
// Schema validators side by side, in one process, on the BFCL calls
// (corpus/bfcl: the shipped subset, or the full corpus when
// $TOOLGUARD_CORPUS names it; give an absolute path, since a relative one
// resolves against this module's directory).
//
// It is a module of its own so that santhosh-tekuri/jsonschema/v6, which
// only this comparison uses, stays out of toolguard's go.mod: users of the
// library never download it. Run it with
//
//	cd bench && TOOLGUARD_CORPUS=/abs/path/to/shared/corpus \
//	  go test -run '^$' -bench SideBySide -benchmem -count 3 | go run ./costtable
//
// costtable prints bench/README.md's cost table from the output.
package bench

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	googlejs "github.com/google/jsonschema-go/jsonschema"
	v5 "github.com/santhosh-tekuri/jsonschema/v5"
	v6 "github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/toolguard/toolguard/corpus/bfcl"
	"github.com/toolguard/toolguard/validation"
)

// validator validates one call's arguments (decoding them first) against
// the schema it was built for.
type validator func(args []byte) error

// contender builds a validator from a tool's JSON Schema.
type contender struct {
	name  string
	build func(schema []byte) (validator, error)
}

var contenders = []contender{
	{"decode", func([]byte) (validator, error) {
		return func(args []byte) error {
			var m map[string]any
			return json.Unmarshal(args, &m)
		}, nil
	}},
	{"toolguard", func(schema []byte) (validator, error) {
		s, err := validation.Compile(schema)
		if err != nil {
			return nil, err
		}
		return s.ValidateJSON, nil
	}},
	{"santhosh-tekuri-v5", func(schema []byte) (validator, error) {
		c := v5.NewCompiler()
		c.Draft = v5.Draft7
		c.AssertFormat = true
		if err := c.AddResource("tool.json", bytes.NewReader(schema)); err != nil {
			return nil, err
		}
		s, err := c.Compile("tool.json")
		if err != nil {
			return nil, err
		}
		return func(args []byte) error {
			dec := json.NewDecoder(bytes.NewReader(args))
			dec.UseNumber()
			var v any
			if err := dec.Decode(&v); err != nil {
				return err
			}
			return s.Validate(v)
		}, nil
	}},
	{"santhosh-tekuri-v6", func(schema []byte) (validator, error) {
		doc, err := v6.UnmarshalJSON(bytes.NewReader(schema))
		if err != nil {
			return nil, err
		}
		c := v6.NewCompiler()
		c.DefaultDraft(v6.Draft7)
		c.AssertFormat()
		c.UseLoader(refuseLoader{})
		if err := c.AddResource("tool.json", doc); err != nil {
			return nil, err
		}
		s, err := c.Compile("tool.json")
		if err != nil {
			return nil, err
		}
		return func(args []byte) error {
			v, err := v6.UnmarshalJSON(bytes.NewReader(args))
			if err != nil {
				return err
			}
			return s.Validate(v)
		}, nil
	}},
	{"google-jsonschema-go", func(schema []byte) (validator, error) {
		var s googlejs.Schema
		if err := json.Unmarshal(schema, &s); err != nil {
			return nil, err
		}
		rs, err := s.Resolve(nil)
		if err != nil {
			return nil, err
		}
		return func(args []byte) error {
			var v any
			if err := json.Unmarshal(args, &v); err != nil {
				return err
			}
			return rs.Validate(v)
		}, nil
	}},
}

type refuseLoader struct{}

func (refuseLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("no loading in the benchmark: %s", url)
}

// build compiles every tool schema the valid calls use with each contender
// and returns, per contender, one validator per call, in corpus order. A
// call is kept only when every contender compiles its schema and accepts
// it, so that all run on the same calls; how many are left out is logged.
func build(tb testing.TB) (calls [][]byte, byContender [][]validator) {
	c := openCorpus(tb)
	byContender = make([][]validator, len(contenders))
	cache := make([]map[string]validator, len(contenders))
	for i := range cache {
		cache[i] = map[string]validator{}
	}
	dropped := map[string]int{}
	var sample map[string]error
	for _, call := range c.Calls {
		vs := make([]validator, len(contenders))
		var failed error
		for i, ct := range contenders {
			v, ok := cache[i][call.SchemaRef]
			if !ok {
				var err error
				if v, err = ct.build(c.ToolOf(&call).Parameters); err != nil {
					v = func([]byte) error { return fmt.Errorf("compile: %w", err) }
				}
				cache[i][call.SchemaRef] = v
			}
			if err := v(call.Args); err != nil {
				dropped[ct.name]++
				if sample == nil {
					sample = map[string]error{}
				}
				if sample[ct.name] == nil {
					sample[ct.name] = fmt.Errorf("call %s: %w", call.ID, err)
				}
				failed = errors.Join(failed, err)
			}
			vs[i] = v
		}
		if failed != nil {
			continue
		}
		calls = append(calls, call.Args)
		for i := range contenders {
			byContender[i] = append(byContender[i], vs[i])
		}
	}
	if len(dropped) > 0 {
		tb.Logf("calls left out because a validator refused the schema or the call: %v; first: %v", dropped, sample)
	}
	return calls, byContender
}

// BenchmarkSideBySide decodes and validates one valid BFCL call per op with
// each validator: "decode" is encoding/json alone into a map[string]any
// (the floor), the others decode as they need (toolguard and v5 with
// json.Number, v6 with its own UnmarshalJSON, google/jsonschema-go with
// float64) and validate with formats asserted, draft 7.
func BenchmarkSideBySide(b *testing.B) {
	calls, byContender := build(b)
	b.Logf("%d valid calls (corpus: %s)", len(calls), openCorpus(b).Source)
	for i, ct := range contenders {
		vs := byContender[i]
		b.Run(ct.name, func(b *testing.B) {
			b.ReportAllocs()
			j := 0
			for b.Loop() {
				k := j % len(calls)
				if err := vs[k](calls[k]); err != nil {
					b.Fatal(err)
				}
				j++
			}
		})
	}
}

// TestSideBySideAgree checks that every validator accepts the valid calls
// the benchmark runs on, so that the benchmark compares like with like.
func TestSideBySideAgree(t *testing.T) {
	calls, _ := build(t)
	c := openCorpus(t)
	if min := len(c.Calls) * 9 / 10; len(calls) < min {
		t.Errorf("the validators agree on %d of %d valid calls, want at least %d", len(calls), len(c.Calls), min)
	}
}

// openCorpus loads the BFCL corpus (the shipped subset, or the full one
// named by TOOLGUARD_CORPUS), failing tb when it cannot.
func openCorpus(tb testing.TB) *bfcl.Corpus {
	tb.Helper()
	c, err := bfcl.Load()
	if err != nil {
		tb.Fatal(err)
	}
	return c
}
