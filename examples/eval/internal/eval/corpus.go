// Package eval measures what ToolArgValidation saves: it corrupts real
// ground-truth tool calls from the BFCL corpus in the ways models get them
// wrong, lets a literal-minded self-correcting model (Correct)
// repair them from toolguard's feedback or from other feedback formats, and
// counts model calls, calls ending valid and feedback bytes. The runnable
// entry point is examples/eval.
package eval

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"

	"github.com/toolguard/toolguard/internal/exactjson"
)

// Case is one unique ground-truth call: a tool's parameters schema and
// arguments the schema accepts.
type Case struct {
	ID     string          // the first calls.jsonl id with this schema and these arguments
	Tool   string          // the tool's name
	Schema json.RawMessage // the tool's "parameters" (draft-07)
	Args   json.RawMessage // the arguments, compact, keys sorted
}

// Load reads tools.jsonl and calls.jsonl from dir (the corpus's bfcl
// directory) and returns the unique (schema, arguments) pairs in file
// order.
func Load(dir string) ([]Case, error) { return LoadFS(os.DirFS(dir)) }

// LoadFS is Load on a file system holding tools.jsonl and calls.jsonl, such
// as the shipped subset (corpus).
func LoadFS(fsys fs.FS) ([]Case, error) {
	type tool struct {
		ID         string          `json:"id"`
		Name       string          `json:"name"`
		Parameters json.RawMessage `json:"parameters"`
	}
	tools := map[string]tool{}
	if err := eachLine(fsys, "tools.jsonl", func(line []byte) error {
		var t tool
		if err := json.Unmarshal(line, &t); err != nil {
			return err
		}
		tools[t.ID] = t
		return nil
	}); err != nil {
		return nil, err
	}

	type call struct {
		ID        string          `json:"id"`
		Tool      string          `json:"tool"`
		SchemaRef string          `json:"schema_ref"`
		Args      json.RawMessage `json:"args"`
	}
	seen := map[string]bool{}
	var cases []Case
	if err := eachLine(fsys, "calls.jsonl", func(line []byte) error {
		var c call
		if err := json.Unmarshal(line, &c); err != nil {
			return err
		}
		t, ok := tools[c.SchemaRef]
		if !ok {
			return fmt.Errorf("call %s: no tool %s", c.ID, c.SchemaRef)
		}
		args, err := canonical(c.Args)
		if err != nil {
			return fmt.Errorf("call %s: %w", c.ID, err)
		}
		key := c.SchemaRef + "\x00" + string(args)
		if seen[key] {
			return nil
		}
		seen[key] = true
		cases = append(cases, Case{ID: c.ID, Tool: t.Name, Schema: t.Parameters, Args: args})
		return nil
	}); err != nil {
		return nil, err
	}
	return cases, nil
}

func eachLine(fsys fs.FS, path string, fn func([]byte) error) error {
	f, err := fsys.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		if err := fn(line); err != nil {
			return fmt.Errorf("%s:%d: %w", path, n, err)
		}
	}
	return sc.Err()
}

// canonical returns JSON with object keys sorted and numbers as written.
func canonical(raw []byte) ([]byte, error) {
	v, err := decode(raw)
	if err != nil {
		return nil, err
	}
	return marshal(v), nil
}

func decode(raw []byte) (any, error) { return exactjson.Decode(raw) }

// marshal encodes decoded JSON compactly, keys sorted, without HTML escaping.
func marshal(v any) []byte {
	b, err := exactjson.Encode(v)
	if err != nil {
		panic(err) // decoded JSON always encodes
	}
	return b
}
