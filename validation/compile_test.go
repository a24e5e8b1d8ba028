package validation_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tmc/langchaingo/jsonschema"
	"github.com/toolguard/toolguard/validation"
)

const citySchema = `{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`

func TestCompileForms(t *testing.T) {
	t.Parallel()
	compiled, err := validation.Compile(citySchema)
	if err != nil {
		t.Fatal(err)
	}
	forms := map[string]any{
		"string":          citySchema,
		"[]byte":          []byte(citySchema),
		"json.RawMessage": json.RawMessage(citySchema),
		"map": map[string]any{
			"type":       "object",
			"properties": map[string]any{"city": map[string]any{"type": "string"}},
			"required":   []string{"city"},
		},
		"jsonschema.Definition": jsonschema.Definition{
			Type:       jsonschema.Object,
			Properties: map[string]jsonschema.Definition{"city": {Type: jsonschema.String}},
			Required:   []string{"city"},
		},
		"*jsonschema.Definition": &jsonschema.Definition{
			Type:       jsonschema.Object,
			Properties: map[string]jsonschema.Definition{"city": {Type: jsonschema.String}},
			Required:   []string{"city"},
		},
		"*validation.Schema": compiled,
	}
	for name, form := range forms {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s, err := validation.Compile(form)
			if err != nil {
				t.Fatalf("Compile(%s) = %v", name, err)
			}
			if err := s.ValidateJSON([]byte(`{"city": "Paris"}`)); err != nil {
				t.Errorf("valid arguments rejected: %v", err)
			}
			if err := s.ValidateJSON([]byte(`{"city": 1}`)); err == nil {
				t.Errorf("invalid arguments accepted")
			}
		})
	}
	if s, _ := validation.Compile(compiled); s != compiled {
		t.Errorf("Compile(*Schema) returned a different schema")
	}
}

func TestCompileErrors(t *testing.T) {
	t.Parallel()
	tests := map[string]any{
		"nil":              nil,
		"not JSON":         `{"type": `,
		"not marshalable":  map[string]any{"f": func() {}},
		"bad keyword type": `{"type": 42}`,
		"bad regex":        `{"pattern": "(?<=x)y"}`,
		"self ref loop":    `{"$ref": "#"}`,
	}
	for name, schema := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s, err := validation.Compile(schema)
			if err == nil {
				t.Fatalf("Compile(%v) = %v, want an error", schema, s)
			}
			if !strings.HasPrefix(err.Error(), "validation: ") {
				t.Errorf("error %q lacks the validation: prefix", err)
			}
		})
	}
	if _, err := validation.Compile(citySchema, validation.WithDefaultDraft(validation.Draft(3))); err == nil {
		t.Errorf("Compile with an unknown default draft succeeded")
	}
}

