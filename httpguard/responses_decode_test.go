package httpguard

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzResponsesUnquote holds the in-place string decoding of the
// Responses wire code (argument deltas, the release checks) to
// encoding/json: appendUnquoted writes what json.Unmarshal decodes,
// unquotedLen counts it, and jsonStringIs matches it and nothing else.
func FuzzResponsesUnquote(f *testing.F) {
	for _, s := range []string{`""`, `"{\"city\": \"Paris\"}"`, `"a\/b\\c\n\t\r\b\f"`, `"\u00e9t\u00e9"`, `"été"`, `"\ud83d\ude00"`, `"\ud800"`, "\"\xff\""} {
		f.Add(s, "x")
	}
	f.Fuzz(func(t *testing.T, q, other string) {
		var want string
		if json.Unmarshal([]byte(q), &want) != nil || !strings.HasPrefix(strings.TrimSpace(q), `"`) || strings.TrimSpace(q) != q {
			return
		}
		var got strings.Builder
		if err := appendUnquoted(&got, []byte(q)); err != nil || got.String() != want {
			t.Fatalf("appendUnquoted(%q) = %q, %v; encoding/json %q", q, got.String(), err, want)
		}
		if n, ok := unquotedLen([]byte(q)); ok && n != len(want) {
			t.Fatalf("unquotedLen(%q) = %d, want %d", q, n, len(want))
		}
		if !jsonStringIs([]byte(q), want) {
			t.Fatalf("jsonStringIs(%q, %q) = false", q, want)
		}
		if other != want && jsonStringIs([]byte(q), other) {
			t.Fatalf("jsonStringIs(%q, %q) = true; it decodes to %q", q, other, want)
		}
	})
}
