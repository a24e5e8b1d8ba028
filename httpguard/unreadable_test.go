package httpguard

import (
	"errors"
	"strings"
	"testing"
)

// An Anthropic or Gemini answer that is not its protocol's JSON cannot be
// guarded, and its readers say so with an unguardable error (the
// transport's contract for what it refuses under fail closed), sync and
// streamed; the upstream's own error event and a stream past the bound
// keep errors of their own.
func TestAnthropicGeminiUnreadableAnswers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		w    wireProtocol
		resp string
	}{
		{messagesWire{}, `{"content":"hi"}`},
		{messagesWire{}, `{"content":[{"type":"tool_use","id":1,"name":"get_weather","input":{}}]}`},
		{messagesWire{}, `[]`},
		{geminiWire{}, `{"candidates":{}}`},
		{geminiWire{}, `{"candidates":[{"content":{"parts":[{"functionCall":{"name":7,"args":{}}}]}}]}`},
	} {
		if _, err := tc.w.calls([]byte(tc.resp)); !isUnguardable(err) {
			t.Errorf("%s.calls(%s): %v, want an unguardable error", tc.w.name(), tc.resp, err)
		}
	}
	for name, tc := range map[string]struct {
		w   wireProtocol
		evs []streamEvent
	}{
		"anthropic block out of order": {messagesWire{}, anthropicEvents(anthropicStart,
			`{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`)},
		"anthropic delta without its block": {messagesWire{}, anthropicEvents(anthropicStart,
			`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}}`)},
		"anthropic without message_start": {messagesWire{}, anthropicEvents(anthropicEnd, anthropicStop)},
		"anthropic event not JSON":        {messagesWire{}, []streamEvent{{Event: "message_start", Data: []byte(`{"type":`)}}},
		"gemini chunk not JSON":           {geminiWire{}, []streamEvent{{Data: []byte(`{"candidates":[`)}}},
		"gemini empty stream":             {geminiWire{}, nil},
	} {
		a := tc.w.newAssembler()
		var err error
		for _, ev := range tc.evs {
			if _, err = a.add(ev); err != nil {
				break
			}
		}
		if err == nil {
			_, err = a.response()
		}
		if !isUnguardable(err) {
			t.Errorf("%s: %v, want an unguardable error", name, err)
		}
	}
	var se *upstreamStreamError
	if _, err := (messagesWire{}).newAssembler().add(streamEvent{Event: "error", Data: []byte(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)}); !errors.As(err, &se) || isUnguardable(err) {
		t.Errorf("anthropic error event: %v, want the upstream's error, not unguardable", err)
	}
	if _, err := (geminiWire{}).newAssembler().add(streamEvent{Data: []byte(`{"error":{"code":503,"message":"overloaded","status":"UNAVAILABLE"}}`)}); !errors.As(err, &se) || isUnguardable(err) {
		t.Errorf("gemini error chunk: %v, want the upstream's error, not unguardable", err)
	}
	a := messagesWire{}.newAssembler()
	a.add(anthropicEvents(anthropicStart)[0])
	a.add(anthropicEvents(`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)[0])
	big := anthropicEvents(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"` + strings.Repeat("a", 1<<20) + `"}}`)[0]
	var err error
	for i := 0; i < 9 && err == nil; i++ {
		_, err = a.add(big)
	}
	if !errors.Is(err, errTooLarge) || isUnguardable(err) {
		t.Errorf("9 MiB of text: %v, want errTooLarge, not unguardable", err)
	}
}
