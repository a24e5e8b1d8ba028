package httpguard

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// parseChatChunk reads a chunk as encoding/json decodes it into a
// chatChunk, whatever the bytes (escapes, nulls, values of the wrong
// type), but refuses, as unguardable, a key it reads given twice or only
// in another case (which encoding/json reads, and openai-go does not), and
// only then. Seeded with every recorded Chat stream.
func FuzzChatChunk(f *testing.F) {
	for _, name := range []string{"stream.sse", "stream2.sse", "gate-accept.sse", "gate-reask.sse"} {
		b, err := os.ReadFile(filepath.Join(wireDir, "openai-chat", name))
		if err != nil {
			f.Fatal(err)
		}
		evs, err := readAllEvents(bytes.NewReader(b))
		if err != nil {
			f.Fatal(err)
		}
		for _, ev := range evs {
			f.Add(ev.Data)
		}
	}
	for _, s := range []string{
		`null`, `[]`, `{"ID":"x","Choices":[{"Delta":{"CONTENT":"a"}}]}`, `{"id":"a\u00e9\"","choices":[null,{"index":null,"delta":null}]}`,
		`{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\":1}"}},null]}}]}`,
		`{"choices":[{"index":"0"}]}`, `{"choices":[{"index":1.0}]}`, `{"choices":{}}`, `{"id":1}`, `{"choices":[{"delta":{"tool_calls":[{"index":true}]}}]}`,
		`{"id":"a","id":"b"}`, `{"id":"a","ID":"b"}`, `{"usage":{"a":1},"error":null,"created":"x"}`, "{\"model\":\"\xff\"}",
		`{"choices":[{"delta":{"tool_calls":[{"function":null,"index":-1}]}}]}`, `{"\u0069d":"k"}`, `{"K":1,"choices":[{"finish_reason":"stop"}]}`,
		`{"choice\u017f":[]}`, `{"\u0130d":"x","\u0131d":"y"}`, `{"choices":[{"delta":{"tool_calls":[{"function":{"Name":"x"}}]}}]}`,
		`{"choices":[{"delta":{"tool_calls":[{"index":0,"type":"custom","custom":{"name":"sh","input":"ls"}}]}}]}`,
		`{"choices":[{"delta":{"tool_calls":[{"Custom":{"INPUT":"a","input":"b"}}]}}]}`, `{"choices":[{"delta":{"tool_calls":[{"custom":null,"custom":{}}]}}]}`,
		`{"choices":[{"delta":{"function_call":{"name":"f","arguments":"{}"}}}]}`, `{"choices":[{"delta":{"Function_Call":null}}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var want chatChunk
		werr := json.Unmarshal(data, &want)
		var got chatChunk
		gerr := decodeChatChunk(data, &got)
		if isUnguardable(gerr) {
			if !keysAmbiguous(data, tagNames(reflect.TypeOf(chatChunk{}))) {
				t.Fatalf("%q: decodeChatChunk refused it (%v), but it has no key twice or in another case", data, gerr)
			}
			return // refused on purpose: clients read it in different ways
		}
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("%q: encoding/json: %v; decodeChatChunk: %v", data, werr, gerr)
		}
		if werr == nil && !reflect.DeepEqual(normalChunk(got), normalChunk(want)) {
			t.Fatalf("%q:\n got %+v\nwant %+v", data, got, want)
		}
		// After a chunk spelled alike, whose strings it shares, it
		// decodes the same.
		var again chatChunk
		if aerr := decodeChatChunkAfter(data, &again, &got); (aerr == nil) != (gerr == nil) || !reflect.DeepEqual(normalChunk(again), normalChunk(got)) {
			t.Fatalf("%q: after itself:\n got %+v, %v\nwant %+v, %v", data, again, aerr, got, gerr)
		}
	})
}

// normalChunk makes empty and nil slices and raw values alike, and sets
// aside what is not a member: the decoder's storage, on copies (the
// pointers into it still read the values), and chatDelta.more.
func normalChunk(c chatChunk) chatChunk {
	c.one, c.fingerprint, c.serviceTier = [1]chatChoice{}, "", ""
	c.Choices = append([]chatChoice(nil), c.Choices...)
	for i := range c.Choices {
		ch := &c.Choices[i]
		ch.finish = ""
		ch.Delta.more, ch.Delta.content, ch.Delta.refusal, ch.Delta.oneCall = false, "", "", [1]chatToolCallDelta{}
		ch.Delta.ToolCalls = append([]chatToolCallDelta(nil), ch.Delta.ToolCalls...)
		for j := range ch.Delta.ToolCalls {
			ch.Delta.ToolCalls[j].index = 0
		}
	}
	if len(c.Choices) == 0 {
		c.Choices = nil
	}
	for i := range c.Choices {
		if len(c.Choices[i].Delta.ToolCalls) == 0 {
			c.Choices[i].Delta.ToolCalls = nil
		}
		if len(c.Choices[i].Delta.FunctionCall) == 0 {
			c.Choices[i].Delta.FunctionCall = nil
		}
	}
	for _, r := range []*json.RawMessage{&c.Created, &c.Usage, &c.Error} {
		if len(*r) == 0 {
			*r = nil
		}
	}
	return c
}

// The Anthropic and Responses event decoders read what encoding/json reads
// into their structs, and typeOf what it reads into a struct with Type, or
// refuse, as unguardable, a key they read given twice or only in another
// case; seeded with every recorded stream of both.
func FuzzStreamEvents(f *testing.F) {
	for _, dir := range []string{"anthropic", "openai-responses"} {
		for _, name := range []string{"stream.sse", "stream2.sse", "gate-accept.sse", "gate-reask.sse"} {
			b, err := os.ReadFile(filepath.Join(wireDir, dir, name))
			if err != nil {
				f.Fatal(err)
			}
			evs, err := readAllEvents(bytes.NewReader(b))
			if err != nil {
				f.Fatal(err)
			}
			for _, ev := range evs {
				f.Add(ev.Data)
			}
		}
	}
	for _, s := range []string{
		`null`, `{"TYPE":"x","Index":1.5}`, `{"delta":{"type":"text_delta","text":"a\u00e9","citation":{"a":1}}}`, `{"output_index":"1"}`,
		`{"output_index":null,"item":{"type":3},"delta":null}`, `{"type":"a","type":"b"}`, `{"item":{"type":"a","type":"b"}}`, `{"delta":{"type":[]}}`,
		`{"sequence_number":1.0,"response":[1]}`, `{"index":-0}`, `{"content_block":{"type":"tool_use","id":"x"}}`,
		`{"delta":{"thin\u212aing":"a"}}`, `{"item":{"Type":"x"}}`, `{"Content_Block":{},"ſequence_number":1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var wm, gm messagesEvent
		werr, gerr := json.Unmarshal(data, &wm), decodeMessagesEvent(data, &gm)
		checkDecoded(t, "messages event", data, werr, gerr, gm, wm, tagNames(reflect.TypeOf(wm)))
		var wr, gr responsesEvent
		werr, gerr = json.Unmarshal(data, &wr), decodeResponsesEvent(data, &gr)
		checkDecoded(t, "responses event", data, werr, gerr, gr, wr, tagNames(reflect.TypeOf(wr)))
		var wd, gd messagesDelta
		werr, gerr = json.Unmarshal(data, &wd), decodeMessagesDelta(data, &gd)
		checkDecoded(t, "messages delta", data, werr, gerr, gd, wd, tagNames(reflect.TypeOf(wd)))
		if json.Valid(data) {
			var typ struct {
				Type string `json:"type"`
			}
			_ = json.Unmarshal(data, &typ)
			r, _ := root(data)
			got, err := typeOf(data, r)
			switch {
			case isUnguardable(err):
				if !keysAmbiguous(data, map[string]bool{"type": true}) {
					t.Fatalf("%q: typeOf refused it (%v), but it has no type twice or in another case", data, err)
				}
			case err != nil || got != typ.Type:
				t.Fatalf("%q: typeOf = %q, %v; encoding/json %q", data, got, err, typ.Type)
			}
		}
	})
}

