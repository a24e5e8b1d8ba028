package httpguard

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// geminiChunkV0 is the chunk as parseGeminiChunkV0 read it, field by
// field: the oracle parseGeminiChunk is held to (its calls are the parts
// whose functionCall is an object, as indexes into parts).
type geminiChunkV0 struct {
	cand                                  span
	hasC                                  bool
	first, role                           span
	parts                                 []span
	firstCall                             int
	calls                                 []geminiPartCallV0
	finish                                span
	malformed, other, otherCalls          bool
	id                                    span
	hasCands, hasContent, hasFinishMember bool
}

type geminiPartCallV0 struct {
	part int
	fc   span
}

// parseGeminiChunkV0 is parseGeminiChunk as it was before it read a chunk
// in one pass: a lookup per key (field), each scanning its object.
func parseGeminiChunkV0(b []byte) (*geminiChunkV0, error) {
	r, err := parseBody(b)
	if err != nil {
		return nil, err
	}
	if e, ok, err := field(b, r, "error"); err != nil {
		return nil, err
	} else if ok && kind(b, e) != 'n' {
		return nil, &upstreamStreamError{Data: append([]byte(nil), b...)}
	}
	c := &geminiChunkV0{firstCall: -1}
	if id, ok, err := field(b, r, "responseId"); err == nil && ok && kind(b, id) == '"' {
		c.id = id
	}
	cs, ok, err := field(b, r, "candidates")
	c.hasCands = ok
	if err != nil || !ok || kind(b, cs) == 'n' {
		return c, err
	}
	es, err := arrayElems(b, cs)
	if err != nil || len(es) == 0 {
		return c, err
	}
	c.first = es[0]
	if err := c.candidates(b, es); err != nil {
		return nil, err
	}
	if !c.hasC {
		return c, nil
	}
	if err := c.candidate(b); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *geminiChunkV0) candidates(b []byte, es []span) error {
	for _, e := range es {
		idx := 0
		if kind(b, e) == '{' {
			if i, ok, err := field(b, e, "index"); err != nil {
				return err
			} else if ok && kind(b, i) != 'n' && string(raw(b, i)) != "0" {
				idx = -1
			}
		}
		if idx == 0 && !c.hasC {
			c.cand, c.hasC = e, true
			continue
		}
		c.other = true
		calls, err := candidateCalls(b, e)
		if err != nil {
			return err
		}
		c.otherCalls = c.otherCalls || calls
	}
	return nil
}

func (c *geminiChunkV0) candidate(b []byte) error {
	if f, ok, err := field(b, c.cand, "finishReason"); err != nil {
		return err
	} else if c.hasFinishMember = ok; ok && kind(b, f) != 'n' {
		c.finish = f
		c.malformed = string(raw(b, f)) == `"`+geminiMalformed+`"`
	}
	content, ok, err := field(b, c.cand, "content")
	c.hasContent = ok
	if err != nil || !ok || kind(b, content) != '{' {
		return err
	}
	if role, ok, err := field(b, content, "role"); err != nil {
		return err
	} else if ok && kind(b, role) != 'n' {
		if kind(b, role) != '"' {
			return fmt.Errorf("%w: want a string", errJSON)
		}
		c.role = role
	}
	ps, ok, err := field(b, content, "parts")
	if err != nil || !ok || kind(b, ps) == 'n' {
		return err
	}
	if c.parts, err = arrayElems(b, ps); err != nil {
		return err
	}
	for i, p := range c.parts {
		if kind(b, p) != '{' {
			continue
		}
		fc, call, err := field(b, p, "functionCall")
		if err != nil {
			return err
		}
		if err := checkFields(b, p, "text", "thought"); err != nil {
			return err
		}
		if call && c.firstCall < 0 {
			c.firstCall = i
		}
		if call && kind(b, fc) == '{' {
			c.calls = append(c.calls, geminiPartCallV0{i, fc})
		}
	}
	return nil
}

