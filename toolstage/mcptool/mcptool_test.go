package mcptool_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolguard/toolguard/toolstage"
	"github.com/toolguard/toolguard/toolstage/mcptool"
	"github.com/toolguard/toolguard/validation"
)

// tools lists the test server's tools, by name.
func tools(t *testing.T, ts *testServer, opts ...mcptool.Option) map[string]toolstage.Tool {
	t.Helper()
	list, err := mcptool.Tools(context.Background(), ts.session, opts...)
	if err != nil {
		t.Fatalf("Tools: %v", err)
	}
	byName := make(map[string]toolstage.Tool, len(list))
	for _, tool := range list {
		byName[tool.Name()] = tool
	}
	return byName
}

// jsonOf returns v's JSON with keys sorted and no insignificant space.
func jsonOf(t *testing.T, v any) string {
	t.Helper()
	if s, ok := v.(string); ok {
		v = json.RawMessage(s)
	}
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("json.Marshal(%v): %v", v, err)
	}
	var decoded any
	if err := json.Unmarshal(raw, &decoded); err != nil {
		t.Fatalf("json.Unmarshal(%s): %v", raw, err)
	}
	out, _ := json.Marshal(decoded)
	return string(out)
}

func TestToolsListsTheServersTools(t *testing.T) {
	t.Parallel()
	ts := connect(t, newServer(nil))
	list, err := mcptool.Tools(context.Background(), ts.session)
	if err != nil {
		t.Fatalf("Tools: %v", err)
	}
	want := []struct {
		name, description, schema string
	}{
		{"add", "Add two integers.", addSchema},
		{"divide", "Divide a by b.", addSchema},
		{"media", "Content of every kind.", mediaSchema},
		{"ping", "Ping", `{"type": "object", "additionalProperties": false}`},
		{"repeat", "Repeat a text.", `{
			"type": "object",
			"properties": {"text": {"type": "string"}, "times": {"type": "integer"}},
			"required": ["text"],
			"additionalProperties": false
		}`},
		{"structured", "Structured content only.", `{"type": "object"}`},
	}
	if len(list) != len(want) {
		names := make([]string, len(list))
		for i, tool := range list {
			names[i] = tool.Name()
		}
		t.Fatalf("Tools() = %v, want %d tools", names, len(want))
	}
	for i, w := range want {
		tool := list[i]
		if tool.Name() != w.name {
			t.Errorf("Tools()[%d].Name() = %q, want %q", i, tool.Name(), w.name)
		}
		if tool.Description() != w.description {
			t.Errorf("%s.Description() = %q, want %q", w.name, tool.Description(), w.description)
		}
		if _, ok := tool.Schema().(map[string]any); !ok {
			t.Errorf("%s.Schema() is a %T, want map[string]any", w.name, tool.Schema())
		}
		if got, want := jsonOf(t, tool.Schema()), jsonOf(t, w.schema); got != want {
			t.Errorf("%s.Schema() = %s, want %s", w.name, got, want)
		}
		if got := tool.(*mcptool.Tool).MCP().Name; got != w.name {
			t.Errorf("%s.MCP().Name = %q, want %q", w.name, got, w.name)
		}
	}
	if got := ts.Listings(); got != 1 {
		t.Errorf("tools/list requests = %d, want 1", got)
	}
}

func TestSchemaIsStableAndDetached(t *testing.T) {
	t.Parallel()
	ts := connect(t, newServer(nil))
	add := tools(t, ts)["add"].(*mcptool.Tool)

	first, second := add.Schema(), add.Schema()
	if reflect.ValueOf(first).UnsafePointer() != reflect.ValueOf(second).UnsafePointer() {
		t.Errorf("Schema() returned two different maps; want the same value each time")
	}
	// Changing the listed tool does not change the adapted one.
	add.MCP().InputSchema.(map[string]any)["required"] = []any{}
	if got, want := jsonOf(t, add.Schema()), jsonOf(t, addSchema); got != want {
		t.Errorf("Schema() after modifying MCP().InputSchema = %s, want %s", got, want)
	}
}

