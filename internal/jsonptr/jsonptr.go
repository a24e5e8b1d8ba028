// Package jsonptr handles RFC 6901 JSON Pointers over decoded JSON values
// (map[string]any, []any and scalars, as encoding/json produces them). It is
// the one place toolguard escapes, splits, resolves and edits pointers.
package jsonptr

import (
	"strconv"
	"strings"
)

// Escape escapes one reference token: "~" becomes "~0" and "/" becomes
// "~1".
func Escape(token string) string {
	if !strings.ContainsAny(token, "~/") {
		return token
	}
	return strings.ReplaceAll(strings.ReplaceAll(token, "~", "~0"), "/", "~1")
}

// Unescape reverses Escape.
func Unescape(token string) string {
	if !strings.Contains(token, "~") {
		return token
	}
	return strings.ReplaceAll(strings.ReplaceAll(token, "~1", "/"), "~0", "~")
}

// Append returns the pointer to member key of the value at p.
func Append(p, key string) string { return p + "/" + Escape(key) }

// AppendIndex returns the pointer to element i of the array at p.
func AppendIndex(p string, i int) string { return p + "/" + strconv.Itoa(i) }

// Parent returns the pointer of p's parent: "" for the root's children and
// for the root itself.
func Parent(p string) string {
	return p[:max(strings.LastIndexByte(p, '/'), 0)]
}

// Last returns the unescaped last token of p ("" for the root).
func Last(p string) string {
	return Unescape(p[strings.LastIndexByte(p, '/')+1:])
}

// Tokens returns the unescaped reference tokens of p: none for the root "".
func Tokens(p string) []string {
	if p == "" {
		return nil
	}
	toks := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for i, t := range toks {
		toks[i] = Unescape(t)
	}
	return toks
}

// FromTokens builds a pointer from unescaped tokens.
func FromTokens(toks []string) string {
	var b strings.Builder
	for _, t := range toks {
		b.WriteByte('/')
		b.WriteString(Escape(t))
	}
	return b.String()
}

// IsWithin reports whether the value at p lies at or below the value at
// ancestor.
func IsWithin(p, ancestor string) bool {
	return p == ancestor || strings.HasPrefix(p, ancestor+"/")
}

// Get resolves p in v. It reports false when p is not a pointer or names
// nothing in v.
func Get(v any, p string) (any, bool) {
	if p == "" {
		return v, true
	}
	if p[0] != '/' {
		return nil, false
	}
	return GetTokens(v, Tokens(p))
}

// GetTokens resolves unescaped tokens in v.
func GetTokens(v any, toks []string) (any, bool) {
	for _, t := range toks {
		var ok bool
		if v, ok = child(v, t); !ok {
			return nil, false
		}
	}
	return v, true
}

// child returns member or element token of container.
func child(container any, token string) (any, bool) {
	switch c := container.(type) {
	case map[string]any:
		v, ok := c[token]
		return v, ok
	case []any:
		if i, err := strconv.Atoi(token); err == nil && i >= 0 && i < len(c) {
			return c[i], true
		}
	}
	return nil, false
}

// Locate finds the object or array holding the value at p, a pointer other
// than the root, and the value's key (or index, as a string) in it.
func Locate(v any, p string) (container any, key string, ok bool) {
	toks := Tokens(p)
	if len(toks) == 0 {
		return nil, "", false
	}
	container, ok = GetTokens(v, toks[:len(toks)-1])
	if !ok {
		return nil, "", false
	}
	key = toks[len(toks)-1]
	_, ok = child(container, key)
	return container, key, ok
}

// Set stores x under key in container, an object or an array (key an index
// within it). It reports whether it did.
func Set(container any, key string, x any) bool {
	switch c := container.(type) {
	case map[string]any:
		c[key] = x
		return true
	case []any:
		if i, err := strconv.Atoi(key); err == nil && i >= 0 && i < len(c) {
			c[i] = x
			return true
		}
	}
	return false
}
