package validation_test

import (
	"strings"
	"testing"

	"github.com/toolguard/toolguard/validation"
)

// TestUnknownMetaSchema: a "$schema" toolguard does not know is ignored and
// the schema enforced with the default draft, rather than the schema
// refused (which would leave its tool unvalidated).
func TestUnknownMetaSchema(t *testing.T) {
	t.Parallel()
	// dependentRequired exists from 2019-09 on: it tells which draft ran.
	body := `"type": "object", "properties": {"a": {"type": "integer"}}, "dependentRequired": {"a": ["b"]}`
	tests := []struct {
		name, meta  string
		draft       validation.Draft
		wantIgnored bool
		wantDepReq  bool // dependentRequired enforced
	}{
		{"draft-07 with #", "http://json-schema.org/draft-07/schema#", validation.Draft2020, false, false},
		{"draft-07 without #", "http://json-schema.org/draft-07/schema", validation.Draft2020, false, false},
		{"draft-07 over https", "https://json-schema.org/draft-07/schema#", validation.Draft2020, false, false},
		{"2020-12", "https://json-schema.org/draft/2020-12/schema", validation.Draft7, false, true},
		{"latest", "https://json-schema.org/schema", validation.Draft7, false, true},
		{"draft-08 that never was, default 7", "http://json-schema.org/draft-08/schema#", validation.Draft7, true, false},
		{"custom meta-schema, default 2020", "https://example.com/my-meta.json", validation.Draft2020, true, true},
		{"not a URI", "draft7", validation.Draft7, true, false},
		{"empty", "", validation.Draft2019, true, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			schema := `{"$schema": ` + quote(tc.meta) + `, ` + body + `}`
			s, err := validation.Compile(schema, validation.WithDefaultDraft(tc.draft))
			if err != nil {
				t.Fatalf("Compile(%s) = %v, want it compiled", schema, err)
			}
			wantIgnored := ""
			if tc.wantIgnored {
				wantIgnored = tc.meta
			}
			if got := s.IgnoredMetaSchema(); got != wantIgnored {
				t.Errorf("IgnoredMetaSchema() = %q, want %q", got, wantIgnored)
			}
			if got := s.ValidateJSON([]byte(`{"a": 1}`)) != nil; got != tc.wantDepReq {
				t.Errorf("dependentRequired enforced = %v, want %v", got, tc.wantDepReq)
			}
			if err := s.ValidateJSON([]byte(`{"a": "x", "b": 1}`)); err == nil {
				t.Errorf("the schema's other keywords are not enforced")
			}
			if b, _ := s.MarshalJSON(); !strings.Contains(string(b), `"$schema"`) {
				t.Errorf("MarshalJSON = %s, want the schema as given, $schema included", b)
			}
		})
	}
	t.Run("a supplied meta-schema is used, not ignored", func(t *testing.T) {
		t.Parallel()
		meta := `{"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "https://example.test/meta", "$vocabulary": {"https://json-schema.org/draft/2020-12/vocab/core": true}}`
		s, err := validation.Compile(`{"$schema": "https://example.test/meta", "type": "string"}`, validation.WithResource("https://example.test/meta", meta))
		if err != nil || s.IgnoredMetaSchema() != "" {
			t.Fatalf("Compile with a supplied meta-schema = %v, ignored %q; want it used", err, s.IgnoredMetaSchema())
		}
	})
}
