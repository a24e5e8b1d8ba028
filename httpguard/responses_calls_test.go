package httpguard

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// responsesCallsAgree fails unless the assembler's own list of its calls
// (assembler.calls) is what the codec reads of its response: the same calls,
// or the same error (response's as it is, the read's as unguardable).
func responsesCallsAgree(t *testing.T, what string, a *responsesAssembler) {
	t.Helper()
	got, gerr := a.calls()
	resp, rerr := a.response()
	var want []wireCall
	werr := rerr
	if rerr == nil {
		if want, werr = (responsesWire{}).calls(resp); werr != nil {
			werr = unguardable("the streamed response is not of a shape the guard reads", werr)
		}
	}
	switch {
	case (gerr == nil) != (werr == nil):
		t.Fatalf("%s: calls() = %v, %v; calls(response()) = %v, %v", what, got, gerr, want, werr)
	case gerr != nil && (gerr.Error() != werr.Error() || isUnguardable(gerr) != isUnguardable(werr) || errors.Is(gerr, errTooLarge) != errors.Is(werr, errTooLarge)):
		t.Fatalf("%s: calls() fails with %v; calls(response()) with %v", what, gerr, werr)
	case gerr == nil && !reflect.DeepEqual(got, want):
		t.Fatalf("%s: calls() = %q; calls(response()) = %q", what, got, want)
	}
}

// The Responses assembler lists the calls the codec reads of its
// response, after every event of every recorded stream (so also of each
// stream cut short there): the calls, their ids, names and arguments
// bytes, in order, or the same error.
func TestResponsesAssemblerCallsAreTheResponses(t *testing.T) {
	t.Parallel()
	names, err := filepath.Glob(filepath.Join(wireDir, "openai-responses", "*.sse"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no recorded streams: %v", err)
	}
	calls := 0
	for _, name := range names {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		evs, err := readAllEvents(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		a := &responsesAssembler{}
		responsesCallsAgree(t, filepath.Base(name)+" before any event", a)
		for i, ev := range evs {
			if _, err := a.add(ev); err != nil {
				break
			}
			responsesCallsAgree(t, fmt.Sprintf("%s after event %d (%s)", filepath.Base(name), i, ev.Event), a)
		}
		cs, _ := a.calls()
		calls += len(cs)
	}
	if calls == 0 {
		t.Fatal("no recorded stream has a call: the test compares nothing")
	}
}

// FuzzResponsesAssemblerCalls feeds the Responses assembler arbitrary
// events (data lines, each an event's payload): after each it takes, the
// calls it lists are those the codec reads of its response, or it fails
// as that read does. Seeded with the recorded streams.
func FuzzResponsesAssemblerCalls(f *testing.F) {
	names, _ := filepath.Glob(filepath.Join(wireDir, "openai-responses", "*.sse"))
	for _, name := range names {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		evs, err := readAllEvents(bytes.NewReader(b))
		if err != nil {
			f.Fatal(err)
		}
		var lines []string
		for _, ev := range evs {
			lines = append(lines, string(ev.Data))
		}
		f.Add(strings.Join(lines, "\n"))
	}
	f.Add(`{"type":"response.created","response":{"id":"r","output":[]}}` + "\n" +
		`{"type":"response.output_item.added","output_index":0,"item":{"type":"function_call","name":"a","call_id":"c","arguments":""}}` + "\n" +
		`{"type":"response.function_call_arguments.delta","output_index":0,"delta":"{\"x\":"}`)
	f.Add(`{"type":"response.created","response":null}` + "\n" +
		`{"type":"response.output_item.added","output_index":0,"item":{"type":"tool_search_call","execution":"elsewhere"}}`)
	// Streams that end with the items as they streamed, so that calls()
	// reads the calls from the items: a call, a tool search of each
	// execution, and calls and searches that cannot be read.
	ended := func(items ...string) string {
		lines := []string{`{"type":"response.created","response":{"id":"r","output":[]}}`}
		for i, it := range items {
			lines = append(lines,
				fmt.Sprintf(`{"type":"response.output_item.added","output_index":%d,"item":%s}`, i, it),
				fmt.Sprintf(`{"type":"response.output_item.done","output_index":%d,"item":%s}`, i, it))
		}
		return strings.Join(append(lines, `{"type":"response.completed","response":{"id":"r","output":[`+strings.Join(items, ",")+`]}}`), "\n")
	}
	call := `{"type":"function_call","name":"f","call_id":"c","arguments":"{}"}`
	for _, items := range [][]string{
		{call}, {call, `{"type":"message","content":[]}`, call}, {`{"type":"tool_search_call","execution":"server"}`, call},
		{`{"type":"tool_search_call","execution":"client"}`}, {call, `{"type":"tool_search_call","execution":"elsewhere"}`},
		{`{"type":"tool_search_call","execution":1}`}, {`{"type":"function_call","name":"f","call_id":"c","call_id":"d"}`},
		{`{"type":"function_call","name":"f","Name":"g"}`}, {`{"type":"function_call","arguments":{}}`},
		{`{"type":"function_call","namespace":"ns","name":"f","arguments":"{\"a\":\"\u00e9\"}"}`}, {`{"type":"function_call","namespace":null}`},
		{`{"type":"function_call","arguments":"é\t"}`}, {"{\"type\":\"function_call\",\"arguments\":\"\xff\"}"}, {`{"type":"function_call","arguments":null}`},
		{`{"type":"function_call","type":"function_call"}`}, {`{"type":"function_cal\u006c","name":"f"}`}, {},
	} {
		f.Add(ended(items...))
	}
	f.Fuzz(func(t *testing.T, stream string) {
		a := &responsesAssembler{}
		for i, line := range strings.Split(stream, "\n") {
			done, err := a.add(streamEvent{Data: []byte(line)})
			if err != nil {
				return
			}
			responsesCallsAgree(t, fmt.Sprintf("after line %d", i), a)
			if done {
				return
			}
		}
	})
}

// An event after the terminal one (an upstream that goes on) changes the
// items: calls() reads them again, not what it found before that event.
func TestResponsesAssemblerCallsAfterTerminal(t *testing.T) {
	t.Parallel()
	item := `{"type":"function_call","name":"f","call_id":"c","arguments":"{}"}`
	a := &responsesAssembler{}
	for _, line := range []string{
		`{"type":"response.created","response":{"id":"r","output":[]}}`,
		`{"type":"response.output_item.added","output_index":0,"item":` + item + `}`,
		`{"type":"response.output_item.done","output_index":0,"item":` + item + `}`,
		`{"type":"response.completed","response":{"id":"r","output":[` + item + `]}}`,
	} {
		if _, err := a.add(streamEvent{Data: []byte(line)}); err != nil {
			t.Fatalf("add(%s): %v", line, err)
		}
	}
	if cs, err := a.calls(); err != nil || len(cs) != 1 {
		t.Fatalf("calls() = %v, %v; want the one call", cs, err)
	}
	later := `{"type":"response.output_item.added","output_index":1,"item":{"type":"function_call","name":"g","call_id":"d","arguments":"{}"}}`
	if _, err := a.add(streamEvent{Data: []byte(later)}); err != nil {
		t.Fatalf("add(%s): %v", later, err)
	}
	if a.finalIsItems() {
		t.Fatal("finalIsItems() = true after an item the terminal response does not hold")
	}
	responsesCallsAgree(t, "after an item past the terminal event", a)
}
