//go:build unix

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The reference server of ../shared/corpus/README.md, pinned as .ci/run
// fetches it.
const serverEverything = "@modelcontextprotocol/server-everything@2026.8.31"

// requireNPXEnv=1 (set by .ci/run) turns a missing npx, or a server npx
// cannot start, from a skip into a failure.
const requireNPXEnv = "TOOLGUARD_REQUIRE_NPX"

// npx returns the npx binary and the environment that runs the pinned
// server from npm's cache with a HOME of the test's own, or skips.
func npx(t *testing.T) (string, []string) {
	t.Helper()
	bin, err := exec.LookPath("npx")
	if err != nil {
		msg := fmt.Sprintf("npx is not on PATH (%v): skipping the test against %s; install Node.js to run it (.ci/run sets %s=1)", err, serverEverything, requireNPXEnv)
		if os.Getenv(requireNPXEnv) == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	cache := os.Getenv("npm_config_cache")
	if cache == "" {
		if home, err := os.UserHomeDir(); err == nil {
			cache = filepath.Join(home, ".npm")
		}
	}
	return bin, []string{
		"HOME=" + t.TempDir(),
		"npm_config_cache=" + cache,
		"npm_config_prefer_offline=true",
		"npm_config_fetch_retries=0",
		"npm_config_update_notifier=false",
		"npm_config_fund=false",
		"npm_config_audit=false",
	}
}

// mcpNodeClient returns the node binary and NODE_PATH for the
// @modelcontextprotocol/sdk npm package pinned in testdata/package.json,
// or skips as nodeClient does.
func mcpNodeClient(t *testing.T) (node, nodePath string) {
	t.Helper()
	const pkgName = "@modelcontextprotocol/sdk"
	skip := func(format string, args ...any) {
		t.Helper()
		msg := "skipping the official MCP TypeScript SDK client against the proxy: " + fmt.Sprintf(format, args...) +
			" (to run it: npm install --prefix DIR with cmd/toolguard-proxy/testdata/package.json, then " + npmDirEnv + "=DIR; .ci/run does, and sets " + requireNPMEnv + "=1)"
		if os.Getenv(requireNPMEnv) == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	var pkg struct{ Dependencies map[string]string }
	b, err := os.ReadFile(filepath.Join("testdata", "package.json"))
	if err != nil || json.Unmarshal(b, &pkg) != nil || pkg.Dependencies[pkgName] == "" {
		t.Fatalf("testdata/package.json does not pin %s: %v", pkgName, err)
	}
	node, err = exec.LookPath("node")
	if err != nil {
		skip("node is not on the PATH")
	}
	dir := os.Getenv(npmDirEnv)
	if dir == "" {
		skip("%s is not set", npmDirEnv)
	}
	nodePath = filepath.Join(dir, "node_modules")
	installed, err := os.ReadFile(filepath.Join(nodePath, pkgName, "package.json"))
	var got struct{ Version string }
	if err != nil || json.Unmarshal(installed, &got) != nil {
		skip("%s is not installed under %s", pkgName, nodePath)
	}
	if want := pkg.Dependencies[pkgName]; got.Version != want {
		t.Fatalf("%s holds %s %s, testdata/package.json pins %s: install again", nodePath, pkgName, got.Version, want)
	}
	return node, nodePath
}

// nodeCall is one call testdata/mcp_client.cjs makes.
type nodeCall struct {
	Name      string         `json:"name"`
	Arguments map[string]any `json:"arguments"`
}

// nodeRead is what testdata/mcp_client.cjs prints: what the client read.
type nodeRead struct {
	Server struct{ Name, Version string }
	Calls  []struct {
		IsError           bool
		Text              string
		StructuredContent json.RawMessage
		Error             string
	}
}

// runMCPNode runs testdata/mcp_client.cjs with the calls and args (http
// URL, or stdio CMD ARGS…), the variables env added, and decodes what it
// prints.
func runMCPNode(t *testing.T, node, nodePath string, calls []nodeCall, env []string, args ...string) nodeRead {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cj, _ := json.Marshal(calls)
	cmd := exec.CommandContext(ctx, node, append([]string{filepath.Join("testdata", "mcp_client.cjs")}, args...)...)
	cmd.Env = append(os.Environ(), "NODE_PATH="+nodePath, "MCP_CALLS="+string(cj), "NODE_NO_WARNINGS=1",
		"OTEL_EXPORTER_OTLP_ENDPOINT=", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=")
	cmd.Env = append(cmd.Env, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node mcp_client.cjs %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	t.Logf("node mcp_client.cjs %s\n%s", args[0], stdout.String())
	if stderr.Len() > 0 && (t.Failed() || testing.Verbose()) {
		t.Logf("stderr (the wrapper's and the server's, for stdio):\n%s", stderr.String())
	}
	var out nodeRead
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("node printed %q: %v", stdout.String(), err)
	}
	if len(out.Calls) != len(calls) {
		t.Fatalf("node read %d results, want %d", len(out.Calls), len(calls))
	}
	return out
}

// startEverythingHTTP starts server-everything's Streamable HTTP transport
// (at /mcp) on a free loopback port, behind a recorder of what it
// receives, and returns the recorder's URL.
func startEverythingHTTP(t *testing.T) (string, *mcpRecorder) {
	t.Helper()
	bin, env := npx(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command(bin, "-y", serverEverything, "streamableHttp")
	cmd.Env = append(append(os.Environ(), env...), "PORT="+strconv.Itoa(port))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	listening := make(chan struct{})
	var log syncBuffer
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			log.Write([]byte(sc.Text() + "\n"))
			if strings.Contains(sc.Text(), "listening on port") {
				close(listening)
			}
		}
	}()
	select {
	case <-listening:
	case <-time.After(3 * time.Minute):
		msg := fmt.Sprintf("%s streamableHttp did not listen on port %d:\n%s", serverEverything, port, log.String())
		if os.Getenv(requireNPXEnv) == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg + "\n(offline and not in npm's cache? .ci/run fetches it)")
	}
	target, _ := url.Parse("http://127.0.0.1:" + strconv.Itoa(port))
	rp := httputil.NewSingleHostReverseProxy(target)
	rec := &mcpRecorder{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			b, _ := io.ReadAll(r.Body)
			rec.mu.Lock()
			rec.bodies = append(rec.bodies, string(b))
			rec.headers = append(rec.headers, r.Header.Clone())
			rec.mu.Unlock()
			r.Body = io.NopCloser(bytes.NewReader(b))
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, rec
}

// The calls the tests make of server-everything: get-sum with a string
// for a number (refused: "one" is no number), then corrected, then
// get-structured-content, whose result has an outputSchema.
var everythingCalls = []nodeCall{
	{"get-sum", map[string]any{"a": "one", "b": 2}},
	{"get-sum", map[string]any{"a": 1, "b": 2}},
	{"get-structured-content", map[string]any{"location": "Chicago"}},
}

const sumFeedback = "Invalid arguments for tool \"get-sum\": 1 error.\n- /a: expected number, got \"one\"\nCall get-sum again with corrected arguments."

// checkEverything checks what a client read of everythingCalls, and what
// the server received (its tools/call and tools/list lines).
func checkEverything(t *testing.T, read nodeRead, calls, lists []string) {
	t.Helper()
	c := read.Calls
	if !c[0].IsError || c[0].Text != sumFeedback {
		t.Errorf("the bad call read isError %v %q (%s), want %q", c[0].IsError, c[0].Text, c[0].Error, sumFeedback)
	}
	if c[1].IsError || c[1].Text != "The sum of 1 and 2 is 3." {
		t.Errorf("the good call read isError %v %q (%s), want the sum", c[1].IsError, c[1].Text, c[1].Error)
	}
	if c[2].IsError || !strings.Contains(string(c[2].StructuredContent), `"temperature":36`) {
		t.Errorf("get-structured-content read isError %v %s (%s), want Chicago's weather", c[2].IsError, c[2].StructuredContent, c[2].Error)
	}
	if got := callArguments(t, calls); !slices.Equal(got, []string{`{"a":1,"b":2}`, `{"location":"Chicago"}`}) {
		t.Errorf("the server received the arguments %q, want the good get-sum and get-structured-content, once each", got)
	}
	if len(lists) != 1 {
		t.Errorf("the server received %d tools/list, want 1 for the session (the guard's): %q", len(lists), lists)
	}
	t.Logf("server received tools/call: %s", calls)
	t.Logf("server received tools/list: %d", len(lists))
	t.Logf("client read for the bad call: isError=%v %q", c[0].IsError, c[0].Text)
	t.Logf("client read for the good call: isError=%v %q", c[1].IsError, c[1].Text)
}

// The npm MCP client through the built proxy to server-everything over
// Streamable HTTP: the bad call is answered with the feedback and never
// reaches the server; the corrected one and a call with structured
// content pass; tools/list is fetched once for the session.
func TestMCPNodeClientHTTP(t *testing.T) {
	t.Parallel()
	node, nodePath := mcpNodeClient(t)
	up, rec := startEverythingHTTP(t)
	p := startProcess(t, "-upstream", up)
	read := runMCPNode(t, node, nodePath, everythingCalls, nil, "http", "http://"+p.addr+"/mcp")
	checkEverything(t, read, rec.received("tools/call"), rec.received("tools/list"))
}

// The npm MCP client through the built proxy to the go-sdk test server,
// whose bad_output breaks its outputSchema: the client reads an isError
// result naming the violation (the SDK's own check would throw instead,
// had it listed the tools).
func TestMCPNodeClientOutputSchema(t *testing.T) {
	t.Parallel()
	node, nodePath := mcpNodeClient(t)
	srv, rec := newMCPServer(t, false)
	p := startProcess(t, "-upstream", srv.URL)
	read := runMCPNode(t, node, nodePath, []nodeCall{
		{"forecast", map[string]any{"city": "Paris", "days": 0}},
		{"forecast", map[string]any{"city": "Paris", "days": 3}},
		{"bad_output", map[string]any{}},
	}, nil, "http", "http://"+p.addr+mcpPath)
	c := read.Calls
	if !c[0].IsError || c[0].Text != forecastFeedback || c[1].IsError || c[1].Text != `{"temp":21.5}` {
		t.Errorf("forecast read %+v then %+v, want the feedback then the result", c[0], c[1])
	}
	want := "Invalid result: tool \"bad_output\" returned structuredContent that does not match its outputSchema, so the result was withheld: 1 error.\n- /temp: expected number, got \"warm\"\nThe tool broke its own output contract; do not rely on its output."
	if !c[2].IsError || c[2].Text != want || string(c[2].StructuredContent) != "null" {
		t.Errorf("bad_output read isError %v %q %s (%s), want isError true %q and no structuredContent", c[2].IsError, c[2].Text, c[2].StructuredContent, c[2].Error, want)
	}
	calls := rec.received("tools/call")
	if got := callArguments(t, calls); !slices.Equal(got, []string{`{"city":"Paris","days":3}`, `{}`}) {
		t.Errorf("the server received %q, want the good forecast and bad_output", got)
	}
	t.Logf("server received tools/call: %s", calls)
	t.Logf("server received tools/list: %d", len(rec.received("tools/list")))
	t.Logf("client read for bad_output: isError=%v %q", c[2].IsError, c[2].Text)
}

// everythingStdio returns the command line of server-everything over
// stdio behind tee, which appends every line it receives to the returned
// file, and npx's environment.
func everythingStdio(t *testing.T) ([]string, string, []string) {
	t.Helper()
	bin, env := npx(t)
	log := filepath.Join(t.TempDir(), "received.jsonl")
	return []string{"sh", "-c", `tee -a "$0" | exec "$@"`, log, bin, "-y", serverEverything}, log, env
}

// sweepServer kills what is left of the server a -stdio wrapper started
// (its process group, whose pid the wrapper logs), once the test is over.
func sweepServer(t *testing.T, stderr *syncBuffer) {
	t.Cleanup(func() {
		for l := range strings.Lines(stderr.String()) {
			var m struct {
				Msg string
				Pid int
			}
			if json.Unmarshal([]byte(l), &m) == nil && m.Msg == "toolguard-proxy: wrapping a stdio MCP server" && m.Pid > 0 {
				_ = syscall.Kill(-m.Pid, syscall.SIGKILL)
			}
		}
	})
}

// toolguard-proxy -stdio wrapping server-everything (npx), driven by the
// go-sdk client's CommandTransport: the bad call is answered with the
// feedback and never reaches the server, the corrected one passes.
func TestStdioEverythingGoSDK(t *testing.T) {
	t.Parallel()
	args, log, env := everythingStdio(t)
	cmd := exec.Command(binary(t), append([]string{"-stdio", "--"}, args...)...)
	cmd.Env = append(append(os.Environ(), env...), "OTEL_EXPORTER_OTLP_ENDPOINT=", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=")
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	sweepServer(t, stderr)
	c := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "v1"}, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		msg := fmt.Sprintf("connecting to %s through toolguard-proxy -stdio: %v\n%s", serverEverything, err, stderr.String())
		// Skipped only when the wrapper started the server and the server
		// failed (npx offline, nothing in its cache); a wrapper that did
		// not start it fails the test.
		if os.Getenv(requireNPXEnv) == "1" || !strings.Contains(stderr.String(), `"msg":"toolguard-proxy: wrapping a stdio MCP server"`) {
			t.Fatal(msg)
		}
		t.Skip(msg + "\n(offline and not in npm's cache? .ci/run fetches it)")
	}
	var read nodeRead
	for _, call := range everythingCalls {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: call.Name, Arguments: call.Arguments})
		if err != nil {
			t.Fatalf("CallTool(%s): %v", call.Name, err)
		}
		sc, _ := json.Marshal(res.StructuredContent)
		read.Calls = append(read.Calls, struct {
			IsError           bool
			Text              string
			StructuredContent json.RawMessage
			Error             string
		}{res.IsError, toolText(res), sc, ""})
	}
	checkEverything(t, read, lines(t, log, "tools/call"), lines(t, log, "tools/list"))
	_ = cs.Close()
	t.Logf("toolguard-proxy's stderr (its log and the server's):\n%s", stderr.String())
}

// The npm MCP client's StdioClientTransport starting toolguard-proxy
// -stdio in place of server-everything, as an IDE would.
func TestStdioEverythingNodeClient(t *testing.T) {
	t.Parallel()
	node, nodePath := mcpNodeClient(t)
	args, log, env := everythingStdio(t)
	read := runMCPNode(t, node, nodePath, everythingCalls, env, append([]string{"stdio", binary(t), "-stdio", "--"}, args...)...)
	checkEverything(t, read, lines(t, log, "tools/call"), lines(t, log, "tools/list"))
}