// isCompactJSON reports whether the JSON text b has no space outside its
// strings: compact(b) would be b. The oracle of geminiChunk.compact (the
// gate passed a chunk as it came when it held).
func isCompactJSON(b []byte) bool {
	in := false
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case in && c == '\\':
			i++
		case c == '"':
			in = !in
		case !in && isSpace(c):
			return false
		}
	}
	return true
}

// asV0 is c, parsed of b, in the oracle's form.
func (c *geminiChunk) asV0(b []byte) *geminiChunkV0 {
	v := &geminiChunkV0{cand: c.cand, hasC: c.hasCand(), role: c.role, parts: c.parts, firstCall: c.firstCall,
		finish: c.finish, malformed: c.malformed, other: c.other, otherCalls: c.otherCalls, id: c.id,
		hasCands: c.hasCands, hasContent: c.hasContent, hasFinishMember: c.hasFinishMember}
	if c.fcs != nil && len(c.fcs) != len(c.parts) {
		v.calls = []geminiPartCallV0{{-1, span{}}} // never the oracle's
	}
	if r, err := root(b); err == nil {
		v.first, _, _ = at(b, r, "candidates", 0) // where withParts rewrites the chunk
	}
	for i, fc := range c.fcs {
		if fc != (span{}) {
			v.calls = append(v.calls, geminiPartCallV0{i, fc})
		}
	}
	return v
}

// checkGeminiChunk fails unless parse reads b as the oracle does: the same
// error, or the same chunk.
func checkGeminiChunk(t *testing.T, b []byte, got *geminiChunk, gerr error) {
	t.Helper()
	want, werr := parseGeminiChunkV0(b)
	if werr != nil || gerr != nil {
		if !sameError(gerr, werr) {
			t.Fatalf("parse(%q): error %v, want %v", b, gerr, werr)
		}
		return
	}
	if g := got.asV0(b); !reflect.DeepEqual(g, want) {
		t.Fatalf("parse(%q):\n got %+v\nwant %+v", b, g, want)
	}
	if got.compact != isCompactJSON(b) {
		t.Fatalf("parse(%q): compact %v, want %v", b, got.compact, !got.compact)
	}
}

// checkGeminiChunks parses the chunks with one parser, as an assembler
// does, and checks each against the oracle, then every chunk again: a
// chunk handed on stays as it was parsed while its parser goes on.
func checkGeminiChunks(t *testing.T, chunks [][]byte) {
	t.Helper()
	var p geminiParser
	parsed := make([]*geminiChunk, len(chunks))
	for i, b := range chunks {
		c, err := p.parse(b)
		checkGeminiChunk(t, b, c, err)
		parsed[i] = c
	}
	for i, b := range chunks {
		if parsed[i] != nil {
			checkGeminiChunk(t, b, parsed[i], nil)
		}
	}
}

