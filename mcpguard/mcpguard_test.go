package mcpguard_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/mcpguard"
)

// A bad call is answered by the transport with an isError result holding
// toolguard's feedback, and never reaches the server; the corrected call
// reaches it once, as sent.
func TestBadThenGoodCall(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			srv, rec := newServer(t, mode)
			var ev events
			cs := connect(t, srv, mode, mcpguard.WithEventHandler(ev.handler))

			bad, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "forecast",
				Arguments: map[string]any{"city": "Paris", "days": 0}})
			if err != nil {
				t.Fatalf("CallTool(bad) error: %v", err)
			}
			want := "Invalid arguments for tool \"forecast\": 1 error.\n- /days: expected a number >= 1, got 0\nCall forecast again with corrected arguments."
			if !bad.IsError || text(bad) != want {
				t.Errorf("CallTool(bad) = isError %v, %q; want isError true, %q", bad.IsError, text(bad), want)
			}
			afterBad := rec.received("tools/call")
			if len(afterBad) != 0 {
				t.Fatalf("the server received %d tools/call after the bad call, want 0: %q", len(afterBad), afterBad)
			}

			good, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "forecast",
				Arguments: map[string]any{"city": "Paris", "days": 3}})
			if err != nil {
				t.Fatalf("CallTool(good) error: %v", err)
			}
			if good.IsError || text(good) != `{"temp":21.5}` {
				t.Errorf("CallTool(good) = isError %v, %q; want the tool's result", good.IsError, text(good))
			}
			calls := rec.received("tools/call")
			if got := arguments(t, calls); !slices.Equal(got, []string{`{"city":"Paris","days":3}`}) {
				t.Errorf("the server received the arguments %q, want the good call's once", got)
			}
			if k := ev.kinds(); !slices.Equal(k, []string{string(guard.EventInvalid)}) {
				t.Errorf("events %q, want [invalid]", k)
			} else if e := ev.all[0]; e.Middleware != mcpguard.Name || e.Tool != "forecast" || e.CallID != "2" || e.Feedback != want {
				t.Errorf("event = %+v; want Middleware %q, Tool forecast, CallID 2 and the feedback the client read", e, mcpguard.Name)
			}
			t.Logf("bad call %s: the server received %d tools/call; the client read %s", `{"city":"Paris","days":0}`, len(afterBad), resultJSON(t, bad))
			t.Logf("good call: the server received %d tools/call: %s", len(calls), strings.Join(calls, " "))
			t.Logf("good call: the client read %s", resultJSON(t, good))
		})
	}
}

// A call the transport can fix (an integer sent as a string, a null
// optional value) reaches the server cleaned, the rest of its body as the
// client wrote it.
func TestCoercedCallReachesServerCleaned(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			srv, rec := newServer(t, mode)
			var ev events
			cs := connect(t, srv, mode, mcpguard.WithEventHandler(ev.handler))
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "forecast",
				Arguments: map[string]any{"city": "Paris", "days": "5", "units": nil}})
			if err != nil {
				t.Fatalf("CallTool error: %v", err)
			}
			if res.IsError {
				t.Fatalf("CallTool = isError, %q; want the tool's result", text(res))
			}
			calls := rec.received("tools/call")
			if got := arguments(t, calls); !slices.Equal(got, []string{`{"city":"Paris","days":5}`}) {
				t.Errorf("the server received the arguments %q, want [{\"city\":\"Paris\",\"days\":5}]", got)
			}
			if k := ev.kinds(); !slices.Contains(k, string(guard.EventRepaired)) || !slices.Contains(k, string(guard.EventStripped)) {
				t.Errorf("events %q, want repaired and stripped among them", k)
			}
			t.Logf("server received: %s", calls)
		})
	}
}

// A result whose structuredContent breaks the tool's outputSchema reaches
// the client as an isError result naming the violation, or as it came
// with PassOutput; an event reports it either way.
func TestOutputSchemaViolation(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			srv, _ := newServer(t, mode)
			var ev events
			cs := connect(t, srv, mode, mcpguard.WithEventHandler(ev.handler))
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "bad_output", Arguments: map[string]any{}})
			if err != nil {
				t.Fatalf("CallTool error: %v", err)
			}
			want := "Invalid result: tool \"bad_output\" returned structuredContent that does not match its outputSchema, so the result was withheld: 1 error.\n" +
				"- /temp: expected number, got \"warm\"\nThe tool broke its own output contract; do not rely on its output."
			if !res.IsError || text(res) != want || res.StructuredContent != nil {
				t.Errorf("CallTool = isError %v, %q, structured %v; want isError true, %q, none", res.IsError, text(res), res.StructuredContent, want)
			}
			if k := ev.kinds(); !slices.Equal(k, []string{string(mcpguard.EventInvalidResult)}) {
				t.Errorf("events %q, want [invalid_result]", k)
			}
			t.Logf("output-schema violation: the client read %s", resultJSON(t, res))

			var passed events
			cs = connect(t, srv, mode, mcpguard.WithEventHandler(passed.handler), mcpguard.WithOutputViolations(mcpguard.PassOutput))
			res, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "bad_output", Arguments: map[string]any{}})
			if err != nil {
				t.Fatalf("CallTool (PassOutput) error: %v", err)
			}
			if res.IsError || text(res) != `{"temp":"warm"}` {
				t.Errorf("CallTool (PassOutput) = isError %v, %q; want the tool's result as sent", res.IsError, text(res))
			}
			if k := passed.kinds(); !slices.Equal(k, []string{string(mcpguard.EventInvalidResult)}) {
				t.Errorf("events (PassOutput) %q, want [invalid_result]", k)
			}
		})
	}
}

// resultJSON returns the tool result a client read, as JSON, with <, > and
// & as they were read (go-sdk's MarshalJSON escapes them as \u003c, …).
func resultJSON(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatalf("json.Marshal(%v): %v", res, err)
	}
	return strings.NewReplacer(`\u003c`, "<", `\u003e`, ">", `\u0026`, "&").Replace(string(b))
}
