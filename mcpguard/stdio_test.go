package mcpguard_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/mcpguard"
)

// A stdio session: a client's pipes to Stdio, Stdio's to a server, and
// what the server received, line by line.
type stdioRig struct {
	clientW   *io.PipeWriter // the client's messages
	clientR   *io.PipeReader // what the client reads
	serverIn  *lineLog       // every line the server received
	done      chan error     // Stdio's return
	closeDown func()
}

// lineLog is a server's stdin that keeps a copy of every line.
type lineLog struct {
	mu    sync.Mutex
	lines []string
	part  []byte
}

func (l *lineLog) write(p []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.part = append(l.part, p...)
	for {
		i := bytes.IndexByte(l.part, '\n')
		if i < 0 {
			return
		}
		l.lines = append(l.lines, string(l.part[:i]))
		l.part = l.part[i+1:]
	}
}

// received returns the lines received whose method is method ("" for
// every line).
func (l *lineLog) received(method string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, b := range l.lines {
		var m struct {
			Method string `json:"method"`
		}
		if method == "" || json.Unmarshal([]byte(b), &m) == nil && m.Method == method {
			out = append(out, b)
		}
	}
	return out
}

// teeReader copies what r reads into log.
type teeReader struct {
	r   io.ReadCloser
	log *lineLog
}

func (t teeReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	t.log.write(p[:n])
	return n, err
}

func (t teeReader) Close() error { return t.r.Close() }

// newStdioRig starts Stdio between pipes; serve runs the server over its
// ends (its stdin, its stdout), until its stdin ends.
func newStdioRig(t *testing.T, serve func(in io.ReadCloser, out io.WriteCloser), opts ...mcpguard.Option) *stdioRig {
	t.Helper()
	clientInR, clientInW := io.Pipe()   // client -> Stdio
	clientOutR, clientOutW := io.Pipe() // Stdio -> client
	serverInR, serverInW := io.Pipe()   // Stdio -> server
	serverOutR, serverOutW := io.Pipe() // server -> Stdio
	rig := &stdioRig{clientW: clientInW, clientR: clientOutR, serverIn: &lineLog{}, done: make(chan error, 1)}
	served := make(chan struct{})
	go func() {
		defer close(served)
		serve(teeReader{serverInR, rig.serverIn}, serverOutW)
		serverOutW.Close()
	}()
	go func() {
		rig.done <- mcpguard.Stdio(context.Background(), mcpguard.StdioPipes{
			ClientIn: clientInR, ClientOut: clientOutW, ServerIn: serverInW, ServerOut: serverOutR,
		}, opts...)
		clientOutW.Close()
	}()
	rig.closeDown = func() {
		clientInW.Close()
		select {
		case err := <-rig.done:
			if err != nil {
				t.Errorf("Stdio returned %v, want nil", err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("Stdio did not return after the client's input ended")
		}
		serverInR.Close()
		<-served
		clientOutR.Close()
	}
	t.Cleanup(rig.closeDown)
	return rig
}

// goSDKServer is the test server of server_test.go, served over stdio.
func goSDKServer(t *testing.T) func(in io.ReadCloser, out io.WriteCloser) {
	serve, _ := goSDKServerOf(t)
	return serve
}

// goSDKServerOf is goSDKServer that also returns the go-sdk server, for a
// test that changes its tools.
func goSDKServerOf(t *testing.T) (func(in io.ReadCloser, out io.WriteCloser), *mcp.Server) {
	s := mcp.NewServer(&mcp.Implementation{Name: "weather", Version: "v1"}, nil)
	s.AddTool(&mcp.Tool{Name: "forecast", InputSchema: json.RawMessage(forecastSchema), OutputSchema: json.RawMessage(tempSchema)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: `{"temp":21.5}`}},
				StructuredContent: map[string]any{"temp": 21.5}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "bad_output", InputSchema: json.RawMessage(`{"type":"object"}`), OutputSchema: json.RawMessage(tempSchema)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: `{"temp":"warm"}`}},
				StructuredContent: map[string]any{"temp": "warm"}}, nil
		})
	return func(in io.ReadCloser, out io.WriteCloser) {
		ss, err := s.Connect(context.Background(), &mcp.IOTransport{Reader: in, Writer: out}, nil)
		if err != nil {
			t.Errorf("server Connect: %v", err)
			return
		}
		_ = ss.Wait()
	}, s
}

// connect connects a go-sdk client over the rig's client pipes.
func (rig *stdioRig) connect(t *testing.T) *mcp.ClientSession {
	t.Helper()
	return rig.connectWith(t, nil)
}

// connectWith is connect with the client's options co.
func (rig *stdioRig) connectWith(t *testing.T, co *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "v1"}, co)
	cs, err := c.Connect(t.Context(), &mcp.IOTransport{Reader: rig.clientR, Writer: rig.clientW}, nil)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	return cs
}

