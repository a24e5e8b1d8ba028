package httpguard

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unsafe"
)

// chatChunkSeeds are the chunks of every recorded Chat stream and of
// chatStreamSeeds, FuzzChatChunk's own seeds, and chunks at the edges of
// the decoder's walk: several choices and call parts (which outgrow the
// chunk's storage), nulls and values of the wrong type at every level,
// keys escaped, in another case or given twice, white space wherever JSON
// allows it, deep nesting in a member skipped, and bytes that are not
// JSON at every level.
func chatChunkSeeds(tb testing.TB) [][]byte {
	tb.Helper()
	var out [][]byte
	files, err := filepath.Glob(filepath.Join(wireDir, "openai-chat", "*.sse"))
	if err != nil || len(files) == 0 {
		tb.Fatalf("no recorded Chat stream: %v", err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		evs, _ := readAllEvents(bytes.NewReader(b))
		for _, ev := range evs {
			out = append(out, ev.Data)
		}
	}
	for _, s := range chatStreamSeeds(tb) {
		evs, _ := readAllEvents(bytes.NewReader(s))
		for _, ev := range evs {
			out = append(out, ev.Data)
		}
	}
	deep := strings.Repeat("[", maxNesting-3) + strings.Repeat("]", maxNesting-3)
	deeper := strings.Repeat("[", maxNesting-2) + strings.Repeat("]", maxNesting-2)
	// Nesting at the bound, from each level the decoder reads: the
	// containers a skipped member opens, and those around it, are at most
	// maxNesting.
	for _, at := range []struct {
		open          int // the containers around the skipped member
		before, after string
	}{
		{1, `{"x":`, `}`},
		{3, `{"choices":[{"x":`, `}]}`},
		{4, `{"choices":[{"delta":{"x":`, `}}]}`},
		{7, `{"choices":[{"delta":{"tool_calls":[{"function":{"x":`, `}}]}}]}`},
		{2, `{"choices":[null,`, `]}`},
		{5, `{"choices":[{"delta":{"tool_calls":[`, `]}}]}`},
	} {
		for _, n := range []int{maxNesting - at.open - 1, maxNesting - at.open, maxNesting - at.open + 1} {
			out = append(out, []byte(at.before+strings.Repeat(`{"a":[`, n/2)+strings.Repeat("[", n%2)+"1"+strings.Repeat("]", n%2)+strings.Repeat("]}", n/2)+at.after))
		}
	}
	for _, s := range []string{
		// FuzzChatChunk's.
		`null`, `[]`, `{"ID":"x","Choices":[{"Delta":{"CONTENT":"a"}}]}`, `{"id":"a\u00e9\"","choices":[null,{"index":null,"delta":null}]}`,
		`{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\":1}"}},null]}}]}`,
		`{"choices":[{"index":"0"}]}`, `{"choices":[{"index":1.0}]}`, `{"choices":{}}`, `{"id":1}`, `{"choices":[{"delta":{"tool_calls":[{"index":true}]}}]}`,
		`{"id":"a","id":"b"}`, `{"id":"a","ID":"b"}`, `{"usage":{"a":1},"error":null,"created":"x"}`, "{\"model\":\"\xff\"}",
		`{"choices":[{"delta":{"tool_calls":[{"function":null,"index":-1}]}}]}`, `{"\u0069d":"k"}`, `{"K":1,"choices":[{"finish_reason":"stop"}]}`,
		`{"choice\u017f":[]}`, `{"\u0130d":"x","\u0131d":"y"}`, `{"choices":[{"delta":{"tool_calls":[{"function":{"Name":"x"}}]}}]}`,
		`{"choices":[{"delta":{"tool_calls":[{"index":0,"type":"custom","custom":{"name":"sh","input":"ls"}}]}}]}`,
		`{"choices":[{"delta":{"tool_calls":[{"Custom":{"INPUT":"a","input":"b"}}]}}]}`, `{"choices":[{"delta":{"tool_calls":[{"custom":null,"custom":{}}]}}]}`,
		`{"choices":[{"delta":{"function_call":{"name":"f","arguments":"{}"}}}]}`, `{"choices":[{"delta":{"Function_Call":null}}]}`,
		// Several choices and call parts; empty and null arrays.
		`{"choices":[{"index":0,"delta":{"content":"a"}},{"index":1,"delta":{"content":"b"},"finish_reason":"stop"},null]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a"},{"index":1,"id":"b","function":{"name":"f","arguments":"{}"}},{"index":2,"type":"custom","custom":{"input":"x"}}]}}]}`,
		`{"choices":[{"delta":{"tool_calls":[null,{"index":1}]}},{"delta":{"tool_calls":[{"id":"x"},null]}}]}`,
		`{"choices":[],"usage":null}`, `{"choices":null}`, `{"choices":[{"delta":{"tool_calls":[]}}]}`, `{"choices":[{"delta":{"tool_calls":null}}]}`,
		`{}`, ` { } `, `{"choices":[{}]}`, `{"choices":[{"delta":{}}]}`, `{"choices":[{"delta":{"tool_calls":[{}]}}]}`,
		`{"choices":[{"delta":{"tool_calls":[{"function":{}}]}}]}`,
		// White space wherever JSON allows it.
		" \t\r\n{ \"id\" : \"a\" , \"choices\" : [ { \"index\" : 0 , \"delta\" : { \"role\" : \"assistant\" , \"tool_calls\" : [ { \"index\" : 0 , \"function\" : { \"name\" : \"f\" , \"arguments\" : \"{}\" } } , null ] } , \"finish_reason\" : null } , null ] , \"usage\" : { } } \n",
		// Values of the wrong type at every level.
		`{"choices":"x"}`, `{"choices":[1]}`, `{"choices":[[]]}`, `{"choices":[{"delta":[]}]}`, `{"choices":[{"delta":"x"}]}`,
		`{"choices":[{"delta":{"tool_calls":{}}}]}`, `{"choices":[{"delta":{"tool_calls":[1]}}]}`, `{"choices":[{"delta":{"tool_calls":[{"function":[]}]}}]}`,
		`{"choices":[{"delta":{"tool_calls":[{"function":"f"}]}}]}`, `{"choices":[{"delta":{"tool_calls":[{"custom":1}]}}]}`,
		`{"choices":[{"delta":{"tool_calls":[{"function":{"name":1}}]}}]}`, `{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":{}}}]}}]}`,
		`{"choices":[{"delta":{"content":1}}]}`, `{"choices":[{"delta":{"refusal":[]}}]}`, `{"choices":[{"delta":{"role":false}}]}`,
		`{"choices":[{"finish_reason":{}}]}`, `{"choices":[{"index":1e3}]}`, `{"choices":[{"index":99999999999999999999}]}`,
		`{"choices":[{"delta":{"tool_calls":[{"index":"0"}]}}]}`, `{"choices":[{"delta":{"tool_calls":[{"id":0,"type":[]}]}}]}`,
		`{"model":{},"system_fingerprint":1,"service_tier":[]}`, `{"system_fingerprint":null,"service_tier":null}`, `"x"`, `1`, `true`,
		// A wrong type after a key given twice, and the other way round.
		`{"choices":[{"index":"x","index":0}]}`, `{"choices":[{"index":0,"index":"x"}]}`, `{"id":"a","choices":[{"delta":{"role":1}}],"id":"b"}`,
		// Keys escaped, in another case, given twice, at every level.
		`{"choices":[{"\u0064elta":{"c\u006fntent":"a"}}]}`, `{"choices":[{"DELTA":{}}]}`, `{"choices":[{"delta":{"Tool_Calls":[]}}]}`,
		`{"choices":[{"delta":{"tool_calls":[{"Index":0}]}}]}`, `{"choices":[{"delta":{"tool_calls":[{"function":{"name":"a","name":"b"}}]}}]}`,
		`{"choices":[{"delta":{"tool_calls":[{"id":"a","id":"b"}]}}]}`, `{"choices":[{"finish_reason":null,"Finish_Reason":"x"}]}`,
		`{"choices":[{"delta":{"rôle":"x","r\u00f4le":"y"}}]}`, `{"\u00e9":1,"é":2}`, `{"choices":[{"delta":{"\u0072ole":"assistant","content":null}}]}`,
		`{"ſervice_tier":"a"}`, `{"choices":[{"delta":{"tool_calls":[{"\u212aind":1,"type":"function"}]}}]}`,
		// Deep nesting in a member skipped: within the bound, and past it.
		`{"logprobs":` + deep + `}`, `{"choices":[{"logprobs":` + deep + `}]}`, `{"choices":[{"logprobs":` + deeper + `}]}`,
		`{"choices":[{"delta":{"tool_calls":[{"function":{"x":` + deep + `}}]}}]}`,
		// Not JSON, at every level.
		``, ` `, `{`, `{"id"`, `{"id":}`, `{"id":"a",}`, `{"choices":[}`, `{"choices":[{"delta":{"content":"a"}]}`, `{"choices":[{"index":01}]}`,
		`{"choices":[{"delta":{"tool_calls":[{"function":{"name":"\x"}}]}}]}`, "{\"choices\":[{\"delta\":{\"content\":\"\x01\"}}]}",
		`{"id":"a"} {}`, `{"id":"a"}]`, `{"choices":[{"delta":{"tool_calls":[{"index":0,}]}}]}`, `{"choices":[{"finish_reason":nul}]}`,
		`{"usage":{"a":[1,2,}}`, `{"choices":[{"index":0 "delta":{}}]}`, `{"choices":[null,]}`,
		"{\"i\x01d\":\"a\"}", `{"\q":1}`, `{"choices":[{"d\u12":{}}]}`, "{\"choices\":[{\"delta\":{\"\x1f\":1}}]}",
		`{"choices":[{"delta":{"tool_calls":[{"function":{"n\ame":"f"}}]}}]}`, `{"id":"a\u12g4"}`, `{"choices":[{"delta":{"content":"\x"}}]}`,
	} {
		out = append(out, []byte(s))
	}
	return out
}

// chatChunkDecodersAgree fails t unless decodeChatChunkAfter decodes data
// as the decoder it replaced does (chat_decode_old_test.go): the same
// chunk, field for field and storage for storage, pointing into its own
// storage where that one does and sharing prev's strings where that one
// does, or the same error, as unguardable as that one's; on its own and
// after a chunk, and after the chunk it decodes to.
func chatChunkDecodersAgree(t *testing.T, data []byte) {
	t.Helper()
	var prevs []*chatChunk
	prevs = append(prevs, nil, &chatChunk{ID: "chatcmpl-2", Model: "gpt-4o"})
	var first chatChunk
	if decodeChatChunkAfter(data, &first, nil) == nil {
		prevs = append(prevs, &first)
	}
	for _, prev := range prevs {
		var got, want chatChunk
		gerr := decodeChatChunkAfter(data, &got, prev)
		werr := oldDecodeChatChunkAfter(data, &want, prev)
		if (gerr == nil) != (werr == nil) || gerr != nil && (gerr.Error() != werr.Error() || isUnguardable(gerr) != isUnguardable(werr)) {
			t.Fatalf("%q: error %v, want %v", data, gerr, werr)
		}
		if gerr != nil {
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q:\n got %+v\nwant %+v", data, got, want)
		}
		if g, w := chatChunkShape(&got, prev), chatChunkShape(&want, prev); g != w {
			t.Fatalf("%q: storage used %s, want %s", data, g, w)
		}
	}
}

// chatChunkShape says where c's pointers and slices point (into c's own
// storage or not) and which of its strings are prev's own.
func chatChunkShape(c, prev *chatChunk) string {
	var b strings.Builder
	flag := func(ok bool) {
		if ok {
			b.WriteByte('1')
		} else {
			b.WriteByte('0')
		}
	}
	same := func(s, p string) { flag(s != "" && unsafe.StringData(s) == unsafe.StringData(p)) }
	flag(c.SystemFingerprint == &c.fingerprint)
	flag(c.ServiceTier == &c.serviceTier)
	flag(len(c.Choices) > 0 && &c.Choices[0] == &c.one[0])
	if prev != nil {
		same(c.ID, prev.ID)
		same(c.Model, prev.Model)
		if c.SystemFingerprint != nil && prev.SystemFingerprint != nil {
			same(*c.SystemFingerprint, *prev.SystemFingerprint)
		}
		if c.ServiceTier != nil && prev.ServiceTier != nil {
			same(*c.ServiceTier, *prev.ServiceTier)
		}
	}
	for i := range c.Choices {
		ch := &c.Choices[i]
		b.WriteByte('|')
		flag(ch.FinishReason == &ch.finish)
		flag(ch.Delta.Content == &ch.Delta.content)
		flag(ch.Delta.Refusal == &ch.Delta.refusal)
		flag(len(ch.Delta.ToolCalls) > 0 && &ch.Delta.ToolCalls[0] == &ch.Delta.oneCall[0])
		same(ch.Delta.Role, "assistant")
		for j := range ch.Delta.ToolCalls {
			tc := &ch.Delta.ToolCalls[j]
			flag(tc.Index == &tc.index)
			same(tc.Type, "function")
		}
	}
	return b.String()
}

// The Chat chunk decoder decodes every seed as the decoder it replaced.
func TestChatChunkDecoders(t *testing.T) {
	for _, data := range chatChunkSeeds(t) {
		chatChunkDecodersAgree(t, data)
	}
}

// FuzzChatChunkDecoders is TestChatChunkDecoders over any bytes.
func FuzzChatChunkDecoders(f *testing.F) {
	for _, data := range chatChunkSeeds(f) {
		f.Add(data)
	}
	f.Fuzz(chatChunkDecodersAgree)
}

// BenchmarkChatChunk decodes the chunks of the recorded gate-accept
// stream, each after the one before, as a gate does.
func BenchmarkChatChunk(b *testing.B) {
	data, err := os.ReadFile(filepath.Join(wireDir, "openai-chat", "gate-accept.sse"))
	if err != nil {
		b.Fatal(err)
	}
	evs, err := readAllEvents(bytes.NewReader(data))
	if err != nil {
		b.Fatal(err)
	}
	evs = evs[:len(evs)-1] // [DONE]
	b.ReportAllocs()
	for b.Loop() {
		var prev *chatChunk
		for _, ev := range evs {
			c := new(chatChunk)
			if err := decodeChatChunkAfter(ev.Data, c, prev); err != nil {
				b.Fatal(err)
			}
			prev = c
		}
	}
}

// The assembler parses chunks into slabs that never hand a chunk out
// twice: every chunk of a long stream still reads as its event parsed
// alone once the stream is over, each is its own, and the chunks allocated
// but not used yet are fewer than those parsed, and than chatSlabMax.
func TestChatAssemblerSlab(t *testing.T) {
	evs := chatOneByteDeltaStream(40_000, "arguments")
	evs = evs[:len(evs)-1] // [DONE]
	a := &chatAssembler{}
	seen := map[*chatChunk]bool{}
	var chunks []*chatChunk
	for i, ev := range evs {
		if _, err := a.add(ev); err != nil {
			t.Fatal(err)
		}
		if seen[a.last] {
			t.Fatalf("chunk %d: parsed into a chunk handed out before", i)
		}
		seen[a.last] = true
		chunks = append(chunks, a.last)
		if free := len(a.slab); free >= min(max(chatSlabMin, a.parsed), chatSlabMax) {
			t.Fatalf("after %d chunks, %d free in the slab", a.parsed, free)
		}
	}
	if a.parsed != len(evs) {
		t.Fatalf("parsed %d chunks into slabs, want %d", a.parsed, len(evs))
	}
	for i, ev := range evs {
		want, err := parseChatChunk(ev.Data)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(normalChunk(*chunks[i]), normalChunk(*want)) {
			t.Fatalf("chunk %d changed after the stream:\n got %+v\nwant %+v", i, *chunks[i], *want)
		}
	}
}
