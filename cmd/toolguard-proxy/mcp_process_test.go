//go:build unix

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stdioServerEnv, set to a file's path, makes the test binary the stdio
// MCP server of the tests (serveStdio), writing every line it receives to
// that file.
const stdioServerEnv = "TOOLGUARD_TEST_STDIO_SERVER"

// serveStdio serves the test server (newMCPServer's tools) over stdin and
// stdout, appending each line received to the file log, and returns the
// exit status.
func serveStdio(log string) int {
	f, err := os.OpenFile(log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return 2
	}
	defer f.Close()
	s := mcp.NewServer(&mcp.Implementation{Name: "weather", Version: "v1"}, nil)
	s.AddTool(&mcp.Tool{Name: "forecast", InputSchema: json.RawMessage(forecastSchema), OutputSchema: json.RawMessage(tempSchema)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: `{"temp":21.5}`}},
				StructuredContent: map[string]any{"temp": 21.5}}, nil
		})
	in := io.NopCloser(io.TeeReader(os.Stdin, f))
	ss, err := s.Connect(context.Background(), &mcp.IOTransport{Reader: in, Writer: os.Stdout}, nil)
	if err != nil {
		return 2
	}
	_ = ss.Wait()
	return 0
}

// lines returns the JSON-RPC lines of the file path whose method is
// method.
func lines(t *testing.T, path, method string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	var out []string
	for l := range strings.Lines(string(b)) {
		var m struct{ Method string }
		if json.Unmarshal([]byte(l), &m) == nil && m.Method == method {
			out = append(out, strings.TrimSpace(l))
		}
	}
	return out
}

// The built proxy between the go-sdk client and the go-sdk server over
// Streamable HTTP, on a path that does not look like MCP: the bad call is
// answered with the feedback and never reaches the server; the good one
// reaches it once.
func TestMCPProcessGoSDK(t *testing.T) {
	t.Parallel()
	srv, rec := newMCPServer(t, false)
	p := startProcess(t, "-upstream", srv.URL)
	cs := connectMCP(t, "http://"+p.addr+mcpPath)

	bad, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "forecast", Arguments: map[string]any{"city": "Paris", "days": 0}})
	if err != nil {
		t.Fatalf("CallTool(bad): %v", err)
	}
	t.Logf("client read for the bad call: isError=%v %q", bad.IsError, toolText(bad))
	t.Logf("server received after the bad call: %q", rec.received("tools/call"))
	if !bad.IsError || toolText(bad) != forecastFeedback || len(rec.received("tools/call")) != 0 {
		t.Errorf("CallTool(bad) = isError %v, %q, the server received %q; want the feedback and nothing sent", bad.IsError, toolText(bad), rec.received("tools/call"))
	}
	good, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "forecast", Arguments: map[string]any{"city": "Paris", "days": 3}})
	if err != nil {
		t.Fatalf("CallTool(good): %v", err)
	}
	calls := rec.received("tools/call")
	t.Logf("client read for the good call: isError=%v %q", good.IsError, toolText(good))
	t.Logf("server received: %s", calls)
	t.Logf("tools/list the server received: %d", len(rec.received("tools/list")))
	if good.IsError || !slices.Equal(callArguments(t, calls), []string{`{"city":"Paris","days":3}`}) {
		t.Errorf("CallTool(good) = isError %v; the server received %q, want the good call once", good.IsError, calls)
	}
	if n := len(rec.received("tools/list")); n != 1 {
		t.Errorf("the server received %d tools/list, want 1", n)
	}
}

