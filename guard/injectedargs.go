package guard

// The injected-argument rules both stages apply to a tool call: injected
// arguments are properties the program supplies at run time ([WithInjectedArgs])
// and the model must neither see nor set. A value the model sent for one is
// dropped ([DropInjected]), arguments that may hide one are withheld from
// program-side records ([WithholdInjected]), and violations that would quote
// one are kept out of what is reported ([RedactInjected]).

import (
	"bytes"
	"encoding/json"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/toolguard/toolguard/internal/exactjson"
	"github.com/toolguard/toolguard/internal/jsonptr"
	"github.com/toolguard/toolguard/validation"
)

// DropInjected removes the top-level properties names from args, a JSON object,
// and every key that matches one without regard to case ("USER_ID" or
// "uſer_id" for "user_id", as strings.EqualFold): Go's encoding/json, on
// either side of an MCP connection, decodes such a key into the same field.
// Arguments that are a JSON string holding such an object (double-encoded,
// which the default coercions decode: repair.DoubleEncoded) lose them too,
// and stay double-encoded. It returns the arguments without them and the
// JSON Pointers of the keys it removed, sorted; args itself and nil when
// there was none, or when args is not a JSON object (nothing can be
// removed from it: see WithholdInjected and RedactInjected).
//
// The other members are kept as they are, in compact form: a key given
// twice stays twice, for validation to refuse (decoding and encoding the
// object again would keep one of the two values silently, as encoding/json
// keeps the last), and numbers keep their digits.
func DropInjected(args string, names []string) (string, []string) {
	if len(names) == 0 || !mayHold(args, names) {
		return args, nil
	}
	// Blanks around the value are trimmed as validation trims them
	// (bytes.TrimSpace: Unicode blanks too, which encoding/json refuses),
	// so that arguments validation reads as an object are one here.
	trimmed := strings.TrimSpace(args)
	if strings.HasPrefix(trimmed, `"`) {
		d, err := exactjson.Decode([]byte(trimmed))
		s, ok := d.(string)
		if err != nil || !ok {
			return args, nil
		}
		inner, paths := DropInjected(s, names)
		if len(paths) == 0 {
			return args, nil
		}
		out, err := exactjson.Encode(inner)
		if err != nil {
			return `"{}"`, paths // a string always encodes; never keep a forged value
		}
		return string(out), paths
	}
	out, paths, ok := dropMembers([]byte(trimmed), names)
	if !ok || len(paths) == 0 {
		return args, nil
	}
	return string(out), paths
}

// dropMembers returns obj, the text of one JSON object, without its
// members named (without regard to case) one of names, the others as they
// are (compacted), and the JSON Pointers of those it removed, sorted, each once; false
// when obj is not one JSON object.
func dropMembers(obj []byte, names []string) ([]byte, []string, bool) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, nil, false
	}
	var kept [][]byte
	var paths []string
	for dec.More() {
		start := dec.InputOffset() // after the previous value, before its comma
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, false
		}
		key, _ := tok.(string) // encoding/json yields a string here
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return nil, nil, false
		}
		if isInjected(key, names) {
			paths = append(paths, "/"+jsonptr.Escape(key))
			continue
		}
		kept = append(kept, bytes.TrimLeft(obj[start:dec.InputOffset()], ", \t\r\n"))
	}
	if _, err := dec.Token(); err != nil { // }
		return nil, nil, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, nil, false
	}
	slices.Sort(paths)
	paths = slices.Compact(paths)
	joined := slices.Concat([]byte("{"), bytes.Join(kept, []byte(",")), []byte("}"))
	var out bytes.Buffer
	out.Grow(len(joined))
	if err := json.Compact(&out, joined); err != nil {
		return nil, nil, false // unreachable: members the decoder read
	}
	return out.Bytes(), paths, true
}

// WithheldArgs is what [WithholdInjected] puts in place of arguments that are not a
// JSON object and may hold a value for an injected argument. It is not
// JSON: a call whose arguments it is never validates, so never runs.
const WithheldArgs = "<withheld: not a JSON object, and may hold a value the program supplies>"