// checkDecoded fails unless a hand decoder and encoding/json agree: both
// refuse, or both decode the same (raw values compared as bytes); or the
// decoder refused as unguardable data that has one of names twice or in
// another case in one object.
func checkDecoded(t *testing.T, what string, data []byte, werr, gerr error, got, want any, names map[string]bool) {
	t.Helper()
	if isUnguardable(gerr) {
		if !keysAmbiguous(data, names) {
			t.Fatalf("%s %q: refused (%v), but no key is twice or in another case", what, data, gerr)
		}
		return
	}
	if (werr == nil) != (gerr == nil) {
		t.Fatalf("%s %q: encoding/json: %v; decoder: %v", what, data, werr, gerr)
	}
	if werr == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%s %q:\n got %+v\nwant %+v", what, data, got, want)
	}
}

// A key read twice is refused as unguardable, however spelled.
func TestChatChunkDuplicateKeys(t *testing.T) {
	for _, s := range []string{
		`{"id":"a","id":"b"}`, `{"id":"a","ID":"b"}`, `{"choices":[{"delta":{"content":"a","content":"b"}}]}`,
		`{"choices":[{"delta":{"content":"a"},"delta":{"role":"x"}}]}`,
		`{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":"{}","Arguments":"{\"a\":1}"}}]}}]}`,
	} {
		if _, err := parseChatChunk([]byte(s)); !errors.Is(err, errJSON) || !isUnguardable(err) {
			t.Errorf("%s: %v, want errJSON, unguardable", s, err)
		}
	}
}

