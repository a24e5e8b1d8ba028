package httpguard

import (
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
	_, err := parseMessagesEvent(sseEvent{Data: b})
	return err
}

func responsesParse(b []byte) error {
	_, err := parseResponsesEvent(sseEvent{Data: b})
	return err
}

func geminiParse(b []byte) error {
	_, err := parseGeminiChunk(b)
	return err
}

// jsonFolds reports whether encoding/json, of some release, matches the
// keys a and b without regard to case: strings.EqualFold, or upper(lower(r))
// rune by rune as its earlier releases did.
func jsonFolds(a, b string) bool {
	upperLower := func(r rune) rune { return unicode.ToUpper(unicode.ToLower(r)) }
	return strings.EqualFold(a, b) || strings.Map(upperLower, a) == strings.Map(upperLower, b)
}