// geminiChunkCases are chunks of the shapes the parse must read as the
// oracle, errors and their order included.
var geminiChunkCases = []string{
	`{}`, ` { } `, `[]`, `null`, `"x"`, `{"candidates":null}`, `{"candidates":[]}`, `{"candidates":{}}`, `{"candidates":"x"}`,
	`{"error":null,"candidates":[{"content":{"parts":[{"text":"a"}]}}]}`,
	`{"error":{"code":429,"message":"quota"}}`, `{"error":1,"Error":2}`, `{"ERROR":{}}`, `{"error":{},"error":null}`,
	`{"responseId":"r","responseId":"s","candidates":[]}`, `{"responseId":7}`, `{"ResponseId":"r"}`, `{"responseId":"r\u00e9"}`,
	`{"candidates":[],"candidates":[]}`, `{"Candidates":[{"index":0}]}`, `{"c\u0061ndidates":[{"content":{"parts":[{"text":"a"}]}}]}`,
	`{"candidates":[{"content":{"parts":[{"text":"a"}]}}],"CANDIDATES":null}`, `{"candidates":[{},{}]}`,
	`{"candidates":[1,{"index":0}]}`, `{"candidates":[{"index":1},"x"]}`, `{"candidates":[{"index":1},{"index":0,"content":5}]}`,
	`{"candidates":[{"index":-0},{"index":0.0},{"index":null},{"index":0}]}`, `{"candidates":[{"index":0,"index":1}]}`,
	`{"candidates":[{"Index":0}]}`, `{"candidates":[{"index":1,"content":{"parts":[{"functionCall":{}}]}},{"index":1,"content":{"parts":[7]}}]}`,
	`{"candidates":[{"index":0,"content":{"parts":[{"text":"a"}]}},{"index":1,"content":{"parts":[{"functionCall":{"name":"f"}}]}}]}`,
	`{"candidates":[{"index":1,"content":{"parts":[{"functionCall":null}]}},{"index":2,"content":{"parts":"x"}},{"index":3,"content":{"Parts":[]}}]}`,
	`{"candidates":[{"index":1,"content":{"parts":[{"functionCall":1,"FunctionCall":2}]}},{"index":0,"finishReason":1,"finishReason":2}]}`,
	`{"candidates":[{"content":{"parts":[{"text":"a","Text":"b"}]}},{"index":1,"content":{"role":1,"parts":[{"text":"a","Text":"b"}]}}]}`,
	`{"candidates":[{"index":1,"content":{"content":{}}},{"content":{},"content":{}}]}`,
	`{"candidates":[{"finishReason":"MALFORMED_FUNCTION_CALL","finishMessage":"x"}]}`, `{"candidates":[{"finishReason":null}]}`,
	`{"candidates":[{"finishReason":"STOP","FinishReason":"STOP"}]}`, `{"candidates":[{"content":null,"finishReason":"STOP"}]}`,
	`{"candidates":[{"content":[]}]}`, `{"candidates":[{"content":{"role":5,"parts":[]}}]}`, `{"candidates":[{"content":{"role":null}}]}`,
	`{"candidates":[{"content":{"role":"model","role":"user"}}]}`, `{"candidates":[{"content":{"ROLE":"model"}}]}`,
	`{"candidates":[{"content":{"parts":5}}]}`, `{"candidates":[{"content":{"parts":{}}}]}`, `{"candidates":[{"content":{"parts":[],"parts":[]}}]}`,
	`{"candidates":[{"content":{"parts":[5,"x",null,[],{"text":"a"}]}}]}`,
	`{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f"}},{"functionCall":null},{"functionCall":"x"},{"functionCall":{}}]}}]}`,
	`{"candidates":[{"content":{"parts":[{"text":"a"},{"functionCall":{"name":"f"},"functionCall":{"name":"g"}}]}}]}`,
	`{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f"},"thought":true,"Thought":false}]}}]}`,
	`{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f"},"functionCALL":{}}]}}]}`,
	`{"candidates":[{"content":{"parts":[{"text":"a","th\u006fught":true}]}}]}`, `{"candidates":[{"content":{"parts":[{"ſext":"a"}]}}]}`,
	`{"candidates":[{"content":{"partſ":[]}}]}`, `{"candidateſ":[]}`, `{"candidates":[{"content":{"parts":[{"text":"a"}]}}],"candidateſ":[]}`,
	`{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","args":{"x":[1,{"y":"}"}]}}}]}}]}`,
	` {"candidates" : [ { "content" : { "parts" : [ { "text" : "a" } , { "functionCall" : { } } ] , "role" : "model" } , "index" : 0 } ] } `,
	`{"candidates":[{"content":{"parts":[{"text":"a"}]}}],"usageMetadata":{"x":[{"candidates":[]}]},"error":{"e":1}}`,
	`{"candidates":[{"content":{"parts":[{"text":"a"}]}}],"candidates":[{"content":{"parts":[{"text":"a","text":"b"}]}}]}`,
	`{"candidates":[{"index":1,"content":{"parts":[{"text":"a"}]}},{"index":2}],"responseId":"r"}`,
	`{"candidates":[{"content":{"role":5}},{"index":1,"index":2}]}`, `{"candidates":[{"content":{"parts":[{"text":1,"TEXT":2}]}},{"index":1,"content":{"parts":[3]}}]}`,
	`{"candidates":[{"content":{"parts":[{"text":"a"}]}}]} x`, `{"candidates":[{"content":{"parts":[{"text":"a"}]}}]}}`,
	`{"candidates":[{"content":{"parts":[{"text":"a"},]}}]}`, `{"candidates":[{"content":{"parts":[{"text":"a",}]}}]}`,
	`{"candidates":[{"content":{"parts":[{"text" "a"}]}}]}`, `{"candidates":[{"content":{"parts":[{"text":tru}]}}]}`,
	`{"candidates":[{"content":{"parts":[{"text":01}]}}]}`, `{"candidates":[{"content":{"parts":[{"te\xt":1}]}}]}`,
	`{"candidates":[{"content":{"parts":[{"functionCall":{"args":[1,2,]}}]}}]}`, `{"candidates":[{"content":{"parts":[{"functionCall":{"args":{"a":1}]}}]}}]}`,
	`{"candidates":[{"content":{"parts":[],}}]}`, `{"candidates":[{"content":{"role":"model",}}]}`, `{"candidates":[{"index":0,}]}`,
	`{"candidates":[{"index":0},]}`, `{"candidates":[],}`, `{"candidates":[{"index":0}}`, `{"candidates":[{"index":0]}`,
	`{"candidates":`, `{"candidates":[`, `{"candidates":[{`, `{"candidates":[{"content":`, `{"candidates":[{"content":{"parts":`,
	`{"candidates":[{"content":{"parts":[{"text":`, `{"error":{"code":1,}}`, `{"error":{"code":1},"candidates":[}`,
	"{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"a\"}]}}]}\n", "\t{\"candidates\":[]}", "{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"a b\"}],\"role\":\"model\"}}]}",
	"{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"a\\\" \"}]}}]}", "{\"x\":[1,\r2]}", "{\"x\":{\"a\" :1}}", "{\"x\":{\"a\": 1}}", `{"candidates":[{"content":{"parts":[{"text":"a\x01"}]}}]}`,
	"{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"a\xff\"}],\"r\xffle\":1}}]}",
	`{"candidates":[{"content":{"parts":[{"text":"a"}]` + strings.Repeat(`,"k":[[[]]]`, 3) + `}}]}`,
}