// WithholdInjected is [DropInjected] for arguments that are kept where the program reads
// them (a Step, a checkpoint, an interrupt): arguments from which no key
// can be dropped — not a JSON object, nor a JSON string holding one:
// truncated JSON, Python literals, an array, data after the object — that
// mention one of names are replaced whole by [WithheldArgs], and reported at
// the root ("", the whole arguments). A name is mentioned as Drop matches
// keys: without regard to case, and with JSON escapes read ("\u0075ser_id"),
// once or twice over (double-encoded text), so that nothing a lenient
// parser could read as the key is kept.
func WithholdInjected(args string, names []string) (string, []string) {
	out, paths := DropInjected(args, names)
	if len(paths) > 0 || len(names) == 0 || !mayHold(args, names) || isObjectOrString(args) {
		return out, paths
	}
	if !mentions(args, names) {
		return args, nil
	}
	return WithheldArgs, []string{""}
}

// isObjectOrString reports whether args is one JSON object, or a JSON string
// holding one (blanks around either allowed).
func isObjectOrString(args string) bool {
	t := strings.TrimSpace(args)
	if strings.HasPrefix(t, `"`) {
		d, err := exactjson.Decode([]byte(t))
		s, ok := d.(string)
		if err != nil || !ok {
			return false
		}
		t = strings.TrimSpace(s)
	}
	return strings.HasPrefix(t, "{") && json.Valid([]byte(t))
}

// mentions reports whether text holds one of names without regard to
// case (Unicode simple folding, as strings.EqualFold), reading JSON escapes
// in it up to twice.
func mentions(text string, names []string) bool {
	for range 3 {
		folded := fold(text)
		for _, n := range names {
			if strings.Contains(folded, fold(n)) {
				return true
			}
		}
		next := unescape(text)
		if next == text {
			break
		}
		text = next
	}
	return false
}

// fold maps every rune of s to the least rune it folds to, so that two
// strings are equal under strings.EqualFold exactly when their folds are
// equal.
func fold(s string) string {
	return strings.Map(func(r rune) rune {
		least := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			least = min(least, f)
		}
		return least
	}, s)
}

// unescape reads the JSON escapes of s leniently: \uXXXX (a surrogate pair
// too) as its rune, a backslash before any other character as that
// character.
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		if r, n := hexRune(s[i+1:]); n > 0 {
			i += n // at the escape's last digit
			if utf16.IsSurrogate(r) && strings.HasPrefix(s[i+1:], `\`) {
				if r2, n2 := hexRune(s[i+2:]); n2 > 0 {
					if pair := utf16.DecodeRune(r, r2); pair != unicode.ReplacementChar {
						r = pair
						i += 1 + n2
					}
				}
			}
			b.WriteRune(r) // a lone surrogate as U+FFFD
			continue
		}
		b.WriteByte(s[i+1])
		i++
	}
	return b.String()
}

// hexRune reads "uXXXX" at the start of s; n is the bytes read, 0 if none.
func hexRune(s string) (rune, int) {
	if len(s) < 5 || s[0] != 'u' {
		return 0, 0
	}
	v, err := strconv.ParseUint(s[1:5], 16, 32)
	if err != nil {
		return 0, 0
	}
	return rune(v), 5
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

// RedactInjected returns e without the violations at (or below) the injected
// properties names, and with no model text quoted at the root (arguments
// that are not a JSON object may hold a forged value that DropInjected could not
// remove). It returns nil when no violation is left, and e itself when
// nothing changed.
func RedactInjected(e *validation.Error, names []string) *validation.Error {
	if e == nil || len(names) == 0 {
		return e
	}
	kept := make([]validation.Violation, 0, len(e.Violations))
	changed := false
	for _, v := range e.Violations {
		if IsInjectedPath(v.Path, names) {
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

// IsInjectedPath reports whether the JSON Pointer path is one of the properties names
// (without regard to case, as DropInjected) or below one.
func IsInjectedPath(path string, names []string) bool {
	rest, ok := strings.CutPrefix(path, "/")
	if !ok {
		return false
	}
	first, _, _ := strings.Cut(rest, "/")
	return isInjected(jsonptr.Unescape(first), names)
}
