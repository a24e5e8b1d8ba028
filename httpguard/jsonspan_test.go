package httpguard

import (
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// spanSeeds are the inputs the span walker is held to its old self on:
// every recorded exchange under testdata/wire, whole, and edge cases of
// the eight-byte reads (quotes and backslashes on either side of a
// boundary, runs of backslashes, strings that end the input).
func spanSeeds(tb testing.TB) []string {
	tb.Helper()
	var out []string
	err := filepath.WalkDir(wireDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(path, ".md") {
			return err
		}
		b, err := os.ReadFile(path)
		out = append(out, string(b))
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
	for n := 0; n <= 17; n++ {
		pad := strings.Repeat("a", n)
		out = append(out,
			`"`+pad+`"`, `"`+pad+`\"`+pad+`"`, `"`+pad+`\\"`, `"`+pad+`\\\"x"`, `"`+pad+`\`, `"`+pad, `"`+pad+"\xff\"",
			`{"`+pad+`":[`+pad+`"]}",{"\\":1}]}`, `[`+pad+`{"a\"}":"]"}`+pad+`]`, `{"k":"`+pad+`\u0022"}`)
	}
	return append(out, ``, `"`, `\`, `{`, `[`, `}`, `]`, `[}`, `{]`, `{"a":1}}`, `[[]`, `tru`, ` 1 `, `1,`, `{"a" 1}`, `{"a":}`,
		`{,}`, `[1,]`, `{"a":1,}`, "\"a\x00b\"", `{"a":1,"a":2}`, `{"A":1}`, `{"\u0061":1}`, `{"a\u0000":1}`)
}

// randomJSONish returns n strings of up to 48 bytes over the bytes that
// steer the walker, drawn from a fixed seed: a deterministic sweep of the
// shapes a hand-picked list misses.
func randomJSONish(n int) []string {
	const alphabet = `"\{}[]:, a1n` + "\x00\xe9"
	r := rand.New(rand.NewPCG(37, 3))
	out := make([]string, n)
	for i := range out {
		b := make([]byte, r.IntN(49))
		for j := range b {
			b[j] = alphabet[r.IntN(len(alphabet))]
		}
		out[i] = string(b)
	}
	return out
}

// randomDocs returns n valid JSON objects drawn from a fixed seed, their
// keys from a few that collide (spelled alike, with escapes, in another
// case), nested a few levels, with space here and there: the lookups'
// edge cases in bodies that parse.
func randomDocs(n int) []string {
	keys := []string{`"id"`, `"ID"`, `"i\u0064"`, `"name"`, `"Name"`, `"type"`, `"x"`, `"\u00e9"`, `"é"`, `"K"`, `"\u212a"`, `"a\"b"`, `""`}
	scalars := []string{`1`, `-0.5e3`, `true`, `null`, `"s"`, `"a\"}]b"`, `"\\"`, `"{\"x\":[1]}"`, `"12345678901234567"`}
	r := rand.New(rand.NewPCG(37, 4))
	space := func() string { return []string{"", "", " ", "\n\t"}[r.IntN(4)] }
	var value func(depth int) string
	value = func(depth int) string {
		switch k := r.IntN(4); {
		case depth > 3 || k == 0:
			return scalars[r.IntN(len(scalars))]
		case k == 1:
			var es []string
			for range r.IntN(4) {
				es = append(es, space()+value(depth+1)+space())
			}
			return "[" + strings.Join(es, ",") + "]"
		}
		var ms []string
		for range r.IntN(5) {
			ms = append(ms, space()+keys[r.IntN(len(keys))]+space()+":"+space()+value(depth+1)+space())
		}
		return "{" + strings.Join(ms, ",") + "}"
	}
	out := make([]string, n)
	for i := range out {
		for !strings.HasPrefix(out[i], "{") {
			out[i] = value(0)
		}
	}
	return out
}

// checkSpanWalker holds each primitive of the span walker to the old one
// (jsonspan_old_test.go) at every index of s: the same ends, the same
// errors.
func checkSpanWalker(t *testing.T, s string) {
	b := []byte(s)
	for i := 0; i <= len(b); i++ {
		if got, gerr := stringEnd(b, i); true {
			want, werr := oldStringEnd(b, i)
			if got != want || (gerr == nil) != (werr == nil) {
				t.Fatalf("stringEnd(%q, %d) = %d, %v; before %d, %v", s, i, got, gerr, want, werr)
			}
		}
		if got, gerr := valueEnd(b, i); true {
			want, werr := oldValueEnd(b, i)
			if got != want || (gerr == nil) != (werr == nil) {
				t.Fatalf("valueEnd(%q, %d) = %d, %v; before %d, %v", s, i, got, gerr, want, werr)
			}
		}
	}
}

// checkDoc holds parseBody, parseDoc and a doc's readers, its index of
// nests at work, to the old walker on s: the same root, and in every
// object and array of a body that parses, the same ends, elements and
// lookups of each key it holds (and of the key in another case, and an
// absent key), one key at a time and all at once (fields).
func checkDoc(t *testing.T, s string) {
	b := []byte(s)
	want, werr := oldParseBody(b)
	if got, gerr := parseBody(b); got != want || (gerr == nil) != (werr == nil) {
		t.Fatalf("parseBody(%q) = %v, %v; before %v, %v", s, got, gerr, want, werr)
	}
	d, got, gerr := parseDoc(b)
	if got != want || (gerr == nil) != (werr == nil) {
		t.Fatalf("parseDoc(%q) = %v, %v; before %v, %v", s, got, gerr, want, werr)
	}
	if gerr != nil {
		return
	}
	for _, n := range d.nests {
		i := int(n.start)
		if end, err := d.valueEnd(i); err != nil || end != int(n.end) {
			t.Fatalf("%q: nest %v: doc.valueEnd = %d, %v", s, n, end, err)
		}
		if end, err := oldValueEnd(b, i); err != nil || end != int(n.end) {
			t.Fatalf("%q: nest %v: before, valueEnd = %d, %v", s, n, end, err)
		}
		sp := span{i, int(n.end)}
		if b[i] == '[' {
			ges, gerr := d.arrayElems(sp)
			wes, werr := oldArrayElems(b, sp)
			if fmt.Sprint(ges) != fmt.Sprint(wes) || fmt.Sprint(gerr) != fmt.Sprint(werr) {
				t.Fatalf("%q: arrayElems(%v) = %v, %v; before %v, %v", s, sp, ges, gerr, wes, werr)
			}
			continue
		}
		keys := []string{"absent"}
		if ms, err := oldObjectMembers(b, sp); err == nil {
			for _, m := range ms {
				keys = append(keys, m.key, strings.ToUpper(m.key))
			}
		}
		out := make([]found, len(keys))
		d.fields(sp, keys, out)
		for j, key := range keys {
			wv, wok, werr := oldLookup(b, sp, key)
			gv, gok, gerr := d.lookup(sp, key)
			if gv != wv || gok != wok || fmt.Sprint(gerr) != fmt.Sprint(werr) {
				t.Fatalf("%q: lookup(%v, %q) = %v, %v, %v; before %v, %v, %v", s, sp, key, gv, gok, gerr, wv, wok, werr)
			}
			if f := out[j]; f.v != wv || f.ok != wok || fmt.Sprint(f.err) != fmt.Sprint(werr) {
				t.Fatalf("%q: fields(%v, %q) = %v, %v, %v; before %v, %v, %v", s, sp, key, f.v, f.ok, f.err, wv, wok, werr)
			}
		}
	}
}

// The span walker reads every recorded exchange, every edge case and a
// sweep of random inputs as it did before it was made fast.
func TestSpanWalkerAsBefore(t *testing.T) {
	t.Parallel()
	for _, s := range append(append(spanSeeds(t), randomJSONish(20000)...), randomDocs(5000)...) {
		checkSpanWalker(t, s)
		checkDoc(t, s)
	}
}

// FuzzSpanWalker: checkSpanWalker on any input.
func FuzzSpanWalker(f *testing.F) {
	for _, s := range append(spanSeeds(f), randomDocs(50)...) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 4096 {
			return // every index is checked: quadratic
		}
		checkSpanWalker(t, s)
		checkDoc(t, s)
	})
}
