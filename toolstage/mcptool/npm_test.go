package mcptool_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/fakemodel"
	"github.com/toolguard/toolguard/toolstage"
	"github.com/toolguard/toolguard/toolstage/mcptool"
	"github.com/toolguard/toolguard/validation"
)

// The reference servers of ../shared/corpus/README.md, pinned.
const (
	serverEverything = "@modelcontextprotocol/server-everything@2026.8.31"
	serverMemory     = "@modelcontextprotocol/server-memory@2026.8.31"
)

// npmTimeout bounds each test against an npm server, the first download of
// the package by npx -y included.
const npmTimeout = 3 * time.Minute

// npmServer is a client session with a reference server started by npx.
type npmServer struct {
	session  *mcp.ClientSession
	toolCall atomic.Int32 // tools/call requests sent
}

// startNPM starts pkg with npx -y over stdio, HOME in a temporary directory,
// and connects a client to it. The test is skipped when npx is not on PATH
// or cannot start the server (no access to the npm registry and nothing in
// npm's cache), unless TOOLGUARD_REQUIRE_NPX=1 (CI), which makes that a
// failure. The
// server is stopped when the test ends.
func startNPM(ctx context.Context, t *testing.T, pkg string, env ...string) *npmServer {
	t.Helper()
	npx, err := exec.LookPath("npx")
	if err != nil {
		if os.Getenv("TOOLGUARD_REQUIRE_NPX") == "1" {
			t.Fatalf("npx is not on PATH and TOOLGUARD_REQUIRE_NPX=1: %v", err)
		}
		t.Skipf("npx is not on PATH (%v): skipping the test against %s; install Node.js to run it (CI sets TOOLGUARD_REQUIRE_NPX=1)", err, pkg)
	}
	// HOME is a fresh directory, but npm keeps its usual cache, so that a
	// package fetched once (or pre-fetched by .ci/run) is not downloaded
	// again.
	cache := os.Getenv("npm_config_cache")
	if cache == "" {
		if home, err := os.UserHomeDir(); err == nil {
			cache = filepath.Join(home, ".npm")
		}
	}
	cmd := exec.Command(npx, "-y", pkg)
	cmd.Env = append(os.Environ(),
		"HOME="+t.TempDir(),
		"npm_config_cache="+cache,
		"npm_config_prefer_offline=true",
		// Offline with nothing cached: fail at once rather than retry for a
		// minute (.ci/run fetches the packages before the tests).
		"npm_config_fetch_retries=0",
		"npm_config_update_notifier=false",
		"npm_config_fund=false",
		"npm_config_audit=false",
	)
	cmd.Env = append(cmd.Env, env...)
	stderr := new(syncBuffer)
	cmd.Stderr = stderr
	setProcessGroup(cmd)

	s := &npmServer{}
	client := mcp.NewClient(&mcp.Implementation{Name: "toolguard-test", Version: "v1"}, nil)
	client.AddSendingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/call" {
				s.toolCall.Add(1)
			}
			return next(ctx, method, req)
		}
	})
	s.session, err = client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		sweep(cmd)
		if os.Getenv("TOOLGUARD_REQUIRE_NPX") != "1" {
			// npx is here but could not start the server: most likely no
			// access to the npm registry and nothing in npm's cache.
			t.Skipf("could not start %s with npx (offline and not in npm's cache?): %v; CI sets TOOLGUARD_REQUIRE_NPX=1 and fails instead\nstderr:\n%s", pkg, err, stderr)
		}
		t.Fatalf("starting %s with npx: %v\nstderr:\n%s", pkg, err, stderr)
	}
	t.Cleanup(func() {
		terminate(cmd)
		_ = s.session.Close() // reports how the terminated process ended
		sweep(cmd)
		if t.Failed() {
			t.Logf("%s stderr:\n%s", pkg, stderr)
		}
	})
	return s
}

// syncBuffer is a bytes.Buffer safe for the concurrent writes of a command
// and reads of a test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// compileAll compiles every tool's Schema as ToolArgValidation would and
// reports the tools whose schema does not compile.
func compileAll(t *testing.T, tools []toolstage.Tool) {
	t.Helper()
	var failed []string
	for _, tool := range tools {
		if _, err := validation.Compile(tool.Schema()); err != nil {
			failed = append(failed, tool.Name()+": "+err.Error())
		}
	}
	if len(failed) > 0 {
		t.Errorf("%d of %d inputSchemas do not compile:\n%s", len(failed), len(tools), strings.Join(failed, "\n"))
	}
}

func names(tools []toolstage.Tool) []string {
	out := make([]string, len(tools))
	for i, tool := range tools {
		out[i] = tool.Name()
	}
	return out
}

func toolNamed(t *testing.T, tools []toolstage.Tool, name string) toolstage.Tool {
	t.Helper()
	i := slices.IndexFunc(tools, func(tool toolstage.Tool) bool { return tool.Name() == name })
	if i < 0 {
		t.Fatalf("no tool %q among %v", name, names(tools))
	}
	return tools[i]
}