// Over stdio, as over HTTP: a bad call is answered with an isError result
// holding the feedback and never reaches the server; the corrected call
// reaches it once; a result breaking its outputSchema is withheld; the
// tools are fetched once for the session.
func TestStdioBadThenGoodCall(t *testing.T) {
	var ev events
	rig := newStdioRig(t, goSDKServer(t), mcpguard.WithEventHandler(ev.handler))
	cs := rig.connect(t)

	bad, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "forecast", Arguments: map[string]any{"city": "Paris", "days": 0}})
	if err != nil {
		t.Fatalf("CallTool(bad) error: %v", err)
	}
	want := "Invalid arguments for tool \"forecast\": 1 error.\n- /days: expected a number >= 1, got 0\nCall forecast again with corrected arguments."
	if !bad.IsError || text(bad) != want {
		t.Errorf("CallTool(bad) = isError %v, %q; want isError true, %q", bad.IsError, text(bad), want)
	}
	if got := rig.serverIn.received("tools/call"); len(got) != 0 {
		t.Fatalf("the server received %d tools/call after the bad call, want 0: %q", len(got), got)
	}
	good, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "forecast", Arguments: map[string]any{"city": "Paris", "days": "3"}})
	if err != nil {
		t.Fatalf("CallTool(good) error: %v", err)
	}
	if good.IsError || text(good) != `{"temp":21.5}` {
		t.Errorf("CallTool(good) = isError %v, %q; want the tool's result", good.IsError, text(good))
	}
	calls := rig.serverIn.received("tools/call")
	if got := arguments(t, calls); !slices.Equal(got, []string{`{"city":"Paris","days":3}`}) {
		t.Errorf("the server received the arguments %q, want the good call's once, cleaned", got)
	}
	out, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "bad_output", Arguments: map[string]any{}})
	if err != nil {
		t.Fatalf("CallTool(bad_output) error: %v", err)
	}
	if !out.IsError || !strings.HasPrefix(text(out), `Invalid result: tool "bad_output" returned structuredContent that does not match its outputSchema`) {
		t.Errorf("CallTool(bad_output) = isError %v, %q; want the result withheld", out.IsError, text(out))
	}
	lists := rig.serverIn.received("tools/list")
	if len(lists) != 1 || !strings.Contains(lists[0], `"id":"mcpguard-tools-list-`) {
		t.Errorf("the server received tools/list %q, want one, sent by the transport", lists)
	}
	if k := ev.kinds(); !slices.Equal(k, []string{string(guard.EventInvalid), string(guard.EventRepaired), string(mcpguard.EventInvalidResult)}) {
		t.Errorf("events %q, want [invalid repaired invalid_result]", k)
	}
	t.Logf("server received: %s", calls)
	t.Logf("client read for the bad call: isError=%v %q", bad.IsError, text(bad))
	t.Logf("tools/list sent to the server: %d", len(lists))
	cs.Close()
}

// echoLines answers each request it reads with a result echoing the
// line's id, and each batch with an empty array; it writes nothing for
// anything else.
func echoLines(in io.ReadCloser, out io.WriteCloser) {
	sc := bufio.NewScanner(in)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) > 0 && line[0] == '[' {
			out.Write([]byte("[]\n"))
			continue
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(line, &m) != nil {
			out.Write([]byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}` + "\n"))
			continue
		}
		if m.ID != nil && m.Method != "" {
			out.Write([]byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"method":"` + m.Method + `"}}` + "\n"))
		}
	}
}

