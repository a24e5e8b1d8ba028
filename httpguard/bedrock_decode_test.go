package httpguard

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// bedrockFixtureEvents are the events of every recorded ConverseStream.
func bedrockFixtureEvents(t testing.TB) map[string][]streamEvent {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(wireDir, "bedrock", "*.eventstream"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no bedrock stream fixtures: %v", err)
	}
	out := map[string][]streamEvent{}
	for _, name := range names {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		evs, err := readAllEventStream(b)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out[filepath.Base(name)] = evs
	}
	return out
}

// readAllEventStream reads the events of an AWS event stream.
func readAllEventStream(b []byte) ([]streamEvent, error) {
	rd := newEventStreamReader(bytes.NewReader(b), MaxBody)
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

// decodeBedrockEvent reads an event's payload as encoding/json decodes it
// into a bedrockEvent, whatever the bytes (escapes, nulls, values of the
// wrong type), and its others as the member walk it replaces; or it
// refuses, as unguardable, a key it reads given twice or only in another
// case, and only then. Seeded with every recorded ConverseStream.
func FuzzBedrockEvent(f *testing.F) {
	for _, evs := range bedrockFixtureEvents(f) {
		for _, ev := range evs {
			f.Add(ev.Data)
		}
	}
	for _, ev := range bedrockStream("tooluse_1", `{"city": `, `"Paris"}`) {
		f.Add(ev.Data)
	}
	for _, s := range []string{
		`null`, `[]`, `1`, `{"contentBlockIndex":null}`, `{"contentBlockIndex":1.0}`, `{"contentBlockIndex":"1"}`, `{"contentBlockIndex":-0}`,
		`{"ContentBlockIndex":1}`, `{"contentBlockIndex":1,"contentBlockIndex":2}`, `{"contentBlockIndex":99999999999999999999}`,
		`{"start":null}`, `{"start":{}}`, `{"start":{"toolUse":null}}`, `{"start":{"toolUse":1}}`, `{"start":"x"}`, `{"start":[]}`,
		`{"start":{"ToolUse":{}}}`, `{"start":{"toolUse":{},"toolUse":{}}}`, `{"start":{"text":"x","image":{"a":1}}}`, `{"start":{"Text":"x"}}`,
		`{"delta":null}`, `{"delta":{}}`, `{"delta":{"text":null}}`, `{"delta":{"text":1}}`, `{"delta":{"text":"a\u00e9\"\\"}}`, "{\"delta\":{\"text\":\"\xff\"}}",
		`{"delta":{"TEXT":"a"}}`, `{"delta":{"text":"a","text":"b"}}`, `{"delta":{"toolUse":null}}`, `{"delta":{"toolUse":{"input":null}}}`,
		`{"delta":{"toolUse":{"input":{}}}}`, `{"delta":{"toolUse":{"Input":"x"}}}`, `{"delta":{"toolUse":"x"}}`,
		`{"delta":{"reasoningContent":{"text":"a","signature":"s","redactedContent":"cg=="}}}`, `{"delta":{"reasoningContent":null}}`,
		`{"delta":{"reasoningContent":{"text":null,"signature":1}}}`, `{"delta":{"reasoningContent":{"Signature":"s"}}}`,
		`{"delta":{"citation":{"a":1}}}`, `{"delta":{"citation":null,"image":{}}}`, `{"delta":{"te\u0078t":"x"}}`, `{"delta":{"toolUſe":{}}}`,
		`{"delta":{"image":1},"start":{"video":1}}`, `{"start":{"video":1},"delta":{"image":1}}`, `{"p":"x","p":"y","contentBlockIndex":0}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var want bedrockEvent
		werr := json.Unmarshal(data, &want)
		var got bedrockEvent
		gerr := decodeBedrockEvent(data, &got)
		checkDecoded(t, "bedrock event", data, werr, gerr, exported(got), exported(want), tagNames(reflect.TypeOf(want)))
		if gerr == nil {
			if others, err := bedrockOthersByMembers(data); err != nil || others != got.others {
				t.Fatalf("%q: others %q; the member walk says %q, %v", data, got.others, others, err)
			}
		}
	})
}

// exported is e's members that encoding/json sets.
func exported(e bedrockEvent) bedrockEvent {
	return bedrockEvent{Index: e.Index, Start: e.Start, Delta: e.Delta}
}

// bedrockOthersByMembers is the member walk decodeBedrockEvent's others
// replaces: the last member not null of start, then of delta, whose key
// the wire code does not read.
func bedrockOthersByMembers(data []byte) (string, error) {
	r, err := root(data)
	if err != nil || kind(data, r) != '{' {
		return "", err
	}
	var others string
	for _, key := range []string{"start", "delta"} {
		v, ok, err := field(data, r, key)
		if err != nil {
			return "", err
		}
		if !ok || kind(data, v) == 'n' {
			continue
		}
		if kind(data, v) != '{' {
			return "", fmt.Errorf("%s not an object", key)
		}
		ms, err := objectMembers(data, v)
		if err != nil {
			return "", err
		}
		for _, m := range ms {
			switch m.key {
			case "toolUse", "text", "reasoningContent":
			default:
				if kind(data, m.v) != 'n' {
					others = m.key
				}
			}
		}
	}
	return others, nil
}
