package httpguard

import (
	"fmt"
	"testing"
)

// chatOneByteDeltaStream is the events of a chat stream of about size bytes of
// server-sent events whose one tool call comes one byte per chunk: its
// arguments (member "arguments"), or its name (member "name").
func chatOneByteDeltaStream(size int, member string) []streamEvent {
	evs := []streamEvent{{Data: []byte(`{"id":"chatcmpl-b","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_b","type":"function","function":{"name":"","arguments":""}}]},"finish_reason":null}]}`)}}
	n := len(evs[0].Data) + len("data: \n\n")
	for i := 0; n < size; i++ {
		d := []byte(fmt.Sprintf(`{"id":"chatcmpl-b","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{%q:"%c"}}]},"finish_reason":null}]}`, member, 'a'+i%26))
		n += len(d) + len("data: \n\n")
		evs = append(evs, streamEvent{Data: d})
	}
	return append(evs, streamEvent{Data: []byte(`[DONE]`)})
}

// BenchmarkChatStreamOneByteDeltas assembles a chat stream of 4 MiB of
// server-sent events whose one tool call comes one byte per chunk (about
// 27,000 chunks): its arguments, or its name. Assembly is linear in the
// stream.
func BenchmarkChatStreamOneByteDeltas(b *testing.B) {
	for _, member := range []string{"arguments", "name"} {
		b.Run(member, func(b *testing.B) {
			evs := chatOneByteDeltaStream(4<<20, member)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				a := chatWire{}.newAssembler()
				for _, ev := range evs {
					if _, err := a.add(ev); err != nil {
						b.Fatal(err)
					}
				}
				if _, err := a.response(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