// Messages the transport does not guard pass byte for byte, both ways: a
// malformed line, a batch, a notification, a request of another method;
// a message of the client longer than MaxBody is refused with a JSON-RPC
// error, never sent; the session goes on.
func TestStdioPassesAndBounds(t *testing.T) {
	var ev events
	rig := newStdioRig(t, echoLines, mcpguard.WithEventHandler(ev.handler))
	client := bufio.NewReader(rig.clientR)
	send := func(line string) {
		t.Helper()
		if _, err := rig.clientW.Write([]byte(line + "\n")); err != nil {
			t.Fatalf("writing to Stdio: %v", err)
		}
	}
	read := func() string {
		t.Helper()
		line, err := client.ReadString('\n')
		if err != nil {
			t.Fatalf("reading from Stdio: %v", err)
		}
		return strings.TrimSuffix(line, "\n")
	}

	cases := []struct{ name, in, answer string }{
		{"malformed", `{"jsonrpc":"2.0","id":1,"method":`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`},
		{"batch", `[{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x","arguments":{}}}]`, `[]`},
		{"other method", `{"jsonrpc":"2.0", "id":"a\u0062", "method":"resources/list" ,"params":{}}`, `{"jsonrpc":"2.0","id":"a\u0062","result":{"method":"resources/list"}}`},
	}
	for _, tc := range cases {
		send(tc.in)
		if got := read(); got != tc.answer {
			t.Errorf("%s: the client read %s, want %s", tc.name, got, tc.answer)
		}
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	huge := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x","arguments":{"s":"` + strings.Repeat("a", mcpguard.MaxBody) + `"}}}`
	send(huge)
	want := `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"mcpguard: a message of the client is larger than 8388608 bytes, the bound of what is read: it was not sent to the server"}}`
	if got := read(); got != want {
		t.Errorf("the huge line: the client read %.200s, want %s", got, want)
	}
	send(`{"jsonrpc":"2.0","id":8,"method":"ping"}`)
	if got := read(); got != `{"jsonrpc":"2.0","id":8,"result":{"method":"ping"}}` {
		t.Errorf("after the huge line: the client read %s, want the ping's answer", got)
	}

	got := rig.serverIn.received("")
	wantLines := []string{cases[0].in, cases[1].in, cases[2].in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, `{"jsonrpc":"2.0","id":8,"method":"ping"}`}
	if !slices.Equal(got, wantLines) {
		t.Errorf("the server received\n%q\nwant\n%q", got, wantLines)
	}
	if k := ev.kinds(); !slices.Equal(k, []string{string(guard.EventUnguarded), string(guard.EventUnguarded)}) {
		t.Errorf("events %q, want [unguarded unguarded] (the batch holding a tools/call, the huge line)", k)
	}
}

// A request waiting for its answer when the server's output ends is
// answered with a JSON-RPC error, and Stdio returns though the client's
// input has not ended (a wrapper exits when its server does).
func TestStdioServerGone(t *testing.T) {
	rig := newStdioRig(t, func(in io.ReadCloser, out io.WriteCloser) {
		bufio.NewReader(in).ReadString('\n') // the request, never answered
	})
	rig.clientW.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n"))
	line, err := bufio.NewReader(rig.clientR).ReadString('\n')
	if err != nil {
		t.Fatalf("reading from Stdio: %v", err)
	}
	want := `{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"mcpguard: the server's output ended before it answered"}}` + "\n"
	if line != want {
		t.Errorf("the client read %q, want %q", line, want)
	}
	select {
	case err := <-rig.done:
		rig.done <- err // for the cleanup
	case <-time.After(30 * time.Second):
		t.Fatal("Stdio did not return after the server's output ended")
	}
}

// Over stdio, notifications/tools/list_changed from the server forgets the
// session's tools (and reaches the client): the next call is checked
// against the schema the server lists now.
func TestStdioListChanged(t *testing.T) {
	serve, s := goSDKServerOf(t)
	rig := newStdioRig(t, serve)
	changed := make(chan struct{}, 1)
	cs := rig.connectWith(t, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	defer cs.Close()
	call := func(days int) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "forecast", Arguments: map[string]any{"city": "Rome", "days": days}})
		if err != nil {
			t.Fatalf("CallTool(days %d): %v", days, err)
		}
		return res
	}
	if res := call(5); res.IsError {
		t.Fatalf("CallTool(days 5) under the first schema = isError %q", text(res))
	}
	s.AddTool(&mcp.Tool{Name: "forecast", InputSchema: json.RawMessage(strings.Replace(forecastSchema, `"minimum":1`, `"minimum":1,"maximum":3`, 1)),
		OutputSchema: json.RawMessage(tempSchema)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{StructuredContent: map[string]any{"temp": 1}}, nil
		})
	select {
	case <-changed:
	case <-t.Context().Done():
		t.Fatal("no notifications/tools/list_changed reached the client")
	}
	if res := call(5); !res.IsError {
		t.Errorf("CallTool(days 5) after list_changed = %q; want isError under the new maximum", text(res))
	}
	if got := rig.serverIn.received("tools/list"); len(got) != 2 {
		t.Errorf("the server received %d tools/list, want 2 (before and after list_changed)", len(got))
	}
	if n := len(rig.serverIn.received("tools/call")); n != 1 {
		t.Errorf("the server received %d tools/call, want 1", n)
	}
}

// An answer of the server longer than MaxBody reaches the client whole,
// handed on as it is read (the transport holds at most MaxBody of it),
// and the session goes on.
func TestStdioServerLongLine(t *testing.T) {
	long := `{"jsonrpc":"2.0","id":1,"result":{"blob":"` + strings.Repeat("b", mcpguard.MaxBody+1<<20) + `"}}`
	rig := newStdioRig(t, func(in io.ReadCloser, out io.WriteCloser) {
		r := bufio.NewReader(in)
		if _, err := r.ReadString('\n'); err != nil {
			return
		}
		out.Write([]byte(long + "\n"))
		echoLines(io.NopCloser(r), out)
	})
	client := bufio.NewReader(rig.clientR)
	go rig.clientW.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n"))
	got, err := client.ReadString('\n')
	if err != nil || got != long+"\n" {
		t.Fatalf("the client read %d bytes (%v), want the server's %d-byte answer whole", len(got), err, len(long)+1)
	}
	rig.clientW.Write([]byte(`{"jsonrpc":"2.0","id":2,"method":"ping"}` + "\n"))
	if got, err := client.ReadString('\n'); err != nil || got != `{"jsonrpc":"2.0","id":2,"result":{"method":"ping"}}`+"\n" {
		t.Errorf("after the long answer the client read %q (%v), want the second ping's answer", got, err)
	}
}