// stdioCommand returns the command that starts the built proxy with
// -stdio wrapping args, and the file where the test server logs what it
// receives.
func stdioCommand(t *testing.T, args ...string) (*exec.Cmd, string) {
	t.Helper()
	log := filepath.Join(t.TempDir(), "received.jsonl")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if len(args) == 0 {
		args = []string{self}
	}
	cmd := exec.Command(binary(t), append([]string{"-stdio", "--"}, args...)...)
	cmd.Env = append(os.Environ(), stdioServerEnv+"="+log, "OTEL_EXPORTER_OTLP_ENDPOINT=", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=")
	return cmd, log
}

// -stdio wraps a stdio server for the go-sdk client's CommandTransport:
// the bad call is answered with the feedback and never reaches the
// server, the good one reaches it once, tools/list is fetched once, and
// nothing but JSON-RPC reaches the client's stdout (it would fail to
// decode it).
func TestStdioProcessGoSDK(t *testing.T) {
	t.Parallel()
	cmd, log := stdioCommand(t)
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	c := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "v1"}, nil)
	cs, err := c.Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("Connect: %v\n%s", err, stderr.String())
	}
	bad, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "forecast", Arguments: map[string]any{"city": "Paris", "days": 0}})
	if err != nil {
		t.Fatalf("CallTool(bad): %v", err)
	}
	if !bad.IsError || toolText(bad) != forecastFeedback || len(lines(t, log, "tools/call")) != 0 {
		t.Errorf("CallTool(bad) = isError %v, %q, the server received %q; want the feedback and nothing sent", bad.IsError, toolText(bad), lines(t, log, "tools/call"))
	}
	good, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "forecast", Arguments: map[string]any{"city": "Paris", "days": "3"}})
	if err != nil {
		t.Fatalf("CallTool(good): %v", err)
	}
	calls := lines(t, log, "tools/call")
	if good.IsError || !slices.Equal(callArguments(t, calls), []string{`{"city":"Paris","days":3}`}) {
		t.Errorf("CallTool(good) = isError %v %q; the server received %q, want the good call once, cleaned", good.IsError, toolText(good), calls)
	}
	if n := len(lines(t, log, "tools/list")); n != 1 {
		t.Errorf("the server received %d tools/list, want 1", n)
	}
	if err := cs.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	t.Logf("client read for the bad call: isError=%v %q", bad.IsError, toolText(bad))
	t.Logf("server received: %s", calls)
	t.Logf("proxy stderr:\n%s", stderr.String())
	if !strings.Contains(stderr.String(), `"msg":"toolguard: invalid"`) {
		t.Errorf("stderr does not log the invalid call:\n%s", stderr.String())
	}
}

// A -stdio wrapper exits with its server's status: the status it exited
// with, or 128+N for a server signal N ended; a signal sent to the
// wrapper is forwarded to the server.
func TestStdioProcessExitStatus(t *testing.T) {
	t.Parallel()
	t.Run("exit", func(t *testing.T) {
		t.Parallel()
		cmd, _ := stdioCommand(t, "sh", "-c", "exit 7")
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 7 {
			t.Errorf("the wrapper ended with %v, want exit status 7", err)
		}
	})
	t.Run("signal", func(t *testing.T) {
		t.Parallel()
		cmd, _ := stdioCommand(t)
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		stderr := &syncBuffer{}
		cmd.Stderr = stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer stdin.Close()
		// A ping answered shows the server is up, then SIGTERM.
		stdin.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n"))
		line, err := bufio.NewReader(stdout).ReadString('\n')
		if err != nil || !strings.Contains(line, `"id":1`) {
			t.Fatalf("the ping was answered %q, %v\n%s", line, err, stderr.String())
		}
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err = <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			t.Fatalf("the wrapper did not exit after SIGTERM:\n%s", stderr.String())
		}
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 128+int(syscall.SIGTERM) {
			t.Errorf("the wrapper ended with %v, want exit status %d (its server ended by SIGTERM)\n%s", err, 128+int(syscall.SIGTERM), stderr.String())
		}
		if !strings.Contains(stderr.String(), `"msg":"toolguard-proxy: forwarding a signal to the server","signal":"terminated"`) {
			t.Errorf("stderr does not log the forwarded signal:\n%s", stderr.String())
		}
	})
}

// What -stdio does not guard passes byte for byte both ways, through the
// built binary wrapping cat (which echoes each line back as the server's
// message): a malformed line, a batch, a notification, blank space kept
// inside a line; a line past mcpguard.MaxBody is answered with a JSON-RPC
// error and never reaches the server, and the session goes on.
func TestStdioProcessRawLines(t *testing.T) {
	t.Parallel()
	cmd, _ := stdioCommand(t, "cat")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	out := bufio.NewReader(stdout)
	read := func() string {
		t.Helper()
		line, err := out.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the wrapper's stdout: %v\n%s", err, stderr.String())
		}
		return strings.TrimSuffix(line, "\n")
	}
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":1,"method":`,
		`[{"jsonrpc":"2.0","id":2,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"}]`,
		`{"jsonrpc":"2.0" , "method":"notifications/initialized",  "params":{"x":[1.50, 1e6]}}`,
		`not json at all`,
	} {
		stdin.Write([]byte(line + "\n"))
		if got := read(); got != line {
			t.Errorf("cat echoed %q through the wrapper, want %q", got, line)
		}
	}
	huge := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x","arguments":{"s":"` + strings.Repeat("a", 9<<20) + `"}}}`
	go stdin.Write([]byte(huge + "\n"))
	want := `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"mcpguard: a message of the client is larger than 8388608 bytes, the bound of what is read: it was not sent to the server"}}`
	if got := read(); got != want {
		t.Errorf("the huge line was answered %.300q, want %q", got, want)
	}
	stdin.Write([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n"))
	if got := read(); got != `{"jsonrpc":"2.0","method":"notifications/initialized"}` {
		t.Errorf("after the huge line cat echoed %.300q, want the notification", got)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Errorf("the wrapper ended with %v, want exit status 0 (cat's)\n%s", err, stderr.String())
	}
}
