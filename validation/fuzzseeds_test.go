package validation_test

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var updateFuzzSeeds = flag.Bool("update-fuzz-seeds", false,
	"rewrite the BFCL-derived fuzz seeds of validation and middleware from ../shared/corpus/bfcl")

const bfclDir = "../../shared/corpus/bfcl"

// TestUpdateFuzzSeeds writes, with -update-fuzz-seeds, the seed corpora of
// FuzzValidateArgs (here) and FuzzReask (in middleware) from the BFCL
// corpus: eight tool schemas — the three with the most distinct ground-truth
// calls, the three with the most recorded violations and the two most
// called among those with nested objects — and up to 12 calls and 8
// violations of each. The files are committed; the corpus is not needed to
// run the fuzz tests.
func TestUpdateFuzzSeeds(t *testing.T) {
	if !*updateFuzzSeeds {
		t.Skip("run with -update-fuzz-seeds to rewrite the fuzz seeds")
	}
	type tool struct {
		ID         string          `json:"-"`
		Name       string          `json:"name"`
		Parameters json.RawMessage `json:"parameters"`
	}
	type call struct {
		Tool      string          `json:"tool"`
		SchemaRef string          `json:"schema_ref"`
		Args      json.RawMessage `json:"args"`
	}
	tools := map[string]tool{}
	readJSONL(t, "tools.jsonl", func(line []byte) {
		var x struct {
			ID, Name   string
			Parameters json.RawMessage
		}
		mustUnmarshal(t, line, &x)
		tools[x.ID] = tool{ID: x.ID, Name: x.Name, Parameters: compact(t, x.Parameters)}
	})
	distinct := map[string][]string{} // schema ref -> distinct args, in corpus order
	readJSONL(t, "calls.jsonl", func(line []byte) {
		var c call
		mustUnmarshal(t, line, &c)
		a := string(compact(t, c.Args))
		if !slices.Contains(distinct[c.SchemaRef], a) {
			distinct[c.SchemaRef] = append(distinct[c.SchemaRef], a)
		}
	})
	violations := map[string][]string{}
	readJSONL(t, "violations.jsonl", func(line []byte) {
		var c call
		mustUnmarshal(t, line, &c)
		violations[c.SchemaRef] = append(violations[c.SchemaRef], string(compact(t, c.Args)))
	})

	top := func(n int, count func(id string) int, keep func(id string) bool, skip []string) []string {
		var ids []string
		for id := range tools {
			if count(id) > 0 && keep(id) && !slices.Contains(skip, id) {
				ids = append(ids, id)
			}
		}
		slices.SortFunc(ids, func(a, b string) int {
			if d := count(b) - count(a); d != 0 {
				return d
			}
			return strings.Compare(a, b)
		})
		return ids[:min(n, len(ids))]
	}
	all := func(string) bool { return true }
	nested := func(id string) bool { return strings.Count(string(tools[id].Parameters), `"properties"`) > 1 }
	chosen := top(3, func(id string) int { return len(distinct[id]) }, all, nil)
	chosen = append(chosen, top(3, func(id string) int { return len(violations[id]) }, all, chosen)...)
	chosen = append(chosen, top(2, func(id string) int { return len(distinct[id]) }, nested, chosen)...)

	var picked []tool
	var seeds [][]string // per chosen tool: args
	for _, id := range chosen {
		picked = append(picked, tools[id])
		s := distinct[id][:min(12, len(distinct[id]))]
		s = append(slices.Clone(s), violations[id][:min(8, len(violations[id]))]...)
		seeds = append(seeds, s)
	}
	schemasJSON, err := json.MarshalIndent(picked, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"testdata", "../middleware/testdata"} {
		writeFile(t, filepath.Join(dir, "fuzz_schemas.json"), append(schemasJSON, '\n'))
	}

	// FuzzValidateArgs(args []byte, tool string, schema, mode uint8): the
	// BFCL schemas follow the three written in fuzz_test.go.
	const ownSchemas = 3
	dir := "testdata/fuzz/FuzzValidateArgs"
	removeSeeds(t, dir)
	n := 0
	for i, args := range seeds {
		for j, a := range args {
			writeSeed(t, dir, fmt.Sprintf("go test fuzz v1\n[]byte(%q)\nstring(%q)\nuint8(%d)\nuint8(%d)\n",
				a, picked[i].Name, ownSchemas+i, j%3))
			n++
		}
	}
	// FuzzReask(text, calls string, shape uint8): calls are records
	// separated by \x1e, each name \x1f id \x1f arguments. One to three
	// calls per response, ids left out on every other response.
	rdir := "../middleware/testdata/fuzz/FuzzReask"
	removeSeeds(t, rdir)
	r := 0
	for i, args := range seeds {
		for j := 0; j < len(args); j += 3 {
			var recs []string
			for k, a := range args[j:min(j+1+j%3, len(args))] {
				id := ""
				if j%2 == 0 {
					id = fmt.Sprintf("call_%d", k+1)
				}
				recs = append(recs, picked[i].Name+"\x1f"+id+"\x1f"+a)
			}
			writeSeed(t, rdir, fmt.Sprintf("go test fuzz v1\nstring(%q)\nstring(%q)\nuint8(%d)\n",
				"", strings.Join(recs, "\x1e"), j%16))
			r++
		}
	}
	t.Logf("%d tools; %d FuzzValidateArgs seeds, %d FuzzReask seeds", len(picked), n, r)
}

func readJSONL(t *testing.T, name string, fn func(line []byte)) {
	t.Helper()
	f, err := os.Open(filepath.Join(bfclDir, name))
	if err != nil {
		t.Fatalf("the BFCL corpus is needed to update the seeds: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		fn(sc.Bytes())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
}

func mustUnmarshal(t *testing.T, b []byte, v any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		t.Fatal(err)
	}
}

func compact(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func writeFile(t *testing.T, name string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// removeSeeds deletes the generated seeds of dir (named bfcl-*), keeping
// crashers and hand-written seeds.
func removeSeeds(t *testing.T, dir string) {
	t.Helper()
	old, _ := filepath.Glob(filepath.Join(dir, "bfcl-*"))
	for _, f := range old {
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
}

func writeSeed(t *testing.T, dir, content string) {
	t.Helper()
	sum := sha256.Sum256([]byte(content))
	writeFile(t, filepath.Join(dir, fmt.Sprintf("bfcl-%x", sum[:8])), []byte(content))
}
