package validation_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/validation"
)

// TestFailingAlternativesShareOnePreview: the violations of 2,000 failing
// alternatives at one path share one preview of the value.
func TestFailingAlternativesShareOnePreview(t *testing.T) {
	t.Parallel()
	alts := make([]string, 2000)
	for i := range alts {
		alts[i] = fmt.Sprintf(`{"const": %d}`, i)
	}
	s, err := validation.Compile(`{"properties": {"x": {"anyOf": [` + strings.Join(alts, ",") + `]}}}`)
	if err != nil {
		t.Fatal(err)
	}
	x := make(map[string]any, 50)
	for i := range 50 {
		x[fmt.Sprintf("k%02d", i)] = json.Number("1")
	}
	vs := violations(t, s, string(must(json.Marshal(map[string]any{"x": x}))))
	if len(vs) != 1000 || vs[0].Got != vs[999].Got || !strings.HasPrefix(vs[0].Got, `{"k00":1,"k01":1,`) {
		t.Errorf("%d violations, first Got %.40s, want 1000 listed sharing one preview", len(vs), vs[0].Got)
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