func readAllEvents(r *bytes.Reader) ([]streamEvent, error) {
	rd := newSSEReader(r, MaxBody)
	var out []streamEvent
	for {
		ev, err := rd.next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return out, err
		}
		out = append(out, ev)
	}
}

// chatOpening answers as the decoding into maps it replaces: a chunk with
// the role alone opens the stream, one with anything else of the answer
// does not.
func FuzzChatOpening(f *testing.F) {
	for _, s := range []string{
		`{"choices":[{"delta":{"role":"assistant","content":""},"finish_reason":null}],"usage":null}`,
		`{"choices":[{"delta":{"role":"assistant","content":"Hi"}}]}`, `{"choices":[{"delta":{"reasoning_content":"hm"}}]}`,
		`{"choices":[{"delta":{},"finish_reason":"stop"}]}`, `{"choices":[],"usage":{"total_tokens":1}}`, `null`, `[]`,
		`{"Choices":[{"Delta":{"Content":"x"}}]}`, `{"choices":[{"delta":{"r\u006fle":"x","content":null}}]}`, `{"choices":[{"delta":"x"}]}`,
		`{"choices":[{"finish_reason":1}]}`, `{"choices":[null]}`, `{"choices":[{"delta":{"tool_calls":[]}}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if hasDuplicateKeys(data) {
			return // the maps keep the last; either answer is safe
		}
		if got, want := chatOpening(data), chatOpeningByMaps(data); got != want {
			t.Fatalf("%q: chatOpening = %v, decoding into maps says %v", data, got, want)
		}
	})
}

// chatOpeningByMaps is the test chatOpening replaced.
func chatOpeningByMaps(data []byte) bool {
	var c struct {
		Choices []struct {
			Delta        map[string]json.RawMessage `json:"delta"`
			FinishReason *string                    `json:"finish_reason"`
		} `json:"choices"`
		Usage json.RawMessage `json:"usage"`
	}
	if json.Unmarshal(data, &c) != nil || (len(c.Usage) > 0 && string(c.Usage) != "null") {
		return false
	}
	for _, ch := range c.Choices {
		if ch.FinishReason != nil {
			return false
		}
		for k, v := range ch.Delta {
			if k != "role" && string(v) != `""` && string(v) != "null" {
				return false
			}
		}
	}
	return true
}

// hasDuplicateKeys reports whether an object anywhere in data has a key
// twice, spelled alike or alike but for case.
func hasDuplicateKeys(data []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	type frame struct {
		keys   map[string]bool
		object bool
		key    bool // the next token is a key
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if k, ok := tok.(string); ok && top != nil && top.object && top.key {
			k = strings.ToLower(k)
			if top.keys[k] {
				return true
			}
			top.keys[k] = true
			top.key = false
			continue
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{keys: map[string]bool{}, object: true, key: true})
			continue
		case json.Delim('['):
			stack = append(stack, &frame{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		if len(stack) > 0 && stack[len(stack)-1].object {
			stack[len(stack)-1].key = true
		}
	}
}

// tagNames are the json tag names of t's fields and, within, of the
// fields of the structs it holds.
func tagNames(t reflect.Type) map[string]bool {
	out := map[string]bool{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			return
		}
		for i := 0; i < t.NumField(); i++ {
			if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name != "" && name != "-" {
				out[name] = true
				walk(t.Field(i).Type)
			}
		}
	}
	walk(t)
	return out
}

// keysAmbiguous reports whether an object anywhere in data has one of
// names twice, or a key that only folds to one of names, as encoding/json
// folds keys (strings.EqualFold, or upper(lower(r)) as its earlier releases did).
func keysAmbiguous(data []byte, names map[string]bool) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	type frame struct {
		count  map[string]int
		object bool
		key    bool // the next token is a key
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if k, ok := tok.(string); ok && top != nil && top.object && top.key {
			for n := range names {
				if jsonFolds(k, n) {
					if k != n {
						return true
					}
					if top.count[n]++; top.count[n] > 1 {
						return true
					}
				}
			}
			top.key = false
			continue
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{count: map[string]int{}, object: true, key: true})
			continue
		case json.Delim('['):
			stack = append(stack, &frame{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		if len(stack) > 0 && stack[len(stack)-1].object {
			stack[len(stack)-1].key = true
		}
	}
}
