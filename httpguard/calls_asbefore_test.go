package httpguard

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// callsProtocols are the protocols whose sync calls reader is held to its
// old self, by their testdata/wire directory.
var callsProtocols = []struct {
	dir   string
	proto wireProtocol
}{
	{"openai-chat", chatWire{}},
	{"openai-responses", responsesWire{}},
	{"anthropic", messagesWire{}},
	{"gemini", geminiWire{}},
	{"ollama", ollamaWire{}},
	{"bedrock", bedrockWire{}},
}

// callsSeeds are the answers each reader is held to its old self on: every
// JSON file under testdata/wire, and of each protocol's recorded answers
// every variant one edit away in its tree (a member dropped, given twice,
// renamed in another case, or its value replaced by null, a string, a
// number, an empty array or object), every one-byte cut of them, and
// their keys given twice (keyTwins).
func callsSeeds(tb testing.TB) []string {
	tb.Helper()
	files, err := filepath.Glob(filepath.Join(wireDir, "*", "*.json"))
	if err != nil {
		tb.Fatal(err)
	}
	var out []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, string(b))
		if base := filepath.Base(f); base != "accepted.json" && base != "response.json" {
			continue
		}
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			continue
		}
		for _, m := range treeVariants(v) {
			mb, _ := json.Marshal(m)
			out = append(out, string(mb))
		}
		for i := range b {
			out = append(out, string(b[:i])+string(b[i+1:]))
		}
		out = append(out, keyTwins(b)...)
	}
	return out
}

// keyTwins returns b with, before each member of each of its objects, a
// member of the same key (a duplicate) and one of the key in upper case (a
// key differing only in case), each valued null and then 1; and each of
// readKeys given twice at the start of each object.
func keyTwins(b []byte) []string {
	d, _, err := parseDoc(b)
	if err != nil {
		return nil
	}
	var out []string
	for _, n := range d.nests {
		ms, err := oldObjectMembers(b, span{int(n.start), int(n.end)})
		if err != nil {
			continue
		}
		// Keys the readers ask for that the object may not have, given
		// twice: the error of a key the reader meets before any other.
		at := int(n.start) + 1
		for _, k := range readKeys {
			for _, twin := range []string{k, strings.ToUpper(k)} {
				out = append(out, string(b[:at])+`"`+k+`":null,"`+twin+`":null,`+string(b[at:]))
			}
		}
		for _, m := range ms {
			for _, k := range []string{m.key, strings.ToUpper(m.key)} {
				for _, v := range []string{"null", "1"} {
					kb, _ := json.Marshal(k)
					out = append(out, string(b[:m.k.start])+string(kb)+":"+v+","+string(b[m.k.start:]))
				}
			}
		}
	}
	return out
}

// readKeys are the keys the sync readers look up.
var readKeys = []string{"choices", "message", "function_call", "tool_calls", "type", "id", "function", "name", "arguments",
	"output", "call_id", "namespace", "execution", "content", "input", "candidates", "parts", "functionCall", "args",
	"toolUse", "toolUseId"}

// treeVariants returns v with one edit each, as listed at callsSeeds.
func treeVariants(v any) []any {
	var out []any
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			with := func(edit func(m map[string]any)) {
				m := make(map[string]any, len(v))
				for k2, x2 := range v {
					m[k2] = x2
				}
				edit(m)
				out = append(out, m)
			}
			with(func(m map[string]any) { delete(m, k) })
			with(func(m map[string]any) { delete(m, k); m[strings.ToUpper(k)] = x })
			with(func(m map[string]any) { m[strings.ToUpper(k[:1])+k[1:]] = x })
			for _, r := range []any{nil, "s", 1.0, []any{}, map[string]any{}} {
				with(func(m map[string]any) { m[k] = r })
			}
			for _, xv := range treeVariants(x) {
				with(func(m map[string]any) { m[k] = xv })
			}
		}
	case []any:
		for i, x := range v {
			for _, xv := range append(treeVariants(x), nil) {
				a := append([]any(nil), v...)
				a[i] = xv
				out = append(out, a)
			}
			out = append(out, append(append([]any(nil), v...), x)) // an element twice
		}
	}
	return out
}

// checkCallsAsBefore holds proto's calls to the old reader on b: the same
// calls, or the same error (its text, and whether it is unguardable and
// errJSON).
func checkCallsAsBefore(t *testing.T, proto wireProtocol, b []byte) {
	got, gerr := proto.calls(b)
	want, werr := oldCalls(proto)(b)
	if fmt.Sprint(gerr) != fmt.Sprint(werr) || isUnguardable(gerr) != isUnguardable(werr) || errors.Is(gerr, errJSON) != errors.Is(werr, errJSON) {
		t.Fatalf("%s.calls(%.300q) error = %v; before %v", proto.name(), b, gerr, werr)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s.calls(%.300q) = %q; before %q", proto.name(), b, got, want)
	}
}

// Each protocol's calls reads every seed as it did before the span walker
// was made fast.
func TestCallsAsBefore(t *testing.T) {
	t.Parallel()
	seeds := callsSeeds(t)
	for _, p := range callsProtocols {
		t.Run(p.dir, func(t *testing.T) {
			t.Parallel()
			for _, s := range seeds {
				checkCallsAsBefore(t, p.proto, []byte(s))
			}
		})
	}
}

// FuzzCallsAsBefore: checkCallsAsBefore, every protocol on any input.
func FuzzCallsAsBefore(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(wireDir, "*", "*.json"))
	for _, name := range files {
		if b, err := os.ReadFile(name); err == nil {
			f.Add(string(b))
		}
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, p := range callsProtocols {
			checkCallsAsBefore(t, p.proto, []byte(s))
		}
	})
}
