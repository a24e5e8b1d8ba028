package mcpguard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolguard/toolguard/mcpguard"
)

// A go-sdk client whose HTTP client's transport is mcpguard's: the bad
// call is answered with feedback and never reaches the server; the "5"
// the model sent for an integer reaches it as 5.
func Example() {
	// A server with a raw tool, which validates nothing itself.
	server := mcp.NewServer(&mcp.Implementation{Name: "weather", Version: "v1"}, nil)
	server.AddTool(&mcp.Tool{Name: "forecast", InputSchema: json.RawMessage(`{"type":"object",
		"properties":{"city":{"type":"string"},"days":{"type":"integer","minimum":1}},"required":["city","days"]}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "received " + string(req.Params.Arguments)}}}, nil
		})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	defer srv.Close()

	ctx := context.Background()
	client := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "v1"}, nil)
	session, err := client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint:   srv.URL,
		HTTPClient: &http.Client{Transport: mcpguard.New(nil)},
	}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer session.Close()

	for _, args := range []map[string]any{
		{"city": "Paris", "days": 0},
		{"city": "Paris", "days": "5"},
	} {
		res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "forecast", Arguments: args})
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("isError %v: %s\n", res.IsError, res.Content[0].(*mcp.TextContent).Text)
	}
	// Output:
	// isError true: Invalid arguments for tool "forecast": 1 error.
	// - /days: expected a number >= 1, got 0
	// Call forecast again with corrected arguments.
	// isError false: received {"city":"Paris","days":5}
}