// correct runs a fake model that makes the bad call, then the good one,
// through ToolArgValidation with tools declared to it. It checks the
// feedback the model got and that no tools/call left the client, and
// returns the corrected call's arguments.
func correct(ctx context.Context, t *testing.T, s *npmServer, tools []toolstage.Tool, tool, bad, good string, wantFeedback ...string) string {
	t.Helper()
	sent := s.toolCall.Load()
	model := fakemodel.New(
		fakemodel.ToolCalls(fakemodel.Call(tool, bad)),
		fakemodel.ToolCalls(fakemodel.Call(tool, good)),
	)
	llm := middleware.Wrap(model, middleware.ToolArgValidation())
	resp, err := llm.GenerateContent(ctx,
		[]llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "go")},
		llms.WithTools(llmTools(tools)))
	if err != nil {
		t.Fatalf("GenerateContent: %v", err)
	}
	if n := s.toolCall.Load() - sent; n != 0 {
		t.Errorf("%d tools/call sent while validating, want 0", n)
	}
	reqs := model.Requests()
	if len(reqs) != 2 {
		t.Fatalf("model calls = %d, want 2 (the bad call, then the correction)", len(reqs))
	}
	lines := strings.Split(lastToolMessage(t, reqs[1].Messages), "\n")
	for _, w := range wantFeedback {
		if !slices.Contains(lines, w) {
			t.Errorf("feedback for %s(%s) lacks line %q:\n%s", tool, bad, w, strings.Join(lines, "\n"))
		}
	}
	calls := resp.Choices[0].ToolCalls
	if len(calls) != 1 || calls[0].FunctionCall.Arguments != good {
		t.Fatalf("response tool calls = %+v, want one %s(%s)", calls, tool, good)
	}
	return calls[0].FunctionCall.Arguments
}

func TestNPMServerEverything(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), npmTimeout)
	defer cancel()
	s := startNPM(ctx, t, serverEverything)

	tools, err := mcptool.Tools(ctx, s.session)
	if err != nil {
		t.Fatalf("Tools: %v", err)
	}
	want := []string{
		"echo", "get-annotated-message", "get-env", "get-resource-links",
		"get-resource-reference", "get-structured-content", "get-sum",
		"get-tiny-image", "gzip-file-as-resource", "toggle-simulated-logging",
		"toggle-subscriber-updates", "trigger-long-running-operation",
		"get-roots-list", "simulate-research-query",
	}
	if got := names(tools); !slices.Equal(got, want) {
		t.Errorf("Tools() names = %q, want %q", got, want)
	}
	compileAll(t, tools)

	echo := toolNamed(t, tools, "echo")
	if got, err := echo.Call(ctx, `{"message": "hello from toolguard"}`); err != nil || got != "Echo: hello from toolguard" {
		t.Errorf("echo.Call = %q, %v, want %q, nil", got, err, "Echo: hello from toolguard")
	}
	image, err := toolNamed(t, tools, "get-tiny-image").Call(ctx, "")
	if err != nil || !strings.HasPrefix(image, "Here's the image you requested:\n[image image/png, ") {
		t.Errorf("get-tiny-image.Call = %q, %v, want the text, then [image image/png, N bytes]", image, err)
	}

	// A typical mistake: a number sent as a string, a required one left
	// out. The string is coerced; the feedback names only what is left.
	args := correct(ctx, t, s, tools, "get-sum", `{"a": "17"}`, `{"a": 17, "b": 25}`,
		`- /b: missing required property (number)`)
	sum, err := toolNamed(t, tools, "get-sum").Call(ctx, args)
	if err != nil || sum != "The sum of 17 and 25 is 42." {
		t.Errorf("get-sum.Call(%q) = %q, %v, want %q, nil", args, sum, err, "The sum of 17 and 25 is 42.")
	}
	t.Logf("%s: %d tools, every inputSchema compiles; get-sum(%s) rejected before tools/call, corrected call returned %q",
		serverEverything, len(tools), `{"a": "17"}`, sum)
}

func TestNPMServerMemory(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), npmTimeout)
	defer cancel()
	memory := filepath.Join(t.TempDir(), "memory.jsonl")
	s := startNPM(ctx, t, serverMemory, "MEMORY_FILE_PATH="+memory)

	tools, err := mcptool.Tools(ctx, s.session)
	if err != nil {
		t.Fatalf("Tools: %v", err)
	}
	want := []string{
		"create_entities", "create_relations", "add_observations",
		"delete_entities", "delete_observations", "delete_relations",
		"read_graph", "search_nodes", "open_nodes",
	}
	if got := names(tools); !slices.Equal(got, want) {
		t.Errorf("Tools() names = %q, want %q", got, want)
	}
	compileAll(t, tools)

	// A required field deep in an array item, and the wrong type for it.
	args := correct(ctx, t, s, tools, "create_entities",
		`{"entities": [{"name": "toolguard", "entityType": "project", "observations": "validates tool calls"}, {"name": "mcp", "entityType": "protocol"}]}`,
		`{"entities": [{"name": "toolguard", "entityType": "project", "observations": ["validates tool calls"]}]}`,
		`- /entities/0/observations: expected array, got "validates tool calls"`,
		`- /entities/1/observations: missing required property (array)`)
	if _, err := toolNamed(t, tools, "create_entities").Call(ctx, args); err != nil {
		t.Fatalf("create_entities.Call(%q): %v", args, err)
	}
	graph, err := toolNamed(t, tools, "read_graph").Call(ctx, "")
	if err != nil || !strings.Contains(graph, `"validates tool calls"`) {
		t.Errorf("read_graph.Call = %q, %v, want the graph holding the new entity", graph, err)
	}
	stored, err := os.ReadFile(memory)
	if err != nil || !strings.Contains(string(stored), `"name":"toolguard"`) {
		t.Errorf("MEMORY_FILE_PATH holds %q, %v, want the new entity", stored, err)
	}
	t.Logf("%s: %d tools, every inputSchema compiles; create_entities with a bad item rejected before tools/call, corrected call stored",
		serverMemory, len(tools))
}
