package main

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/toolguard/toolguard/middleware/fakemodel"
)

// TestMCPExample pins what the example shows: which server it uses, the
// server's schema, the bad call caught before reaching the server, the
// feedback, the corrected call and the server's real result.
func TestMCPExample(t *testing.T) {
	t.Parallel()
	tests := []struct {
		server, serverLine string
	}{
		{"inprocess", "MCP server: in-process go-sdk server (get-sum and echo, as in server-everything)"},
		{"npx", "MCP server: @modelcontextprotocol/server-everything@2026.8.31, started with npx over stdio"},
	}
	for _, tc := range tests {
		t.Run(tc.server, func(t *testing.T) {
			t.Parallel()
			if tc.server == "npx" {
				if _, err := exec.LookPath("npx"); err != nil {
					if os.Getenv("TOOLGUARD_REQUIRE_NPX") == "1" {
						t.Fatalf("npx is not on PATH and TOOLGUARD_REQUIRE_NPX=1: %v", err)
					}
					t.Skipf("npx is not on PATH (%v): skipping the example with server-everything", err)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			var out strings.Builder
			if err := run(ctx, &out, tc.server, scriptedModel()); err != nil {
				t.Fatalf("run(%q): %v\n%s", tc.server, err, out.String())
			}
			want := []string{
				tc.serverLine,
				"tools: echo, get-sum",
				`get-sum inputSchema (from the server): {"$schema":"http://json-schema.org/draft-07/schema#","properties":{"a":{"description":"First number","type":"number"},"b":{"description":"Second number","type":"number"}},"required":["a","b"],"type":"object"}`,
				`model: get-sum({"a": "17"})`,
				"toolguard: call_1 has invalid arguments; nothing is sent to the MCP server",
				`| - /b: missing required property (number)`, // "17" for /a is coerced: not the model's to fix
				`model: get-sum({"a": 17, "b": 25})`,
				`MCP server runs get-sum({"a": 17, "b": 25}) -> The sum of 17 and 25 is 42.`,
				"assistant: 17 + 25 = 42.",
				"3 model calls; 1 tools/call sent to the MCP server, with valid arguments.",
			}
			got := out.String()
			at := 0
			for _, w := range want {
				i := strings.Index(got[at:], w)
				if i < 0 {
					t.Fatalf("run(%q) output lacks %q (in order):\n%s", tc.server, w, got)
				}
				at += i + len(w)
			}
			if strings.Contains(got, `- /a: expected number`) {
				t.Errorf("run(%q): the feedback names /a, which the coercions fix:\n%s", tc.server, got)
			}
			if n := strings.Count(got, "MCP server runs"); n != 1 {
				t.Errorf("the MCP server ran %d tool calls, want 1:\n%s", n, got)
			}
		})
	}
}

func TestMCPExampleUnknownServer(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	err := run(context.Background(), &out, "http", scriptedModel())
	want := `mcp example: -server="http": want auto, npx or inprocess`
	if err == nil || err.Error() != want {
		t.Errorf("run(%q) = %v, want %q", "http", err, want)
	}
}

// Without an API key the example says so and runs on the fake model.
func TestMCPExampleOffline(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-set-in-the-users-shell")
	var out strings.Builder
	model, err := chooseModel(&out, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := model.(*fakemodel.Model); !ok {
		t.Errorf("chooseModel() = %T, want *fakemodel.Model", model)
	}
	if want := "Running offline on a scripted fake model (-openai runs on OpenAI).\n"; out.String() != want {
		t.Errorf("chooseModel() printed %q, want %q", out.String(), want)
	}
}
