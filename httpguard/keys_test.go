package httpguard

import (
	"bytes"
	"strings"
	"testing"
	"unicode"
)

// The calls of a response whose tool-call keys are given twice or only in
// another case are unguardable, on every protocol: encoding/json's clients
// (go-openai, genai) read a key in another case and the last of two,
// openai-go and anthropic-sdk-go only the exact key (the last of two), so
// no reading of the guard's is every client's. Each response holds a valid
// call where the guard read before and an invalid one where a client
// reads; accept refuses them too (it would write the cleaned arguments
// where one client does not read them).
func TestCallsKeysUnguardable(t *testing.T) {
	const (
		chatCall   = `{"id":"c1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}`
		chatBad    = `{"id":"c2","type":"function","function":{"name":"get_weather","arguments":"{\"city\":42}"}}`
		respCall   = `{"type":"function_call","call_id":"c1","name":"get_weather","arguments":"{\"city\":\"Paris\"}"}`
		respBad    = `{"type":"function_call","call_id":"c2","name":"get_weather","arguments":"{\"city\":42}"}`
		msgCall    = `{"type":"tool_use","id":"t1","name":"get_weather","input":{"city":"Paris"}}`
		msgBad     = `{"type":"tool_use","id":"t2","name":"get_weather","input":{"city":42}}`
		geminiCall = `{"name":"get_weather","args":{"city":"Paris"}}`
		geminiBad  = `{"name":"get_weather","args":{"city":42}}`
	)
	chat := func(message string) string {
		return `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":` + message + `,"finish_reason":"tool_calls"}]}`
	}
	gemini := func(part string) string {
		return `{"candidates":[{"content":{"role":"model","parts":[` + part + `]},"finishReason":"STOP"}]}`
	}
	for _, c := range []struct {
		name string
		w    wireProtocol
		resp string
	}{
		{"chat/tool_calls twice", chatWire{}, chat(`{"role":"assistant","tool_calls":[` + chatCall + `],"tool_calls":[` + chatBad + `]}`)},
		{"chat/Tool_Calls", chatWire{}, chat(`{"role":"assistant","Tool_Calls":[` + chatBad + `]}`)},
		{"chat/tool_calls and Tool_Calls", chatWire{}, chat(`{"role":"assistant","tool_calls":[` + chatCall + `],"Tool_Calls":[` + chatBad + `]}`)},
		{"chat/Arguments", chatWire{}, chat(`{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}","Arguments":"{\"city\":42}"}}]}`)},
		{"chat/Function", chatWire{}, chat(`{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"},"Function":{"name":"get_weather","arguments":"{\"city\":42}"}}]}`)},
		{"chat/Message", chatWire{}, `{"choices":[{"index":0,"Message":{"role":"assistant","tool_calls":[` + chatBad + `]}}]}`},
		{"chat/choices twice", chatWire{}, `{"choices":[{"index":0,"message":{"role":"assistant","content":"hi"}}],"choices":[{"index":0,"message":{"role":"assistant","tool_calls":[` + chatBad + `]}}]}`},
		{"chat/long s", chatWire{}, `{"choices":[{"index":0,"message":{"role":"assistant","tool_calls":[` + chatCall + `]}}],"choice\u017f":[{"index":0,"message":{"role":"assistant","tool_calls":[` + chatBad + `]}}]}`},
		{"responses/Output", responsesWire{}, `{"id":"r","object":"response","output":[` + respCall + `],"Output":[` + respBad + `]}`},
		{"responses/Output alone", responsesWire{}, `{"id":"r","object":"response","Output":[` + respBad + `]}`},
		{"responses/arguments twice", responsesWire{}, `{"output":[{"type":"function_call","call_id":"c1","name":"get_weather","arguments":"{\"city\":\"Paris\"}","arguments":"{\"city\":42}"}]}`},
		{"responses/Type", responsesWire{}, `{"output":[{"type":"message","Type":"function_call","call_id":"c2","name":"get_weather","arguments":"{\"city\":42}"}]}`},
		{"messages/Content", messagesWire{}, `{"type":"message","role":"assistant","content":[` + msgCall + `],"Content":[` + msgBad + `]}`},
		{"messages/content twice", messagesWire{}, `{"type":"message","role":"assistant","content":[` + msgCall + `],"content":[` + msgBad + `]}`},
		{"messages/Input", messagesWire{}, `{"content":[{"type":"tool_use","id":"t1","name":"get_weather","input":{"city":"Paris"},"Input":{"city":42}}]}`},
		{"messages/Content escaped", messagesWire{}, `{"content":[` + msgCall + `],"\u0043ontent":[` + msgBad + `]}`},
		{"gemini/functionCall twice", geminiWire{}, gemini(`{"functionCall":` + geminiCall + `,"functionCall":` + geminiBad + `}`)},
		{"gemini/FunctionCall", geminiWire{}, gemini(`{"FunctionCall":` + geminiBad + `}`)},
		{"gemini/functionCall and FUNCTIONCALL", geminiWire{}, gemini(`{"functionCall":` + geminiCall + `,"FUNCTIONCALL":` + geminiBad + `}`)},
		{"gemini/Args", geminiWire{}, gemini(`{"functionCall":{"name":"get_weather","args":{"city":"Paris"},"Args":{"city":42}}}`)},
		{"gemini/Candidates", geminiWire{}, `{"candidates":[],"Candidates":[{"content":{"parts":[{"functionCall":` + geminiBad + `}]}}]}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp := []byte(c.resp)
			if calls, err := c.w.calls(resp); !isUnguardable(err) {
				t.Errorf("calls = %+v, %v; want unguardable", calls, err)
			}
			if _, err := c.w.accept(resp, [][]byte{[]byte(`{"city":"Lyon"}`)}); !isUnguardable(err) {
				t.Errorf("accept = %v; want unguardable", err)
			}
		})
	}
}

// Each protocol's stream event decoder refuses, as unguardable, an event
// whose tool-call keys are given twice or only in another case: the SDK's
// accumulator would read another call than the gate holds and validates.
func TestStreamKeysUnguardable(t *testing.T) {
	for _, c := range []struct {
		name  string
		parse func([]byte) error
		data  string
	}{
		{"chat/tool_calls twice", chatParse, `{"id":"x","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"name":"get_weather","arguments":""}}],"tool_calls":[{"index":0,"id":"c2","function":{"name":"delete_all","arguments":""}}]}}]}`},
		{"chat/Tool_Calls", chatParse, `{"id":"x","choices":[{"index":0,"delta":{"Tool_Calls":[{"index":0,"id":"c1","function":{"name":"get_weather","arguments":""}}]}}]}`},
		{"chat/Arguments", chatParse, `{"id":"x","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":","Arguments":"{\"city\":42}"}}]}}]}`},
		{"chat/Delta", chatParse, `{"id":"x","choices":[{"index":0,"Delta":{"content":"hi"}}]}`},
		{"chat/long s", chatParse, `{"id":"x","choices":[{"index":0,"delta":{"tool_call\u017f":[{"index":0,"id":"c1","function":{"name":"get_weather","arguments":""}}]}}]}`},
		{"messages/partial_json twice", messagesParse, `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"city\":\"Paris\"}","partial_json":"{\"city\":42}"}}`},
		{"messages/Partial_JSON", messagesParse, `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","Partial_JSON":"{\"city\":42}"}}`},
		{"messages/Kelvin sign", messagesParse, `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"a","thin\u212aing":"b"}}`},
		{"messages/Content_Block", messagesParse, `{"type":"content_block_start","index":1,"Content_Block":{"type":"tool_use","id":"t1","name":"get_weather","input":{}}}`},
		{"messages/type twice in the block", messagesParse, `{"type":"content_block_start","index":1,"content_block":{"type":"text","type":"tool_use","id":"t1","name":"get_weather","input":{}}}`},
		{"messages/Type in the block", messagesParse, `{"type":"content_block_start","index":1,"content_block":{"type":"text","text":"","TYPE":"tool_use"}}`},
		{"responses/Item", responsesParse, `{"type":"response.output_item.added","output_index":0,"item":{"type":"message"},"Item":{"type":"function_call","call_id":"c1","name":"get_weather","arguments":""}}`},
		{"responses/type twice in the item", responsesParse, `{"type":"response.output_item.added","output_index":0,"item":{"type":"message","type":"function_call","call_id":"c1","name":"get_weather","arguments":""}}`},
		{"responses/Type in the item", responsesParse, `{"type":"response.output_item.added","output_index":0,"item":{"Type":"function_call","call_id":"c1","name":"get_weather","arguments":""}}`},
		{"responses/Output_Index", responsesParse, `{"type":"response.function_call_arguments.delta","Output_Index":0,"delta":"{\"city\":42}"}`},
		{"gemini/functionCall twice", geminiParse, `{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"get_weather","args":{"city":"Paris"}},"functionCall":{"name":"get_weather","args":{"city":42}}}]}}]}`},
		{"gemini/FunctionCall", geminiParse, `{"candidates":[{"content":{"role":"model","parts":[{"text":"Let me check."},{"FunctionCall":{"name":"get_weather","args":{"city":42}}}]}}]}`},
		{"gemini/Parts", geminiParse, `{"candidates":[{"content":{"role":"model","parts":[{"text":"hi"}],"Parts":[{"functionCall":{"name":"get_weather","args":{"city":42}}}]}}]}`},
		{"gemini/Text", geminiParse, `{"candidates":[{"content":{"role":"model","parts":[{"text":"a","Text":"b"}]}}]}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := c.parse([]byte(c.data)); !isUnguardable(err) {
				t.Errorf("parse = %v; want unguardable", err)
			}
		})
	}
}

func chatParse(b []byte) error {
	_, err := parseChatChunk(b)
	return err
}

func messagesParse(b []byte) error {
	_, err := parseMessagesEvent(streamEvent{Data: b})
	return err
}

func responsesParse(b []byte) error {
	_, err := parseResponsesEvent(streamEvent{Data: b})
	return err
}

func geminiParse(b []byte) error {
	_, err := parseGeminiChunk(b)
	return err
}

// text reads the answer text the client reads, or nothing: a text key
// given twice or in another case is unguardable.
func TestTextKeysUnguardable(t *testing.T) {
	for _, c := range []struct {
		name string
		w    wireProtocol
		resp string
	}{
		{"chat/Content", chatWire{}, `{"choices":[{"index":0,"message":{"role":"assistant","content":"a","Content":"b"}}]}`},
		{"chat/content twice", chatWire{}, `{"choices":[{"index":0,"message":{"role":"assistant","content":"a","content":"b"}}]}`},
		{"responses/Text", responsesWire{}, `{"output":[{"type":"message","content":[{"type":"output_text","Text":"b"}]}]}`},
		{"responses/Output", responsesWire{}, `{"output":[],"OUTPUT":[{"type":"message","content":[{"type":"output_text","text":"b"}]}]}`},
		{"messages/text twice", messagesWire{}, `{"content":[{"type":"text","text":"a","text":"b"}]}`},
		{"messages/Type", messagesWire{}, `{"content":[{"type":"thinking","Type":"text","text":"b"}]}`},
		{"gemini/Text", geminiWire{}, `{"candidates":[{"content":{"parts":[{"Text":"b"}]}}]}`},
		{"gemini/Thought", geminiWire{}, `{"candidates":[{"content":{"parts":[{"text":"b","thought":false,"Thought":true}]}}]}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			if text, err := c.w.text([]byte(c.resp)); !isUnguardable(err) {
				t.Errorf("text = %q, %v; want unguardable", text, err)
			}
		})
	}
}

// A response every client reads alike is read as before: keys spelled
// exactly (escaped or not), unknown keys beside them (a server's own, in
// any case, and keys that only look like a protocol key), and keys inside
// the arguments in any case and twice (the tool's, not the protocol's);
// accept writes the cleaned arguments into the member the clients read,
// and text reads the text.
func TestKeysReadAsBefore(t *testing.T) {
	for _, c := range []struct {
		name     string
		w        wireProtocol
		resp     string
		args     string // the call's arguments as calls reads them
		accepted string // resp after accept of {"city":"Lyon"}
		text     string
	}{
		{"chat", chatWire{},
			`{"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":"Hi","Reasoning_Content":"hm","tool_calls":[{"id":"c1","type":"function","function":{"name":"get_weather","\u0061rguments":"{\"City\":1,\"city\":\"Paris\",\"city\":\"Nice\"}","Name_":"x"}}],"toolcalls":[]},"finish_reason":"tool_calls"}],"X-Extra":{"Choices":1}}`,
			`{"City":1,"city":"Paris","city":"Nice"}`,
			`{"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":"Hi","Reasoning_Content":"hm","tool_calls":[{"id":"c1","type":"function","function":{"name":"get_weather","\u0061rguments":"{\"city\":\"Lyon\"}","Name_":"x"}}],"toolcalls":[]},"finish_reason":"tool_calls"}],"X-Extra":{"Choices":1}}`,
			"Hi"},
		{"responses", responsesWire{},
			`{"id":"r","output":[{"type":"message","content":[{"type":"output_text","text":"Hi","Annotations":[]}]},{"type":"function_call","call_id":"c1","name":"get_weather","arguments":"{\"CITY\":\"Paris\"}","Status_":"x"}],"outputs":1}`,
			`{"CITY":"Paris"}`,
			`{"id":"r","output":[{"type":"message","content":[{"type":"output_text","text":"Hi","Annotations":[]}]},{"type":"function_call","call_id":"c1","name":"get_weather","arguments":"{\"city\":\"Lyon\"}","Status_":"x"}],"outputs":1}`,
			"Hi"},
		{"messages", messagesWire{},
			`{"type":"message","content":[{"type":"text","text":"Hi","Citations_":null},{"type":"tool_use","id":"t1","name":"get_weather","input":{"city":"Paris","City":"Nice","Input":1}}],"Contents":[]}`,
			`{"city":"Paris","City":"Nice","Input":1}`,
			`{"type":"message","content":[{"type":"text","text":"Hi","Citations_":null},{"type":"tool_use","id":"t1","name":"get_weather","input":{"city":"Lyon"}}],"Contents":[]}`,
			"Hi"},
		{"gemini", geminiWire{},
			`{"candidates":[{"content":{"role":"model","parts":[{"text":"Hi","ThoughtSignature_":"x"},{"functionCall":{"name":"get_weather","args":{"city":"Paris","Args":{"args":1}},"ID_":1}}]},"FinishReason_":"STOP"}],"candidate":[]}`,
			`{"city":"Paris","Args":{"args":1}}`,
			`{"candidates":[{"content":{"role":"model","parts":[{"text":"Hi","ThoughtSignature_":"x"},{"functionCall":{"name":"get_weather","args":{"city":"Lyon"},"ID_":1}}]},"FinishReason_":"STOP"}],"candidate":[]}`,
			"Hi"},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp := []byte(c.resp)
			calls, err := c.w.calls(resp)
			if err != nil || len(calls) != 1 || calls[0].Name != "get_weather" || string(calls[0].Args) != c.args {
				t.Fatalf("calls = %+v, %v; want get_weather %s", calls, err, c.args)
			}
			got, err := c.w.accept(resp, [][]byte{[]byte(`{"city":"Lyon"}`)})
			if err != nil || string(got) != c.accepted {
				t.Errorf("accept = %v\n got %s\nwant %s", err, got, c.accepted)
			}
			if text, err := c.w.text(resp); err != nil || text != c.text {
				t.Errorf("text = %q, %v; want %q", text, err, c.text)
			}
		})
	}
}

