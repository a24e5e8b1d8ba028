package httpguard

import (
	"encoding/json"
	"strings"
	"testing"
)

// ollamaCollect is an event writer that keeps what a gate writes.
type ollamaCollect struct{ evs []streamEvent }

func (c *ollamaCollect) putEvent(ev streamEvent) error {
	c.evs = append(c.evs, streamEvent{Data: append([]byte(nil), ev.Data...)})
	return nil
}

func (c *ollamaCollect) Write(p []byte) (int, error) { return len(p), nil }

// FuzzOllamaStream feeds an Ollama gate arbitrary lines: it never panics;
// what it writes is JSON, one value a line; the assembled response of a
// stream it took is one JSON object whose calls the codec reads; and the
// accepted attempt's lines are JSON too.
func FuzzOllamaStream(f *testing.F) {
	f.Add(`{"model":"m","message":{"role":"assistant","content":"Hi"},"done":false}` + "\n" +
		`{"model":"m","message":{"role":"assistant","content":"","tool_calls":[{"id":"c","function":{"name":"a","arguments":{"x":1}}}]},"done":false}` + "\n" +
		`{"model":"m","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","eval_count":3}`)
	f.Add(`{"error":"boom"}`)
	f.Add(`{"message":{"tool_calls":[{"function":{"arguments":"{}"}}]},"done":true}`)
	f.Add(`{"message":null,"done":null}` + "\n" + `{"done":true}`)
	f.Fuzz(func(t *testing.T, stream string) {
		out := &ollamaCollect{}
		g := ollamaWire{}.newGate(out)
		took := true
		for _, line := range strings.Split(stream, "\n") {
			done, err := g.event(streamEvent{Data: []byte(line)})
			if err != nil {
				took = false
				break
			}
			if done {
				break
			}
		}
		if took {
			if resp, err := g.response(); err == nil {
				if !json.Valid(resp) {
					t.Fatalf("the assembled response is not JSON:\n%s", resp)
				}
				if _, err := (ollamaWire{}).calls(resp); err == nil {
					_ = g.accept(resp)
				}
			}
		}
		for _, ev := range out.evs {
			if !json.Valid(ev.Data) || strings.ContainsAny(string(ev.Data), "\n") {
				t.Fatalf("the gate wrote a line that is not one JSON value: %q", ev.Data)
			}
		}
	})
}