// TestRemoteRefsAreRefused proves compilation loads nothing: a loopback
// server that would serve the referenced schema sees no request, and a file
// holding it is not read (if it were, the schema would compile).
func TestRemoteRefsAreRefused(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	handler := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		w.Write([]byte(`{"type": "string"}`))
	})
	plain := httptest.NewServer(handler)
	defer plain.Close()
	tls := httptest.NewTLSServer(handler)
	defer tls.Close()

	dir := t.TempDir()
	file := filepath.Join(dir, "defs.json")
	if err := os.WriteFile(file, []byte(`{"type": "string"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	refs := map[string]string{
		"http":          plain.URL + "/defs.json",
		"https":         tls.URL + "/defs.json",
		"file":          "file://" + file,
		"relative":      "defs.json",
		"$schema http":  "",
		"$id then rel.": "",
	}
	for name, ref := range refs {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			schema := `{"type": "object", "properties": {"x": {"$ref": ` + quote(ref) + `}}}`
			switch name {
			case "$schema http":
				schema = `{"$schema": ` + quote(plain.URL+"/meta.json") + `, "type": "object"}`
			case "$id then rel.":
				schema = `{"$id": ` + quote(plain.URL+"/root.json") + `, "properties": {"x": {"$ref": "defs.json"}}}`
			}
			s, err := validation.Compile(schema)
			if name == "$schema http" {
				// An unknown meta-schema is ignored, not fetched: the
				// schema compiles with the default draft.
				if err != nil || s.IgnoredMetaSchema() != plain.URL+"/meta.json" {
					t.Errorf("Compile(%s) = %v; want it compiled with the $schema ignored", schema, err)
				}
				return
			}
			if !errors.Is(err, validation.ErrRefused) {
				t.Errorf("Compile(%s) = %v, want an error wrapping ErrRefused", schema, err)
			}
		})
	}
	t.Cleanup(func() {
		if n := hits.Load(); n != 0 {
			t.Errorf("the loopback servers received %d requests, want 0", n)
		}
	})
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestWithResource(t *testing.T) {
	t.Parallel()
	schema := `{"type": "object", "properties": {"unit": {"$ref": "https://example.test/defs.json#/$defs/unit"}}}`
	defs := map[string]any{"$defs": map[string]any{"unit": map[string]any{"enum": []any{"c", "f"}}}}
	s, err := validation.Compile(schema, validation.WithResource("https://example.test/defs.json", defs))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.ValidateJSON([]byte(`{"unit": "c"}`)); err != nil {
		t.Errorf("valid value rejected: %v", err)
	}
	if err := s.ValidateJSON([]byte(`{"unit": "k"}`)); err == nil {
		t.Errorf("value outside the referenced enum accepted")
	}
}

func TestDraftSelection(t *testing.T) {
	t.Parallel()
	// dependentRequired exists from 2019-09 on; draft-07 ignores it.
	body := `"type": "object", "dependentRequired": {"a": ["b"]}`
	args := []byte(`{"a": 1}`)
	tests := []struct {
		name      string
		schema    string
		opts      []validation.Option
		wantValid bool
	}{
		{"default is draft-07", `{` + body + `}`, nil, true},
		{"default draft 2020", `{` + body + `}`, []validation.Option{validation.WithDefaultDraft(validation.Draft2020)}, false},
		{"default draft 2019", `{` + body + `}`, []validation.Option{validation.WithDefaultDraft(validation.Draft2019)}, false},
		{"$schema 2020 wins over default", `{"$schema": "https://json-schema.org/draft/2020-12/schema", ` + body + `}`, nil, false},
		{"$schema 7 wins over default", `{"$schema": "http://json-schema.org/draft-07/schema#", ` + body + `}`,
			[]validation.Option{validation.WithDefaultDraft(validation.Draft2020)}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := validation.Compile(tc.schema, tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			if got := s.ValidateJSON(args) == nil; got != tc.wantValid {
				t.Errorf("ValidateJSON(%s) valid = %v, want %v", args, got, tc.wantValid)
			}
		})
	}
}

// TestFormatsAssertedForEveryDraft: format is an assertion whatever the
// draft, for known formats; unknown formats are ignored.
func TestFormatsAssertedForEveryDraft(t *testing.T) {
	t.Parallel()
	for _, d := range []validation.Draft{validation.Draft4, validation.Draft6, validation.Draft7, validation.Draft2019, validation.Draft2020} {
		t.Run(d.String(), func(t *testing.T) {
			t.Parallel()
			s, err := validation.Compile(`{"properties": {"id": {"format": "uuid"}, "day": {"format": "date"}, "x": {"format": "no-such-format"}}}`,
				validation.WithDefaultDraft(d))
			if err != nil {
				t.Fatal(err)
			}
			if err := s.ValidateJSON([]byte(`{"id": "6ba7b810-9dad-11d1-80b4-00c04fd430c8", "day": "2025-01-31", "x": "anything"}`)); err != nil {
				t.Errorf("valid formats rejected: %v", err)
			}
			err = s.ValidateJSON([]byte(`{"id": "not-a-uuid", "day": "2025-02-30"}`))
			var ve *validation.Error
			if !errors.As(err, &ve) || len(ve.Violations) != 2 {
				t.Errorf("ValidateJSON(bad uuid and date) = %v, want 2 format violations", err)
			}
		})
	}
}

func TestMarshalJSONAndMap(t *testing.T) {
	t.Parallel()
	s, err := validation.Compile(`{"type": "object",  "properties": {"n": {"type": "integer", "maximum": 12345678901234567890}}}`)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(s)
	if err != nil || string(b) != `{"type":"object","properties":{"n":{"type":"integer","maximum":12345678901234567890}}}` {
		t.Errorf("json.Marshal(schema) = %s, %v; want the compact schema with the number intact", b, err)
	}
	m := s.Map()
	if n := m["properties"].(map[string]any)["n"].(map[string]any)["maximum"]; n != json.Number("12345678901234567890") {
		t.Errorf("Map() maximum = %#v, want the exact json.Number", n)
	}
	m["type"] = "changed"
	if s.Map()["type"] != "object" {
		t.Errorf("modifying a Map() result changed the schema")
	}
}
