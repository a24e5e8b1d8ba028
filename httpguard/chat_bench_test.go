package httpguard

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
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

// discardEvents is an eventWriter that drops what it is given: the client
// of BenchmarkChatGate, which measures the gate alone.
type discardEvents struct{}

func (discardEvents) Write(p []byte) (int, error)   { return len(p), nil }
func (discardEvents) putEvent(ev streamEvent) error { return nil }

// BenchmarkChatGate is the Chat gate's part of a guarded stream, the
// first attempt of BenchmarkTransport/openai-chat/stream: the recorded
// stream's events through a new gate, its calls listed, then released.
func BenchmarkChatGate(b *testing.B) {
	data, err := os.ReadFile(filepath.Join(wireDir, "openai-chat", "gate-accept.sse"))
	if err != nil {
		b.Fatal(err)
	}
	evs, err := readAllEvents(bytes.NewReader(data))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		g := newChatGate(discardEvents{})
		for _, ev := range evs {
			if done, err := g.event(streamEvent{Data: ev.Data}); err != nil {
				b.Fatal(err)
			} else if done {
				break
			}
		}
		if calls, err := g.current().calls(); err != nil || len(calls) != 2 {
			b.Fatalf("%d calls, %v", len(calls), err)
		}
		if ok, err := g.release(); !ok || err != nil {
			b.Fatalf("release: %v, %v", ok, err)
		}
	}
}
