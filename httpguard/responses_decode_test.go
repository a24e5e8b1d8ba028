package httpguard

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// FuzzResponsesUnquote holds the in-place string decoding of the
// Responses wire code (argument deltas, the release checks, the calls of
// an ended stream) to encoding/json: appendUnquoted writes and
// unquotedBytes returns what json.Unmarshal decodes,
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
		if b, err := unquotedBytes([]byte(q)); err != nil || string(b) != want {
			t.Fatalf("unquotedBytes(%q) = %q, %v; encoding/json %q", q, b, err, want)
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

// responsesWireEvents is the data of every event of every recorded stream
// of testdata/wire (every protocol's SSE events are JSON objects: the
// Responses decoder reads them all, most as events of another shape).
func responsesWireEvents(tb testing.TB) [][]byte {
	tb.Helper()
	files, err := filepath.Glob(filepath.Join(wireDir, "*", "*.sse"))
	if err != nil || len(files) == 0 {
		tb.Fatalf("no recorded streams: %v", err)
	}
	var out [][]byte
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			tb.Fatal(err)
		}
		evs, err := readAllEvents(bytes.NewReader(b))
		if err != nil {
			tb.Fatal(err)
		}
		for _, ev := range evs {
			out = append(out, ev.Data)
		}
	}
	return out
}

// responsesEventEdges are events at the edges of the one-pass reading:
// not objects, not JSON after a member that fails, nesting at the limit,
// keys given twice or in another case, and values of the wrong type.
func responsesEventEdges() []string {
	deep := func(n int) string {
		return `{"type":"x","item":` + strings.Repeat("[", n) + strings.Repeat("]", n) + `}`
	}
	return []string{
		``, ` `, `null`, ` null `, `nul`, `[]`, `"x"`, `1`, `{}`, ` { } `, `{`, `}`, `{"type"}`, `{"type":}`, `{"type":"a",}`,
		`{"type":"a"} x`, `{"type":"a"}}`, `{"type" : "a" , "delta" : null }`, "{\"type\":\"\x01\"}",
		`{"type":"a","type":"b"}`, `{"type":"a","type":"b",`, `{"type":"a","TYPE":"b"}`, `{"Type":"a"}`, `{"Type":"a",]`,
		`{"output_index":1.5}`, `{"output_index":1.5,}`, `{"output_index":"1"}`, `{"output_index":-0}`, `{"output_index":null}`,
		`{"output_index":99999999999999999999}`, `{"output_index":1,"output_index":2}`, `{"type":1}`, `{"type":1,"x":[}`,
		`{"item":{"type":"a","type":"b"}}`, `{"response":[1,{"a":[null,true,false]}],"sequence_number":1e3}`,
		`{"delta":"a\u00e9\"","item":{}}`, "{\"delta\":\"\xff\"}", `{"\u0074ype":"x"}`, `{"ſequence_number":1}`, `{"a":01}`,
		`{"a":tru}`, `{"a":"\x"}`, `{"a":[1 2]}`, `{"a":{"b" 1}}`, `{"a":{1:2}}`, `{"a":[,]}`, "\t{\n\"type\"\r:\"x\"}\n",
		deep(maxNesting - 2), deep(maxNesting - 1), deep(maxNesting), `{"a":[}`,
	}
}

// decodeResponsesEventAt, in one pass, reads every event as the decoder
// that checked the whole event first did: the same fields, the same error
// (text and kind), for every recorded event and the edge cases.
func TestResponsesEventDecode(t *testing.T) {
	for _, data := range responsesWireEvents(t) {
		checkResponsesEventDecode(t, data)
	}
	for _, s := range responsesEventEdges() {
		checkResponsesEventDecode(t, []byte(s))
	}
}

// FuzzResponsesEventDecode holds decodeResponsesEventAt to the decoder
// that checked the whole event first (decodeResponsesEventChecked), and
// validValueEnd to validJSON, on any bytes.
func FuzzResponsesEventDecode(f *testing.F) {
	for _, data := range responsesWireEvents(f) {
		f.Add(data)
	}
	for _, s := range responsesEventEdges() {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkResponsesEventDecode(t, data)
	})
}

// checkResponsesEventDecode fails unless the one-pass decoder and the
// oracle read data alike, and validValueEnd and validJSON agree on it.
func checkResponsesEventDecode(t *testing.T, data []byte) {
	t.Helper()
	var got, want responsesEvent
	var gotIdx, wantIdx int
	gerr := decodeResponsesEventAt(data, &got, &gotIdx)
	werr := decodeResponsesEventChecked(data, &want, &wantIdx)
	switch {
	case (gerr == nil) != (werr == nil):
		t.Fatalf("decodeResponsesEventAt(%q) = %v; checked first: %v", data, gerr, werr)
	case gerr != nil:
		if gerr.Error() != werr.Error() || isUnguardable(gerr) != isUnguardable(werr) || errors.Is(gerr, errJSON) != errors.Is(werr, errJSON) {
			t.Fatalf("decodeResponsesEventAt(%q) = %v (unguardable %v); checked first: %v (unguardable %v)",
				data, gerr, isUnguardable(gerr), werr, isUnguardable(werr))
		}
	case !reflect.DeepEqual(got, want) || gotIdx != wantIdx:
		t.Fatalf("decodeResponsesEventAt(%q):\n got %+v (index %d)\nwant %+v (index %d)", data, got, gotIdx, want, wantIdx)
	}
	if gerr == nil {
		// What the gate reads again of a decoded event, it finds without
		// a second scan: checkedRoot is root for the event and its values.
		for _, v := range [][]byte{data, got.Response, got.Item, got.Delta, got.Seq} {
			if r, err := root(v); (err == nil) != (len(v) > 0) || err == nil && checkedRoot(v) != r {
				t.Fatalf("checkedRoot(%q) = %v; root %v, %v", v, checkedRoot(v), r, err)
			}
		}
	}
	i := skipSpace(data, 0)
	end := validValueEnd(data, i, 0)
	if got, want := end >= 0 && skipSpace(data, end) == len(data), validJSON(data); got != want {
		t.Fatalf("validValueEnd(%q, %d, 0) = %d; validJSON %v", data, i, end, want)
	}
}
