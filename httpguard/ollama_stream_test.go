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

// ollamaLine is a stream line of content and tool calls (JSON), the done
// line when done.
func ollamaLineJSON(content, calls string, done bool) string {
	tc := ""
	if calls != "" {
		tc = `,"tool_calls":[` + calls + `]`
	}
	end := `"done":false}`
	if done {
		end = `"done_reason":"stop","done":true,"eval_count":11}`
	}
	return `{"model":"llama3.2","created_at":"2025-07-07T20:43:37.5Z","message":{"role":"assistant","content":"` + content + `"` + tc + `},` + end
}

// A stream whose calls are valid and unchanged reaches the client as the
// upstream sent it, line for line: each call on the line it came on, the
// text after them, the done line with its own text.
func TestOllamaStreamReleasedAsSent(t *testing.T) {
	up := strings.Join([]string{
		ollamaLineJSON("Let me ", "", false),
		ollamaLineJSON("check.", `{"id":"call_1","function":{"index":0,"name":"get_weather","arguments":{"city":"Paris"}}}`, false),
		ollamaLineJSON("", `{"id":"call_2","function":{"index":1,"name":"get_weather","arguments":{"city":"Lyon"}}}`, false),
		ollamaLineJSON("Both.", "", true),
	}, "\n") + "\n"
	req, err := os.ReadFile(filepath.Join(wireDir, "ollama", "stream-request.json"))
	if err != nil {
		t.Fatal(err)
	}
	for name, stages := range geminiStacks() {
		t.Run(name, func(t *testing.T) {
			got, n := streamThroughAt(t, stages, "http://ollama.test/api/chat", string(req), "application/x-ndjson", up)
			if got != up || n != 1 {
				t.Errorf("%d upstream requests; the client read\n%s\nwant the upstream's lines\n%s", n, got, up)
			}
		})
	}
}

// A stream whose call is asked again is written as before: the text, then
// the second attempt's call and the done line, as accept writes them.
func TestOllamaStreamReaskedIsWritten(t *testing.T) {
	first := ollamaLineJSON("Let me check.", "", false) + "\n" +
		ollamaLineJSON("", `{"id":"call_1","function":{"name":"get_weather","arguments":{"city":42}}}`, false) + "\n" +
		ollamaLineJSON("", "", true) + "\n"
	second := ollamaLineJSON("", `{"id":"call_2","function":{"name":"get_weather","arguments":{"city":"Paris"}}}`, false) + "\n" +
		ollamaLineJSON("", "", true) + "\n"
	req, err := os.ReadFile(filepath.Join(wireDir, "ollama", "stream-request.json"))
	if err != nil {
		t.Fatal(err)
	}
	want := ollamaLineJSON("Let me check.", "", false) + "\n" +
		`{"model":"llama3.2","created_at":"2025-07-07T20:43:37.5Z","message":{"role":"assistant","content":"","tool_calls":[{"id":"call_2","function":{"name":"get_weather","arguments":{"city":"Paris"}}}]},"done":false}` + "\n" +
		`{"model":"llama3.2","created_at":"2025-07-07T20:43:37.5Z","message":{"role":"assistant","content":""},"done_reason":"stop","done":true,"eval_count":11}` + "\n"
	for name, stages := range geminiStacks() {
		t.Run(name, func(t *testing.T) {
			got, n := streamThroughAt(t, stages, "http://ollama.test/api/chat", string(req), "application/x-ndjson", first, second)
			if got != want || n != 2 {
				t.Errorf("%d upstream requests; the client read\n%s\nwant\n%s", n, got, want)
			}
		})
	}
}
