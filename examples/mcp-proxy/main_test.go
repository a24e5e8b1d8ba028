package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestMCPProxyExample pins what the example shows: the bad call answered
// by the proxy with isError and the feedback, and never forwarded; the
// corrected call reaching the server once, cleaned; the tools/list the
// proxy fetched itself. Everything it started has stopped when run
// returns: no goroutine is left.
func TestMCPProxyExample(t *testing.T) {
	defer goleak.VerifyNone(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out strings.Builder
	if err := run(ctx, &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	got := out.String()
	want := []string{
		"MCP server: go-sdk, one raw tool (forecast) that validates nothing itself",
		"proxy: httputil.ReverseProxy, Transport mcpguard.New, in front of the server",
		"MCP client: go-sdk, connected to the proxy",

		`client -> tools/call forecast {"city":"Paris","days":"3","units":"kelvin"}`,
		"has invalid arguments: answered with feedback, not forwarded",
		"client <- isError=true\n",
		`    | Invalid arguments for tool "forecast": 1 error.`,
		`    | - /units: expected one of "C", "F", got "kelvin"`,
		`    | Call forecast again with corrected arguments.`,

		`client -> tools/call forecast {"city":"Paris","days":"3","units":"C"}`,
		"  proxy: repaired number_string at /days",
		`  server: forecast runs with {"city":"Paris","days":3,"units":"C"}`,
		"client <- isError=false\n",
		"    | Paris, next 3 days: [21.5,23,19.5]",

		"the server received 1 tools/list (sent by the proxy, which learnt the schemas) and 1 tools/call: the corrected call, once.",
	}
	at := 0
	for _, w := range want {
		i := strings.Index(got[at:], w)
		if i < 0 {
			t.Fatalf("run output lacks %q (in order):\n%s", w, got)
		}
		at += i + len(w)
	}
	if n := strings.Count(got, "server: forecast runs"); n != 1 {
		t.Errorf("the server ran forecast %d times, want once:\n%s", n, got)
	}
	// "3" for an integer is the proxy's to fix, not the model's.
	if strings.Contains(got, "| - /days") {
		t.Errorf("the feedback names /days, which the proxy coerces:\n%s", got)
	}
}
