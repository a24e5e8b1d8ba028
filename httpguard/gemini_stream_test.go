package httpguard

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// checkListed feeds evs to a fresh assembler of w and checks, after each
// event, that the calls it lists (assembler.calls) are what gateSink would read
// of its response: the same calls (ids, names, argument bytes, order) and
// the same error. It stops at the first event the assembler refuses.
func checkListed(t *testing.T, w wireProtocol, evs []streamEvent) {
	t.Helper()
	a := w.newAssembler()
	check := func(after int) {
		t.Helper()
		got, gerr := a.calls()
		var want []wireCall
		resp, werr := a.response()
		if werr == nil {
			if want, werr = w.calls(resp); werr != nil {
				werr = unguardable("the streamed response is not of a shape the guard reads", werr)
			}
		}
		if (gerr == nil) != (werr == nil) || (gerr != nil && gerr.Error() != werr.Error()) {
			t.Fatalf("after %d events: calls() error %v, want %v", after, gerr, werr)
		}
		if gerr == nil && (len(got) != len(want) || (len(got) > 0 && !reflect.DeepEqual(got, want))) {
			t.Fatalf("after %d events: calls() = %+v, want %+v", after, got, want)
		}
	}
	check(0)
	for i, ev := range evs {
		if _, err := a.add(ev); err != nil {
			return
		}
		check(i + 1)
	}
}

// geminiEvents is the SSE stream of the chunks given, one event each.
func geminiEvents(chunks ...string) []streamEvent {
	evs := make([]streamEvent, len(chunks))
	for i, c := range chunks {
		evs[i] = streamEvent{Data: []byte(c)}
	}
	return evs
}

// geminiCallStreams are streams of the shapes calls() must read as
// geminiWire.calls reads the assembled response, errors included.
var geminiCallStreams = map[string][]string{
	"part not an object": {`{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","args":{}}},5],"role":"model"},"index":0}]}`},
	"name not a string":  {`{"candidates":[{"content":{"parts":[{"functionCall":{"name":7,"args":{}}}]},"index":0}]}`},
	"call error then part error": {
		`{"candidates":[{"content":{"parts":[{"functionCall":{"name":7}}]},"index":0}]}`,
		`{"candidates":[{"content":{"parts":["x"]},"index":0}]}`},
	"args a string, id given, null call": {
		`{"candidates":[{"content":{"parts":[{"functionCall":{"id":"c1","name":"f","args":"{\"a\":"}},{"functionCall":null},{"text":"t"}]},"index":0}],"responseId":"r"}`,
		`{"candidates":[{"content":{"parts":[{"functionCall":{"name":"g"}}],"role":"model"},"finishReason":"STOP","index":0}]}`},
	"no candidates, then one": {`{"usageMetadata":{}}`, `{"candidates":[]}`,
		`{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","args":{"x":[1, 2]}}}]},"index":0}]}`},
	"several candidates without calls": {`{"candidates":[{"content":{"parts":[{"text":"a"}]},"index":0},{"content":{"parts":[{"text":"b"}]},"index":1}]}`},
	"several candidates, then a call": {`{"candidates":[{"index":1,"content":{"parts":[{"text":"b"}]}}]}`,
		`{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f"}}]},"index":0}]}`},
	"malformed": {`{"candidates":[{"finishReason":"MALFORMED_FUNCTION_CALL","finishMessage":"Malformed function call: x","index":0}]}`},
}

// Gemini's assembler lists the calls of the events as geminiWire.calls
// reads them of the response it assembles, over every recorded stream and
// shapes the guard reads or refuses.
func TestGeminiCallsListed(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(wireDir, "gemini", "*.sse"))
	if len(files) == 0 {
		t.Fatal("no gemini stream fixtures")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			checkListed(t, geminiWire{}, events(t, b))
		})
	}
	for name, chunks := range geminiCallStreams {
		t.Run(name, func(t *testing.T) { checkListed(t, geminiWire{}, geminiEvents(chunks...)) })
	}
}

// FuzzGeminiCallsListed checks checkListed over arbitrary streams, seeded
// with the recorded ones and geminiCallStreams.
func FuzzGeminiCallsListed(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(wireDir, "gemini", "*.sse"))
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, chunks := range geminiCallStreams {
		f.Add([]byte("data: " + strings.Join(chunks, "\n\ndata: ") + "\n\n"))
	}
	f.Fuzz(func(t *testing.T, stream []byte) {
		evs, err := readAllEvents(bytes.NewReader(stream))
		if err != nil {
			return
		}
		checkListed(t, geminiWire{}, evs)
	})
}
