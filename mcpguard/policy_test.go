package mcpguard_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/mcpguard"
)

// newFilesServer is a go-sdk server (stateless, JSON) with annotated
// tools: read_file says it is read-only, delete_file says it is
// destructive, touch says nothing.
func newFilesServer(t *testing.T) (*httptest.Server, *recorder) {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "files", Version: "v1"}, nil)
	yes := true
	schema := json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)
	ran := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ran"}}}, nil
	}
	s.AddTool(&mcp.Tool{Name: "read_file", InputSchema: schema, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, ran)
	s.AddTool(&mcp.Tool{Name: "delete_file", InputSchema: schema, Annotations: &mcp.ToolAnnotations{DestructiveHint: &yes}}, ran)
	s.AddTool(&mcp.Tool{Name: "touch", InputSchema: schema}, ran)
	rec := &recorder{}
	srv := httptest.NewServer(rec.wrap(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})))
	t.Cleanup(srv.Close)
	return srv, rec
}

// RefuseDestructive on a trusted server: the destructive tool and the one
// without annotations (destructive by the specification's defaults) are
// refused, never forwarded nor counted by a limit; the read-only one runs.
// On a server that is not trusted, its read-only claim is not believed.
func TestRefuseDestructive(t *testing.T) {
	for _, trusted := range []bool{true, false} {
		name := "untrusted"
		if trusted {
			name = "trusted"
		}
		t.Run(name, func(t *testing.T) {
			srv, rec := newFilesServer(t)
			var ev events
			opts := []mcpguard.Option{mcpguard.WithEventHandler(ev.handler), mcpguard.WithToolPolicy(mcpguard.RefuseDestructive()),
				mcpguard.WithCallLimit(mcpguard.PerSession, guard.WithThreadLimit(1))}
			if trusted {
				opts = append(opts, mcpguard.WithTrustedServers(srv.URL+"/"))
			}
			cs := connect(t, srv, serverMode{"stateless/json", true, true}, opts...)
			got := map[string]string{}
			for _, tool := range []string{"delete_file", "touch", "read_file"} {
				res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"path": "/tmp/x"}})
				if err != nil {
					t.Fatalf("CallTool(%s): %v", tool, err)
				}
				got[tool] = text(res)
				t.Logf("%s: isError=%v %q", tool, res.IsError, text(res))
			}
			refused := `Not executed: tool "delete_file" was not called: mcpguard: the tool may be destructive`
			want := map[string]string{"delete_file": refused,
				"touch":     `Not executed: tool "touch" was not called: mcpguard: the tool may be destructive`,
				"read_file": "ran"}
			if !trusted {
				want["read_file"] = `Not executed: tool "read_file" was not called: mcpguard: the tool may be destructive`
			}
			for tool, w := range want {
				if got[tool] != w {
					t.Errorf("CallTool(%s) = %q, want %q", tool, got[tool], w)
				}
			}
			wantCalls := map[bool]int{true: 1, false: 0}[trusted]
			if n := len(rec.received("tools/call")); n != wantCalls {
				t.Errorf("the server received %d tools/call, want %d", n, wantCalls)
			}
			wantKinds := []string{"tool_denied", "tool_denied"}
			if !trusted {
				wantKinds = append(wantKinds, "tool_denied")
			}
			if k := ev.kinds(); !slices.Equal(k, wantKinds) {
				t.Errorf("events %q, want %q", k, wantKinds)
			} else if e := ev.all[0]; e.Tool != "delete_file" || !errors.Is(e.Err, mcpguard.ErrDestructive) {
				t.Errorf("event %+v, want delete_file's with ErrDestructive", e)
			}
		})
	}
}

// A policy reads the tool's name, server and schemas, and its annotations
// only from a trusted server.
func TestToolPolicySeesTrustedAnnotationsOnly(t *testing.T) {
	srv, _ := newFilesServer(t)
	for _, trusted := range []string{srv.URL, "http://other.test/"} {
		var mu sync.Mutex
		var seen []mcpguard.ToolInfo
		policy := func(_ context.Context, ti mcpguard.ToolInfo) error {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, ti)
			return nil
		}
		cs := connect(t, srv, serverMode{"stateless/json", true, true}, mcpguard.WithToolPolicy(policy), mcpguard.WithTrustedServers(trusted))
		if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "a"}}); err != nil {
			t.Fatal(err)
		}
		if len(seen) != 1 {
			t.Fatalf("the policy was asked %d times, want 1", len(seen))
		}
		ti := seen[0]
		if ti.Name != "read_file" || ti.Server != srv.URL+"/" || string(ti.InputSchema) == "" {
			t.Errorf("ToolInfo = %+v, want read_file's on %s with its schema", ti, srv.URL)
		}
		isTrusted := trusted == srv.URL
		if isTrusted != (ti.Annotations != nil) || isTrusted && (ti.Annotations.ReadOnlyHint == nil || !*ti.Annotations.ReadOnlyHint || ti.Destructive()) {
			t.Errorf("trusted %v: Annotations = %+v, Destructive %v", isTrusted, ti.Annotations, ti.Destructive())
		}
	}
}

// Invalid options panic at construction.
func TestPolicyOptionsPanic(t *testing.T) {
	for name, f := range map[string]func(){
		"nil policy":   func() { mcpguard.WithToolPolicy(nil) },
		"relative URL": func() { mcpguard.WithTrustedServers("/mcp") },
		"ftp URL":      func() { mcpguard.WithTrustedServers("ftp://x/") },
		"nil observer": func() { mcpguard.WithObserver(nil) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}
