package mcptool_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// Arguments of the typed tools of the test server. The server infers their
// inputSchema from these structs.
type addArgs struct {
	A int `json:"a" jsonschema:"the first addend"`
	B int `json:"b" jsonschema:"the second addend"`
}

type repeatArgs struct {
	Text  string `json:"text"`
	Times int    `json:"times,omitempty"`
}

// addSchema is the inputSchema the server infers for addArgs, as sent.
const addSchema = `{
	"type": "object",
	"properties": {
		"a": {"type": "integer", "description": "the first addend"},
		"b": {"type": "integer", "description": "the second addend"}
	},
	"required": ["a", "b"],
	"additionalProperties": false
}`

// mediaSchema is a hand-written inputSchema, sent as given.
const mediaSchema = `{
	"$schema": "http://json-schema.org/draft-07/schema#",
	"type": "object",
	"properties": {"caption": {"type": "string", "maxLength": 20}}
}`

// newServer returns an MCP server with the test tools:
//
//	add(a, b int)          the sum
//	divide(a, b int)       the quotient; b = 0 is a tool error (IsError)
//	media(caption?)        one part of every content type
//	ping()                 "pong"
//	repeat(text, times?)   text, times times
//	structured()           structured content only
func newServer(opts *mcp.ServerOptions) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "test-server", Version: "v1"}, opts)
	mcp.AddTool(s, &mcp.Tool{Name: "add", Description: "Add two integers."},
		func(_ context.Context, _ *mcp.CallToolRequest, in addArgs) (*mcp.CallToolResult, any, error) {
			return textResult(fmt.Sprint(in.A + in.B)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "divide", Description: "Divide a by b."},
		func(_ context.Context, _ *mcp.CallToolRequest, in addArgs) (*mcp.CallToolResult, any, error) {
			if in.B == 0 {
				return nil, nil, errors.New("division by zero")
			}
			return textResult(fmt.Sprint(in.A / in.B)), nil, nil
		})
	s.AddTool(&mcp.Tool{Name: "media", Description: "Content of every kind.", InputSchema: json.RawMessage(mediaSchema)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.TextContent{Text: "Here it is:"},
				&mcp.ImageContent{MIMEType: "image/png", Data: []byte{0x89, 'P', 'N', 'G'}},
				&mcp.AudioContent{MIMEType: "audio/wav", Data: make([]byte, 10)},
				&mcp.AudioContent{Data: make([]byte, 3)},
				&mcp.ResourceLink{URI: "demo://doc/1", Name: "Doc 1", MIMEType: "text/plain"},
				&mcp.ResourceLink{URI: "demo://doc/2"},
				&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "demo://note", MIMEType: "text/plain", Text: "a note"}},
				&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "demo://blob", Blob: []byte("12345")}},
			}}, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "ping", Title: "Ping"}, // no description: the title stands in
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return textResult("pong"), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "repeat", Description: "Repeat a text."},
		func(_ context.Context, _ *mcp.CallToolRequest, in repeatArgs) (*mcp.CallToolResult, any, error) {
			return textResult(strings.Repeat(in.Text, max(in.Times, 1))), nil, nil
		})
	s.AddTool(&mcp.Tool{Name: "structured", Description: "Structured content only.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{StructuredContent: map[string]any{"temperature": 21}}, nil
		})
	return s
}

// mediaResult is the media tool's result as a Tool returns it.
var mediaResult = strings.Join([]string{
	"Here it is:",
	"[image image/png, 4 bytes]",
	"[audio audio/wav, 10 bytes]",
	"[audio unknown type, 3 bytes]",
	`[resource link demo://doc/1 "Doc 1", text/plain]`,
	"[resource link demo://doc/2]",
	"[resource demo://note, text/plain]",
	"a note",
	"[resource demo://blob, 5 bytes]",
}, "\n")

func textResult(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// testServer is a client session connected in memory to a server that
// records every request it receives.
type testServer struct {
	session *mcp.ClientSession

	mu       sync.Mutex
	calls    []string // "name args" of each tools/call that reached the server
	listings int      // tools/list requests received
}

// connect connects a client to s over in-memory transports. Both sessions
// are closed when the test ends.
func connect(t *testing.T, s *mcp.Server) *testServer {
	t.Helper()
	ts := &testServer{}
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			ts.mu.Lock()
			switch r := req.(type) {
			case *mcp.CallToolRequest:
				ts.calls = append(ts.calls, r.Params.Name+" "+string(r.Params.Arguments))
			case *mcp.ListToolsRequest:
				ts.listings++
			}
			ts.mu.Unlock()
			return next(ctx, method, req)
		}
	})
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := s.Connect(ctx, st, nil)
	if err != nil {
		t.Fatalf("server Connect: %v", err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "v1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		ss.Close()
		t.Fatalf("client Connect: %v", err)
	}
	t.Cleanup(func() {
		cs.Close()
		ss.Wait()
	})
	ts.session = cs
	return ts
}

// Calls returns the tools/call requests the server received, in order.
func (ts *testServer) Calls() []string {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return append([]string(nil), ts.calls...)
}

// Listings returns the number of tools/list requests the server received.
func (ts *testServer) Listings() int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.listings
}