// geminiNesting are chunks nested at the bound validJSON keeps
// (maxNesting), and one past it, at each level the parse reads.
func geminiNesting() []string {
	var out []string
	for _, at := range []struct {
		before, after string
		open          int // the objects and arrays around the value
	}{
		{`{"usageMetadata":`, `}`, 1},
		{`{"candidates":[`, `]}`, 2},
		{`{"candidates":[{"index":0,"safetyRatings":`, `}]}`, 3},
		{`{"candidates":[{"content":{"role":"model","x":`, `}}]}`, 4},
		{`{"candidates":[{"content":{"parts":[`, `]}}]}`, 5},
		{`{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","args":{"a":`, `}}}]}}]}`, 8},
	} {
		for _, n := range []int{maxNesting - at.open, maxNesting - at.open + 1} {
			out = append(out, at.before+strings.Repeat(`[`, n)+strings.Repeat(`]`, n)+at.after,
				at.before+strings.Repeat(`{"a":`, n)+`1`+strings.Repeat(`}`, n)+at.after)
		}
	}
	return out
}

// The one-pass parse reads every recorded chunk and every case as the
// field-by-field one did, and every prefix of each (a chunk cut short at
// every byte: JSON nowhere but whole), and chunks nested to the bound.
func TestGeminiChunkParsedAsBefore(t *testing.T) {
	for _, chunks := range geminiChunkSeeds(t) {
		checkGeminiChunks(t, chunks)
		for _, c := range chunks {
			for i := range c {
				checkGeminiChunks(t, [][]byte{c[:i]})
			}
		}
	}
	for _, c := range geminiNesting() {
		checkGeminiChunks(t, [][]byte{[]byte(c)})
	}
}

