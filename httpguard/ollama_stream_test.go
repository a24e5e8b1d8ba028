package httpguard

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ollamaLines is the NDJSON stream of lines, one event each.
func ollamaLines(stream string) []streamEvent {
	var evs []streamEvent
	for _, l := range strings.Split(stream, "\n") {
		if l != "" {
			evs = append(evs, streamEvent{Data: []byte(l)})
		}
	}
	return evs
}

// ollamaCallStreams are streams of the shapes calls() must read as
// ollamaWire.calls reads the assembled response, errors included.
var ollamaCallStreams = map[string]string{
	"recorded": "",
	"fuzz seed": `{"model":"m","message":{"role":"assistant","content":"Hi"},"done":false}` + "\n" +
		`{"model":"m","message":{"role":"assistant","content":"","tool_calls":[{"id":"c","function":{"name":"a","arguments":{"x":1}}}]},"done":false}` + "\n" +
		`{"model":"m","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","eval_count":3}`,
	"arguments a string":    `{"message":{"tool_calls":[{"function":{"arguments":"{}"}}]},"done":true}`,
	"null message":          `{"message":null,"done":null}` + "\n" + `{"done":true}`,
	"arguments with spaces": `{"message":{"tool_calls":[{"function":{"name":"a", "arguments": {"x": [1, 2]}}}]},"done":false}` + "\n" + `{"message":{"content":""},"done":true}`,
	"no function, then a bad name": `{"message":{"tool_calls":[{"function":{"name":7}}]},"done":false}` + "\n" +
		`{"message":{"tool_calls":[{"id":"c2"}]},"done":false}` + "\n" + `{"message":{},"done":true}`,
	"id not a string": `{"message":{"tool_calls":[{"id":5,"function":{"name":"a"}}]},"done":true}`,
	"no done line":    `{"message":{"tool_calls":[{"function":{"name":"a"}}]},"done":false}`,
	"done line without message, a key twice": `{"message":{"tool_calls":[{"function":{"name":"a"}}]},"done":false}` + "\n" +
		`{"done":true,"x":1,"x":2}`,
}

// Ollama's assembler lists the calls of the lines as ollamaWire.calls
// reads them of the response it assembles, over the recorded stream and
// shapes the guard reads or refuses.
func TestOllamaCallsListed(t *testing.T) {
	rec, err := os.ReadFile(filepath.Join(wireDir, "ollama", "gate-accept.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	for name, stream := range ollamaCallStreams {
		if name == "recorded" {
			stream = string(rec)
		}
		t.Run(name, func(t *testing.T) { checkListed(t, ollamaWire{}, ollamaLines(stream)) })
	}
}

// FuzzOllamaCallsListed checks checkListed over arbitrary streams, seeded
// with the recorded one and ollamaCallStreams.
func FuzzOllamaCallsListed(f *testing.F) {
	rec, err := os.ReadFile(filepath.Join(wireDir, "ollama", "gate-accept.ndjson"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(rec))
	for _, s := range ollamaCallStreams {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, stream string) { checkListed(t, ollamaWire{}, ollamaLines(stream)) })
}