func TestCall(t *testing.T) {
	t.Parallel()
	ts := connect(t, newServer(nil))
	byName := tools(t, ts)
	tests := []struct {
		name, tool, args string
		want             string
		wantSent         string // the arguments the server received
	}{
		{"round trip", "add", `{"a": 2, "b": 3}`, "5", `{"a":2,"b":3}`},
		{"arguments sent as given", "add", " {\"b\":3,\"a\":2}\n", "5", `{"b":3,"a":2}`},
		{"empty arguments mean {}", "ping", "", "pong", `{}`},
		{"blank arguments mean {}", "ping", " \t\n", "pong", `{}`},
		{"optional argument left out", "repeat", `{"text": "ab"}`, "ab", `{"text":"ab"}`},
		{"every content type", "media", `{}`, mediaResult, `{}`},
		{"structured content only", "structured", `{}`, `{"temperature":21}`, `{}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Not parallel: each case checks the last request the server saw.
			got, err := byName[tc.tool].Call(context.Background(), tc.args)
			if err != nil || got != tc.want {
				t.Errorf("%s.Call(%q) = %q, %v, want %q, nil", tc.tool, tc.args, got, err, tc.want)
			}
			calls := ts.Calls()
			if sent := calls[len(calls)-1]; sent != tc.tool+" "+tc.wantSent {
				t.Errorf("server received %q, want %q", sent, tc.tool+" "+tc.wantSent)
			}
		})
	}
}

func TestCallErrors(t *testing.T) {
	t.Parallel()
	ts := connect(t, newServer(nil))
	byName := tools(t, ts)
	unlisted := mcptool.New(ts.session, &mcp.Tool{Name: "nope", InputSchema: map[string]any{"type": "object"}})
	tests := []struct {
		name      string
		tool      toolstage.Tool
		args      string
		wantErr   string
		toolError bool // a *ToolError: the tool ran and failed
		reached   bool // the call reached the server
	}{
		{"not an object", byName["add"], `[1, 2]`, `mcptool: tool "add": arguments are not a JSON object`, false, false},
		{"null", byName["add"], `null`, `mcptool: tool "add": arguments are not a JSON object`, false, false},
		{"not JSON", byName["add"], `{"a": 1,`, `mcptool: tool "add": arguments are not valid JSON: unexpected end of JSON input`, false, false},
		{"tool error", byName["divide"], `{"a": 1, "b": 0}`, "division by zero", true, true},
		{"unknown tool", unlisted, `{}`, `mcptool: tool "nope": calling "tools/call": unknown tool "nope"`, false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := len(ts.Calls())
			got, err := tc.tool.Call(context.Background(), tc.args)
			if err == nil || err.Error() != tc.wantErr || got != "" {
				t.Fatalf("%s.Call(%q) = %q, %v, want \"\", %q", tc.tool.Name(), tc.args, got, err, tc.wantErr)
			}
			var te *mcptool.ToolError
			if errors.As(err, &te) != tc.toolError {
				t.Errorf("%s.Call(%q): errors.As(*ToolError) = %v, want %v", tc.tool.Name(), tc.args, !tc.toolError, tc.toolError)
			}
			if te != nil && (te.Tool != tc.tool.Name() || te.Text != tc.wantErr || !te.Result.IsError) {
				t.Errorf("ToolError = {%q, %q, IsError %v}, want {%q, %q, IsError true}", te.Tool, te.Text, te.Result.IsError, tc.tool.Name(), tc.wantErr)
			}
			if reached := len(ts.Calls()) > before; reached != tc.reached {
				t.Errorf("%s.Call(%q) reached the server: %v, want %v", tc.tool.Name(), tc.args, reached, tc.reached)
			}
		})
	}
}

func TestMaxResultBytes(t *testing.T) {
	t.Parallel()
	ts := connect(t, newServer(nil))
	tests := []struct {
		name    string
		max     int
		tool    string
		args    string
		want    string
		wantErr string
	}{
		{"within the bound", 12, "repeat", `{"text": "xé", "times": 4}`, "xéxéxéxé", ""},
		{"cut at a rune boundary", 5, "repeat", `{"text": "xé", "times": 4}`, "xéx\n[mcptool: result truncated: 4 of 12 bytes shown]", ""},
		{"tool error text too", 8, "divide", `{"a": 1, "b": 0}`, "", "division\n[mcptool: result truncated: 8 of 16 bytes shown]"},
		{"no bound", math.MaxInt, "repeat", `{"text": "ab", "times": 40000}`, strings.Repeat("ab", 40000), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tool := tools(t, ts, mcptool.WithMaxResultBytes(tc.max))[tc.tool]
			got, err := tool.Call(context.Background(), tc.args)
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if got != tc.want || gotErr != tc.wantErr {
				t.Errorf("%s.Call(%q) with WithMaxResultBytes(%d) = %.80q, %q, want %.80q, %q", tc.tool, tc.args, tc.max, got, gotErr, tc.want, tc.wantErr)
			}
		})
	}
}

func TestDefaultMaxResultBytes(t *testing.T) {
	t.Parallel()
	ts := connect(t, newServer(nil))
	repeat := tools(t, ts)["repeat"]
	got, err := repeat.Call(context.Background(), `{"text": "abcd", "times": 20000}`)
	if err != nil {
		t.Fatalf("repeat.Call: %v", err)
	}
	wantTail := fmt.Sprintf("\n[mcptool: result truncated: %d of 80000 bytes shown]", mcptool.DefaultMaxResultBytes)
	if !strings.HasSuffix(got, wantTail) || len(got) != mcptool.DefaultMaxResultBytes+len(wantTail) {
		t.Errorf("repeat.Call(80000 bytes) = %d bytes ending %q, want %d bytes ending %q",
			len(got), got[max(0, len(got)-len(wantTail)):], mcptool.DefaultMaxResultBytes+len(wantTail), wantTail)
	}
}

func TestToolsPagination(t *testing.T) {
	t.Parallel()
	ts := connect(t, newServer(&mcp.ServerOptions{PageSize: 2}))
	list, err := mcptool.Tools(context.Background(), ts.session)
	if err != nil {
		t.Fatalf("Tools: %v", err)
	}
	var names []string
	for _, tool := range list {
		names = append(names, tool.Name())
	}
	want := []string{"add", "divide", "media", "ping", "repeat", "structured"}
	if !slices.Equal(names, want) {
		t.Errorf("Tools() names = %v, want %v", names, want)
	}
	if got := ts.Listings(); got != 3 {
		t.Errorf("tools/list requests = %d, want 3 (pages of 2)", got)
	}
}

func TestWithFilter(t *testing.T) {
	t.Parallel()
	ts := connect(t, newServer(nil))
	tests := []struct {
		name string
		keep func(*mcp.Tool) bool
		want []string
	}{
		{"by name", func(t *mcp.Tool) bool { return t.Name == "add" || t.Name == "ping" }, []string{"add", "ping"}},
		{"none", func(*mcp.Tool) bool { return false }, nil},
		{"nil keeps all", nil, []string{"add", "divide", "media", "ping", "repeat", "structured"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			list, err := mcptool.Tools(context.Background(), ts.session, mcptool.WithFilter(tc.keep))
			if err != nil {
				t.Fatalf("Tools: %v", err)
			}
			var names []string
			for _, tool := range list {
				names = append(names, tool.Name())
			}
			if !slices.Equal(names, tc.want) {
				t.Errorf("Tools(WithFilter) names = %v, want %v", names, tc.want)
			}
		})
	}
}

// rewriteListing makes the server answer tools/list with fn applied to
// copies of its tools.
func rewriteListing(s *mcp.Server, fn func([]*mcp.Tool) []*mcp.Tool) {
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if lr, ok := res.(*mcp.ListToolsResult); ok && err == nil {
				copied := make([]*mcp.Tool, len(lr.Tools))
				for i, tool := range lr.Tools {
					c := *tool
					copied[i] = &c
				}
				lr.Tools = fn(copied)
			}
			return res, err
		}
	})
}

func TestToolsRejectsDuplicateNames(t *testing.T) {
	t.Parallel()
	s := newServer(nil)
	rewriteListing(s, func(tools []*mcp.Tool) []*mcp.Tool { return append(tools, tools[0]) })
	ts := connect(t, s)
	list, err := mcptool.Tools(context.Background(), ts.session)
	want := `mcptool: the server lists tool "add" twice`
	if err == nil || err.Error() != want || list != nil {
		t.Errorf("Tools() = %d tools, %v, want none, %q", len(list), err, want)
	}
}

func TestSchemaFallbacks(t *testing.T) {
	t.Parallel()
	s := newServer(nil)
	rewriteListing(s, func(tools []*mcp.Tool) []*mcp.Tool {
		for _, tool := range tools {
			switch tool.Name {
			case "ping":
				tool.InputSchema = nil
			case "structured":
				tool.InputSchema = json.RawMessage(`true`)
			case "repeat":
				tool.InputSchema = json.RawMessage(`"object"`)
			}
		}
		return tools
	})
	ts := connect(t, s)
	byName := tools(t, ts)
	if got, want := jsonOf(t, byName["ping"].Schema()), `{"properties":{},"type":"object"}`; got != want {
		t.Errorf("Schema() for a null inputSchema = %s, want %s", got, want)
	}
	tests := []struct {
		tool, schema string
		compiles     bool
	}{
		{"structured", `true`, true},
		{"repeat", `"object"`, false},
	}
	for _, tc := range tests {
		got := byName[tc.tool].Schema()
		if want := json.RawMessage(tc.schema); !reflect.DeepEqual(got, want) {
			t.Errorf("Schema() for inputSchema %s = %#v, want %#v", tc.schema, got, want)
		}
		if _, err := validation.Compile(got); (err == nil) != tc.compiles {
			t.Errorf("validation.Compile(%s) = %v, want compiles: %v", tc.schema, err, tc.compiles)
		}
	}
}

func TestClosedSession(t *testing.T) {
	t.Parallel()
	ts := connect(t, newServer(nil))
	add := tools(t, ts)["add"]
	if err := ts.session.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	_, err := add.Call(context.Background(), `{"a": 1, "b": 2}`)
	var te *mcptool.ToolError
	if err == nil || !strings.HasPrefix(err.Error(), `mcptool: tool "add": `) || errors.As(err, &te) {
		t.Errorf("add.Call on a closed session = %v, want an error prefixed %q that is not a *ToolError", err, `mcptool: tool "add": `)
	}
	if _, err := mcptool.Tools(context.Background(), ts.session); err == nil || !strings.HasPrefix(err.Error(), "mcptool: list tools: ") {
		t.Errorf("Tools on a closed session = %v, want an error prefixed %q", err, "mcptool: list tools: ")
	}
}

func TestCallCancelled(t *testing.T) {
	t.Parallel()
	ts := connect(t, newServer(nil))
	add := tools(t, ts)["add"]
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := add.Call(ctx, `{"a": 1, "b": 2}`); !errors.Is(err, context.Canceled) {
		t.Errorf("add.Call(cancelled ctx) = %v, want an error wrapping context.Canceled", err)
	}
}

func TestCallConcurrent(t *testing.T) {
	t.Parallel()
	ts := connect(t, newServer(nil))
	add := tools(t, ts)["add"]
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			args := fmt.Sprintf(`{"a": %d, "b": 1}`, i)
			if got, err := add.Call(context.Background(), args); err != nil || got != fmt.Sprint(i+1) {
				t.Errorf("add.Call(%q) = %q, %v, want %q, nil", args, got, err, fmt.Sprint(i+1))
			}
		})
	}
	wg.Wait()
}

func TestNilArguments(t *testing.T) {
	t.Parallel()
	ts := connect(t, newServer(nil))
	tool := &mcp.Tool{Name: "add", InputSchema: map[string]any{"type": "object"}}
	tests := []struct {
		name string
		fn   func()
		want string
	}{
		{"New(nil session)", func() { mcptool.New(nil, tool) }, "mcptool: New needs a session and a tool"},
		{"New(nil tool)", func() { mcptool.New(ts.session, nil) }, "mcptool: New needs a session and a tool"},
		{"WithMaxResultBytes(0)", func() { mcptool.WithMaxResultBytes(0) }, "mcptool: WithMaxResultBytes(0): the bound must be positive"},
		{"WithMaxResultBytes(-1)", func() { mcptool.WithMaxResultBytes(-1) }, "mcptool: WithMaxResultBytes(-1): the bound must be positive"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			defer func() {
				if got := recover(); got != tc.want {
					t.Errorf("%s panicked with %v, want %q", tc.name, got, tc.want)
				}
			}()
			tc.fn()
		})
	}
	if _, err := mcptool.Tools(context.Background(), nil); err == nil || err.Error() != "mcptool: Tools: nil session" {
		t.Errorf("Tools(nil) = %v, want %q", err, "mcptool: Tools: nil session")
	}
}