// FuzzGeminiChunk holds the parse to the oracle over arbitrary chunks, one
// a line, parsed in turn by one parser.
func FuzzGeminiChunk(f *testing.F) {
	for _, chunks := range geminiChunkSeeds(f) {
		f.Add(bytes.Join(chunks, []byte("\n")))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkGeminiChunks(t, bytes.Split(data, []byte("\n")))
	})
}

// geminiChunkSeeds are the recorded streams' chunks (each stream's in
// turn), the recorded answers, the streams of geminiCallStreams and each
// of geminiChunkCases alone.
func geminiChunkSeeds(tb testing.TB) [][][]byte {
	tb.Helper()
	var out [][][]byte
	files, _ := filepath.Glob(filepath.Join(wireDir, "gemini", "*"))
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			tb.Fatal(err)
		}
		switch filepath.Ext(file) {
		case ".sse":
			evs, err := readAllEvents(bytes.NewReader(b))
			if err != nil {
				tb.Fatal(err)
			}
			var chunks [][]byte
			for _, ev := range evs {
				chunks = append(chunks, ev.Data)
			}
			out = append(out, chunks)
		case ".json":
			out = append(out, [][]byte{b})
		}
	}
	if len(out) == 0 {
		tb.Fatal("no gemini fixtures")
	}
	for _, chunks := range geminiCallStreams {
		var cs [][]byte
		for _, c := range chunks {
			cs = append(cs, []byte(c))
		}
		out = append(out, cs)
	}
	for _, c := range geminiChunkCases {
		out = append(out, [][]byte{[]byte(c)})
	}
	return out
}

// BenchmarkGeminiChunk parses the chunks of the recorded stream the
// transport's benchmark serves, by the one-pass parse (with a parser per
// stream, as an assembler has) and by the field-by-field reading it
// replaced, with validJSON and isCompactJSON, whose work the pass does too.
func BenchmarkGeminiChunk(b *testing.B) {
	raw, err := os.ReadFile(filepath.Join(wireDir, "gemini", "gate-accept.sse"))
	if err != nil {
		b.Fatal(err)
	}
	evs, err := readAllEvents(bytes.NewReader(raw))
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	for _, ev := range evs {
		n += len(ev.Data)
	}
	b.Run("one-pass", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(n))
		for b.Loop() {
			var p geminiParser
			for _, ev := range evs {
				if _, err := p.parse(ev.Data); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("field-by-field", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(n))
		for b.Loop() {
			for _, ev := range evs {
				if _, err := parseGeminiChunkV0(ev.Data); err != nil || !isCompactJSON(ev.Data) {
					b.Fatal(err)
				}
			}
		}
	})
}

// geminiBytes hands out copies equal to what it was given, which later
// copies never change, a large one in an allocation of its own.
func TestGeminiBytesKeepsCopies(t *testing.T) {
	var g geminiBytes
	var in, out [][]byte
	for i := range 300 {
		b := bytes.Repeat([]byte{byte('a' + i%26)}, i%40+(i%97)*(i%3))
		in, out = append(in, b), append(out, g.copy(b))
	}
	for i := range out {
		_ = append(out[i], '!') // must not write into the block, over the next copy
	}
	for i := range in {
		if !bytes.Equal(in[i], out[i]) {
			t.Fatalf("copy %d = %q, want %q", i, out[i], in[i])
		}
	}
	large := bytes.Repeat([]byte("x"), geminiMostBytes)
	if c := g.copy(large); !bytes.Equal(c, large) || &c[0] == &g.block[:1][0] {
		t.Errorf("a copy of %d bytes shares the block", len(large))
	}
}
