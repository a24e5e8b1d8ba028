package corpus

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/toolguard/toolguard/internal/exactjson"
)

// Subset cuts the shipped subset of the data set name out of full (a
// corpus directory's data set) and returns its files by path. It is how
// testdata/ is made (go test ./corpus -update) and how a test
// checks that it still matches the full corpus.
//
// BFCL: the unique ground-truth calls (the first of each distinct schema
// and arguments, lines as published), every violation, and the tools they
// refer to, without BFCL's non-standard "parameters_bfcl". The
// JSON-Schema-Test-Suite: the draft-07 and 2020-12 tests with their
// optional format tests, and the remotes.
func Subset(full fs.FS, name string) (map[string][]byte, error) {
	switch name {
	case BFCL:
		return bfclSubset(full)
	case JSONSchemaSuite:
		return suiteSubset(full)
	}
	return nil, fmt.Errorf("corpus: no data set %q", name)
}

func bfclSubset(full fs.FS) (map[string][]byte, error) {
	type ref struct {
		SchemaRef string          `json:"schema_ref"`
		Args      json.RawMessage `json:"args"`
	}
	used := map[string]bool{}
	seen := map[string]bool{}
	var calls bytes.Buffer
	err := eachLine(full, "calls.jsonl", func(line []byte) error {
		var c ref
		if err := json.Unmarshal(line, &c); err != nil {
			return err
		}
		v, err := exactjson.Decode(c.Args)
		if err != nil {
			return err
		}
		args, err := exactjson.Encode(v)
		if err != nil {
			return err
		}
		if key := c.SchemaRef + "\x00" + string(args); !seen[key] {
			seen[key] = true
			used[c.SchemaRef] = true
			calls.Write(line)
			calls.WriteByte('\n')
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	violations, err := fs.ReadFile(full, "violations.jsonl")
	if err != nil {
		return nil, fmt.Errorf("corpus: %w", err)
	}
	if err := eachLine(full, "violations.jsonl", func(line []byte) error {
		var c ref
		err := json.Unmarshal(line, &c)
		used[c.SchemaRef] = true
		return err
	}); err != nil {
		return nil, err
	}
	tools, err := toolsSubset(full, used)
	if err != nil {
		return nil, err
	}
	return map[string][]byte{"tools.jsonl": tools, "calls.jsonl": calls.Bytes(), "violations.jsonl": violations}, nil
}

// toolsSubset keeps the tools whose id is in used, in file order.
func toolsSubset(full fs.FS, used map[string]bool) ([]byte, error) {
	type tool struct {
		ID          string          `json:"id"`
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
		Category    string          `json:"category"`
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	err := eachLine(full, "tools.jsonl", func(line []byte) error {
		var t tool
		if err := json.Unmarshal(line, &t); err != nil {
			return err
		}
		if !used[t.ID] {
			return nil
		}
		return enc.Encode(t)
	})
	return out.Bytes(), err
}

func suiteSubset(full fs.FS) (map[string][]byte, error) {
	out := map[string][]byte{}
	keep := func(p string) bool {
		if path.Ext(p) != ".json" {
			return false
		}
		if strings.HasPrefix(p, "remotes/") {
			return true
		}
		for _, draft := range []string{"draft7", "draft2020-12"} {
			dir := path.Dir(p)
			if dir == "tests/"+draft || dir == "tests/"+draft+"/optional/format" {
				return true
			}
		}
		return false
	}
	err := fs.WalkDir(full, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !keep(p) {
			return err
		}
		b, err := fs.ReadFile(full, p)
		out[p] = b
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("corpus: %w", err)
	}
	return out, nil
}

func eachLine(fsys fs.FS, name string, fn func([]byte) error) error {
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		return fmt.Errorf("corpus: %w", err)
	}
	for i, line := range bytes.Split(b, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if err := fn(line); err != nil {
			return fmt.Errorf("corpus: %s:%d: %w", name, i+1, err)
		}
	}
	return nil
}

// Archive packs files into a gzip-compressed tar archive, deterministically:
// sorted names, no timestamps, no owners.
func Archive(files map[string][]byte) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(zw)
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range files {
			if !yield(k) {
				return
			}
		}
	}) {
		h := &tar.Header{Name: name, Mode: 0o644, Size: int64(len(files[name])), Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(files[name]); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
