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

// bedrockCallStreams are streams whose calls the assembler lists: every
// recorded ConverseStream, and shapes at the edges of what calls reads.
func bedrockCallStreams(t testing.TB) map[string][]streamEvent {
	out := bedrockFixtureEvents(t)
	ev := func(typ, data string) streamEvent { return streamEvent{Event: typ, Data: []byte(data)} }
	base := bedrockStream("tooluse_1", `{"city": `, `"Paris"}`)
	with := func(extra ...streamEvent) []streamEvent {
		evs := append([]streamEvent(nil), base[:len(base)-3]...)
		return append(evs, extra...)
	}
	start := func(i int, tu string) streamEvent {
		return ev("contentBlockStart", fmt.Sprintf(`{"contentBlockIndex":%d,"start":{"toolUse":%s}}`, i, tu))
	}
	delta := func(i int, in string) streamEvent {
		d, _ := json.Marshal(in)
		return ev("contentBlockDelta", fmt.Sprintf(`{"contentBlockIndex":%d,"delta":{"toolUse":{"input":%s}}}`, i, d))
	}
	stop := ev("messageStop", `{"stopReason":"tool_use"}`)
	out["two fragments"] = base
	out["no messageStart"] = base[1:]
	out["no input"] = with(stop)
	out["blank input"] = with(delta(1, " \u00a0"), stop)
	out["input not JSON"] = with(delta(1, `{"city": "Par`), stop)
	out["input a JSON string"] = with(delta(1, `"Paris"`), stop)
	out["input not UTF-8"] = with(delta(1, "{\xff"), stop)
	out["server tool"] = append(with(delta(1, `{}`)), start(2, `{"toolUseId":"s","name":"web","type":"server_tool_use"}`), delta(2, `{}`), stop)
	out["type not a string"] = append(with(delta(1, `{}`)), start(2, `{"toolUseId":"s","name":"web","type":1}`), stop)
	out["id not a string"] = append(with(delta(1, `{}`)), start(2, `{"toolUseId":2,"name":"web"}`), stop)
	out["input in the start"] = append(with(delta(1, `{}`)), start(2, `{"toolUseId":"x","name":"f","input":{"a":1}}`), stop)
	out["Input in the start"] = append(with(delta(1, `{}`)), start(2, `{"toolUseId":"x","name":"f","Input":{"a":1}}`), stop)
	out["name twice"] = append(with(delta(1, `{}`)), start(2, `{"toolUseId":"x","name":"f","name":"g"}`), stop)
	out["name twice, escaped"] = append(with(delta(1, `{}`)), start(2, `{"toolUseId":"x","name":"f","n\u0061me":"g"}`), stop)
	out["keys not UTF-8"] = append(with(delta(1, `{}`)), start(2, "{\"toolUseId\":\"x\",\"\xff\":1,\"\xfe\":2}"), stop)
	out["id escaped"] = append(with(delta(1, `{}`)), start(2, `{"toolUseId":"x\"\u00e9","name":"f"}`), stop)
	out["input null"] = with(delta(1, ` null `), stop)
	out["input spaced in a string"] = with(delta(1, `{"city":"New York"}`), stop)
	out["input a number"] = with(delta(1, `42`), stop)
	out["output in messageStop"] = with(delta(1, `{}`), ev("messageStop", `{"stopReason":"tool_use","output":{"message":{"content":[]}}}`))
	out["Output in metadata"] = with(delta(1, `{}`), stop, ev("metadata", `{"Output":1}`))
	out["keys that clash"] = with(delta(1, `{}`), stop, ev("metadata", `{"StopReason":"x","usage":{}}`))
	out["an unknown member"] = with(delta(1, `{}`), stop, ev("metadata", `{"usage":{},"future":1}`))
	return out
}

// calls lists what bedrockWire.calls reads of the assembled response, and
// fails where it or the assembly would, with the same error.
func TestBedrockCallsListed(t *testing.T) {
	for name, evs := range bedrockCallStreams(t) {
		t.Run(name, func(t *testing.T) { checkBedrockCalls(t, evs) })
	}
}

// checkBedrockCalls feeds evs to an assembler, up to the first that it
// refuses, and compares its calls with those of its response.
func checkBedrockCalls(t *testing.T, evs []streamEvent) {
	t.Helper()
	a := &bedrockAssembler{}
	for _, ev := range evs {
		if _, err := a.add(ev); err != nil {
			break
		}
	}
	got, gerr := a.calls()
	var want []wireCall
	resp, werr := a.response()
	if werr == nil {
		if want, werr = (bedrockWire{}).calls(resp); werr != nil {
			werr = unguardable(whyStreamShape, werr)
		}
	}
	if fmt.Sprint(gerr) != fmt.Sprint(werr) || isUnguardable(gerr) != isUnguardable(werr) {
		t.Fatalf("calls() error %v; calls(response()) %v", gerr, werr)
	}
	if gerr == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("calls() = %q\nresponse's = %q", got, want)
	}
}

// The assembler's calls are those of its response, whatever the events:
// each line of the input an event, its type, a tab, its payload.
func FuzzBedrockStreamCalls(f *testing.F) {
	for _, evs := range bedrockCallStreams(f) {
		var b []byte
		for _, ev := range evs {
			b = append(append(append(append(b, ev.Event...), '\t'), ev.Data...), '\n')
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var evs []streamEvent
		for _, line := range bytes.Split(data, []byte("\n")) {
			typ, payload, _ := bytes.Cut(line, []byte("\t"))
			evs = append(evs, streamEvent{Event: string(typ), Data: payload})
		}
		checkBedrockCalls(t, evs)
	})
}
