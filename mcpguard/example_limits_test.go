package mcpguard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/mcpguard"
)

// A limit of two calls per session of the tool "search", and a policy that
// refuses destructive tools, reading annotations only from the trusted
// server: "search" says it is read-only, "drop_table" says nothing, which
// by the specification's defaults means it may be destructive.
func ExampleWithCallLimit() {
	server := mcp.NewServer(&mcp.Implementation{Name: "db", Version: "v1"}, nil)
	ran := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ran"}}}, nil
	}
	schema := json.RawMessage(`{"type":"object"}`)
	server.AddTool(&mcp.Tool{Name: "search", InputSchema: schema, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, ran)
	server.AddTool(&mcp.Tool{Name: "drop_table", InputSchema: schema}, ran)
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	defer srv.Close()

	rt := mcpguard.New(nil,
		mcpguard.WithCallLimit(mcpguard.PerSession, guard.WithThreadLimit(2), guard.WithToolName("search")),
		mcpguard.WithTrustedServers(srv.URL),
		mcpguard.WithToolPolicy(mcpguard.RefuseDestructive()),
		mcpguard.WithEventHandler(func(_ context.Context, e guard.Event) { fmt.Println("event:", e.Kind) }))
	ctx := context.Background()
	session, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "v1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: &http.Client{Transport: rt}}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer session.Close()
	for _, tool := range []string{"drop_table", "search", "search", "search"} {
		res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}})
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%s: isError %v: %s\n", tool, res.IsError, res.Content[0].(*mcp.TextContent).Text)
	}
	// Output:
	// event: tool_denied
	// drop_table: isError true: Not executed: tool "drop_table" was not called: mcpguard: the tool may be destructive
	// search: isError false: ran
	// search: isError false: ran
	// event: limit
	// search: isError true: Tool call limit exceeded: "search" may be called at most 2 times per MCP session (2 made); do not call it again.
}