// The stream decoders read the recorded streams, and events with keys of
// their own beside the protocol's, as before.
func TestStreamKeysReadAsBefore(t *testing.T) {
	for _, c := range []struct {
		parse func([]byte) error
		data  string
	}{
		{chatParse, `{"id":"x","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"\u0061rguments":"{\"City\":1,\"City\":2}"}}],"Reasoning_Content":"hm"},"Logprobs":null}],"Obfuscation":"x"}`},
		{messagesParse, `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"Partial_JSON\":1,\"partial_json\":2}","Extra":1}}`},
		{messagesParse, `{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t1","name":"get_weather","input":{"Type":1,"type":2}},"Index_":1}`},
		{responsesParse, `{"type":"response.output_item.added","output_index":0,"item":{"type":"function_call","call_id":"c1","name":"get_weather","arguments":"","Types":1},"Obfuscation":"x"}`},
		{geminiParse, `{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"get_weather","args":{"FunctionCall":1,"functionCall":2}},"ThoughtSignature":"x"}]}}],"Usage":1}`},
	} {
		if err := c.parse([]byte(c.data)); err != nil {
			t.Errorf("%s: %v", c.data, err)
		}
	}
	for _, p := range protocols {
		for _, name := range []string{"stream.sse", "stream2.sse", "gate-accept.sse", "gate-reask.sse"} {
			evs, err := readAllEvents(bytes.NewReader(fixture(t, p.dir, name)))
			if err != nil {
				t.Fatal(err)
			}
			asm := p.w.newAssembler()
			for _, ev := range evs {
				if _, err := asm.add(ev); err != nil {
					t.Fatalf("%s/%s: %s: %v", p.dir, name, ev.Data, err)
				}
			}
			resp, err := asm.response()
			if err != nil {
				t.Fatalf("%s/%s: %v", p.dir, name, err)
			}
			if _, err := p.w.calls(resp); err != nil {
				t.Errorf("%s/%s: calls: %v", p.dir, name, err)
			}
			if _, err := p.w.text(resp); err != nil {
				t.Errorf("%s/%s: text: %v", p.dir, name, err)
			}
		}
	}
}

// jsonFolds reports whether encoding/json, of some release, matches the
// keys a and b without regard to case: strings.EqualFold, or upper(lower(r))
// rune by rune as its earlier releases did.
func jsonFolds(a, b string) bool {
	upperLower := func(r rune) rune { return unicode.ToUpper(unicode.ToLower(r)) }
	return strings.EqualFold(a, b) || strings.Map(upperLower, a) == strings.Map(upperLower, b)
}
