package jsonptr

import (
	"slices"
	"testing"
)

func TestEscapeRoundTrip(t *testing.T) {
	t.Parallel()
	for _, tok := range []string{"", "a", "a/b", "~", "~1", "a~/b", "é/~0"} {
		if got := Unescape(Escape(tok)); got != tok {
			t.Errorf("Unescape(Escape(%q)) = %q", tok, got)
		}
	}
	if got := Escape("a/b~c"); got != "a~1b~0c" {
		t.Errorf("Escape(%q) = %q, want %q", "a/b~c", got, "a~1b~0c")
	}
	if got := Unescape("~01"); got != "~1" {
		t.Errorf("Unescape(%q) = %q, want %q (~0 is unescaped last)", "~01", got, "~1")
	}
}

func TestTokensAndFromTokens(t *testing.T) {
	t.Parallel()
	tests := []struct {
		p    string
		toks []string
	}{
		{"", nil},
		{"/a", []string{"a"}},
		{"/a~1b/0/~0", []string{"a/b", "0", "~"}},
		{"/", []string{""}},
	}
	for _, tc := range tests {
		if got := Tokens(tc.p); !slices.Equal(got, tc.toks) {
			t.Errorf("Tokens(%q) = %q, want %q", tc.p, got, tc.toks)
		}
		if got := FromTokens(tc.toks); got != tc.p {
			t.Errorf("FromTokens(%q) = %q, want %q", tc.toks, got, tc.p)
		}
	}
}

func TestParentLastWithin(t *testing.T) {
	t.Parallel()
	if got := Parent("/a/b~1c"); got != "/a" {
		t.Errorf("Parent = %q, want /a", got)
	}
	if got := Parent("/a"); got != "" {
		t.Errorf("Parent(/a) = %q, want root", got)
	}
	if got := Parent(""); got != "" {
		t.Errorf("Parent(root) = %q, want root", got)
	}
	if got := Last("/a/b~1c"); got != "b/c" {
		t.Errorf("Last = %q, want b/c", got)
	}
	for _, tc := range []struct {
		p, anc string
		want   bool
	}{
		{"/a/b", "/a", true}, {"/a", "/a", true}, {"/ab", "/a", false}, {"/a", "", true}, {"", "/a", false},
	} {
		if got := IsWithin(tc.p, tc.anc); got != tc.want {
			t.Errorf("IsWithin(%q, %q) = %v, want %v", tc.p, tc.anc, got, tc.want)
		}
	}
	if got := Append("/a", "b/c"); got != "/a/b~1c" {
		t.Errorf("Append = %q", got)
	}
	if got := AppendIndex("/a", 3); got != "/a/3" {
		t.Errorf("AppendIndex = %q", got)
	}
}

func TestGetLocateSet(t *testing.T) {
	t.Parallel()
	v := map[string]any{"a": []any{map[string]any{"b/c": 1}, "x"}, "": "empty"}
	if got, ok := Get(v, "/a/0/b~1c"); !ok || got != 1 {
		t.Errorf("Get = %v, %v, want 1, true", got, ok)
	}
	if got, ok := Get(v, "/"); !ok || got != "empty" {
		t.Errorf("Get(/) = %v, %v, want the empty key", got, ok)
	}
	for _, p := range []string{"/a/2", "/a/-1", "/a/x", "/nope", "a", "/a/1/z"} {
		if _, ok := Get(v, p); ok {
			t.Errorf("Get(%q) found something, want not found", p)
		}
	}
	c, key, ok := Locate(v, "/a/1")
	if !ok || key != "1" {
		t.Fatalf("Locate(/a/1) = %v, %q, %v", c, key, ok)
	}
	if !Set(c, key, "y") || v["a"].([]any)[1] != "y" {
		t.Errorf("Set did not replace the element: %v", v)
	}
	if _, _, ok := Locate(v, "/a/5"); ok {
		t.Error("Locate(/a/5) found an element past the end")
	}
	if _, _, ok := Locate(v, ""); ok {
		t.Error("Locate(root) = ok, want false: the root has no container")
	}
	if Set([]any{1}, "3", 0) {
		t.Error("Set past the end of an array reported success")
	}
}
