// Package injected holds what both stages do with the injected arguments of
// a tool call — properties the program supplies at run time and the model
// must neither see nor set: drop the values a model sent for them, and keep
// violations that would quote those values out of what is reported.
package injected

import (
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/toolguard/toolguard/internal/exactjson"
	"github.com/toolguard/toolguard/internal/jsonptr"
	"github.com/toolguard/toolguard/validation"
)

// Drop removes the top-level properties names from args, a JSON object,
// and every key that matches one without regard to case ("USER_ID" or
// "uſer_id" for "user_id", as strings.EqualFold): Go's encoding/json, on
// either side of an MCP connection, decodes such a key into the same field.
// Arguments that are a JSON string holding such an object (double-encoded,
// which the default coercions decode: repair.DoubleEncoded) lose them too,
// and stay double-encoded. It returns the arguments without them and the
// JSON Pointers of the keys it removed, sorted; args itself and nil when
// there was none, or when args is not a JSON object (nothing can be
// removed from it: see Redact).
func Drop(args string, names []string) (string, []string) {
	if len(names) == 0 || !mayHold(args, names) {
		return args, nil
	}
	// Blanks around the value are trimmed as validation trims them
	// (bytes.TrimSpace: Unicode blanks too, which encoding/json refuses),
	// so that arguments validation reads as an object are one here.
	d, err := exactjson.Decode([]byte(strings.TrimSpace(args)))
	if err != nil {
		return args, nil
	}
	if s, ok := d.(string); ok {
		inner, paths := Drop(s, names)
		if len(paths) == 0 {
			return args, nil
		}
		out, err := exactjson.Encode(inner)
		if err != nil {
			return `"{}"`, paths // a string always encodes; never keep a forged value
		}
		return string(out), paths
	}
	v, ok := d.(map[string]any)
	if !ok || v == nil {
		return args, nil
	}
	var paths []string
	for k := range v {
		if isInjected(k, names) {
			delete(v, k)
			paths = append(paths, "/"+jsonptr.Escape(k))
		}
	}
	if len(paths) == 0 {
		return args, nil
	}
	slices.Sort(paths)
	out, err := exactjson.Encode(v)
	if err != nil {
		return "{}", paths // decoded JSON always encodes; never keep a forged value
	}
	return string(out), paths
}

// mayHold is a cheap test that args might have one of names as a key: each
// name must appear in the text, in ASCII and unescaped; text with a JSON
// escape or a byte beyond ASCII may hold a key that decodes, or folds
// (Unicode case folding: "ſ" is "s", "K" is "k"), to a name.
func mayHold(args string, names []string) bool {
	if strings.Contains(args, `\`) {
		return true
	}
	for i := 0; i < len(args); i++ {
		if args[i] >= utf8.RuneSelf {
			return true
		}
	}
	lower := strings.ToLower(args)
	for _, n := range names {
		if strings.Contains(lower, strings.ToLower(n)) {
			return true
		}
	}
	return false
}

// isInjected reports whether the key is one of names, without regard to
// case.
func isInjected(key string, names []string) bool {
	for _, n := range names {
		if strings.EqualFold(key, n) {
			return true
		}
	}
	return false
}

// Redact returns e without the violations at (or below) the injected
// properties names, and with no model text quoted at the root (arguments
// that are not a JSON object may hold a forged value that Drop could not
// remove). It returns nil when no violation is left, and e itself when
// nothing changed.
func Redact(e *validation.Error, names []string) *validation.Error {
	if e == nil || len(names) == 0 {
		return e
	}
	kept := make([]validation.Violation, 0, len(e.Violations))
	changed := false
	for _, v := range e.Violations {
		if At(v.Path, names) {
			changed = true
			continue
		}
		if v.Path == "" && v.Got != "" {
			v.Got = ""
			changed = true
		}
		kept = append(kept, v)
	}
	if !changed {
		return e
	}
	if len(kept) == 0 && e.Omitted == 0 {
		return nil
	}
	out := *e
	out.Violations = kept
	return &out
}

// At reports whether the JSON Pointer path is one of the properties names
// (without regard to case, as Drop) or below one.
func At(path string, names []string) bool {
	rest, ok := strings.CutPrefix(path, "/")
	if !ok {
		return false
	}
	first, _, _ := strings.Cut(rest, "/")
	return isInjected(jsonptr.Unescape(first), names)
}
