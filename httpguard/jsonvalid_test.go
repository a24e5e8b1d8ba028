package httpguard

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// validJSON accepts exactly what json.Valid accepts.
func FuzzValidJSON(f *testing.F) {
	for _, s := range []string{
		``, ` `, `{}`, `[]`, ` {"a" : [1, -0.5e+3, "x\u00e9\"\\\/\b\f\n\r\t", true, false, null, {}]} `,
		`{"a":1,"a":2}`, `{"a":}`, `{"a"`, `{,}`, `[1,]`, `[,1]`, `{"a":1,}`, `{"a" 1}`, `{1:2}`, `[1 2]`, `"x`, `x`,
		`01`, `-`, `-0`, `1.`, `.5`, `1e`, `1e+`, `1E-2`, `+1`, `0x1`, `1.5e3.2`, `tru`, `truex`, `nul`, `[true false]`,
		"\"\x01\"", "\"a\xf3b\"", `"\ud83d"`, `"\u12g4"`, `"\x"`, `"\u12"`, `{"a":1}}`, `[[]`, `[]]`, `{]`, `[}`,
		"\t[\n1\r]\n", "\u00a0{}", `{} {}`, `1 2`, `"a"  `,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := validJSON([]byte(s)), json.Valid([]byte(s)); got != want {
			t.Fatalf("validJSON(%q) = %v, json.Valid %v", s, got, want)
		}
	})
}

// The depth encoding/json refuses is the depth validJSON refuses.
func TestValidJSONDepth(t *testing.T) {
	for _, n := range []int{1, 63, 64, 65, maxNesting - 1, maxNesting, maxNesting + 1} {
		for _, open := range []string{"[", `{"a":`} {
			closer := map[string]string{"[": "]", `{"a":`: "}"}[open]
			s := strings.Repeat(open, n) + "1" + strings.Repeat(closer, n)
			if got, want := validJSON([]byte(s)), json.Valid([]byte(s)); got != want {
				t.Errorf("%d levels of %s: validJSON %v, json.Valid %v", n, open, got, want)
			}
		}
	}
	if validJSON([]byte(strings.Repeat("[", maxNesting+1) + strings.Repeat("]", maxNesting+1))) {
		t.Errorf("validJSON accepts %d levels", maxNesting+1)
	}
}

// BenchmarkValidJSON checks a recorded request and answer of every
// protocol, by validJSON and by json.Valid.
func BenchmarkValidJSON(b *testing.B) {
	var docs [][]byte
	for _, dir := range []string{"openai-chat", "openai-responses", "anthropic", "gemini", "ollama", "bedrock"} {
		for _, name := range []string{"request.json", "accepted.json"} {
			d, err := os.ReadFile(filepath.Join("../testdata/wire", dir, name))
			if err != nil {
				b.Fatal(err)
			}
			docs = append(docs, d)
		}
	}
	for _, tc := range []struct {
		name  string
		valid func([]byte) bool
	}{{"validJSON", validJSON}, {"json.Valid", json.Valid}} {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				for _, d := range docs {
					if !tc.valid(d) {
						b.Fatal("not valid")
					}
				}
			}
		})
	}
}

// validJSON refuses a control byte in a string, and takes the bytes
// around it, wherever it falls among the eight bytes validString reads
// at once, as json.Valid does.
func TestValidJSONStringBytes(t *testing.T) {
	for _, c := range []byte{0x00, 0x01, 0x0a, 0x1f, ' ', '!', '"', '\\', 0x7f, 0x80, 0xff} {
		for n := 0; n <= 17; n++ {
			for _, s := range []string{`"` + strings.Repeat("a", n) + string(c) + `"`, `["` + strings.Repeat("é", n) + string(c) + `xxxxxxxx"]`} {
				if got, want := validJSON([]byte(s)), json.Valid([]byte(s)); got != want {
					t.Errorf("validJSON(%q) = %v, json.Valid %v", s, got, want)
				}
			}
		}
	}
}
