package mcptool_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolguard/toolguard/toolstage/mcptool"
)

func ExampleTools() {
	ctx := context.Background()

	// An MCP server with one tool, connected in memory. A real server is
	// usually a process: connect with &mcp.CommandTransport{Command: cmd}.
	type greetArgs struct {
		Name string `json:"name" jsonschema:"who to greet"`
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "greeter", Version: "v1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "greet", Description: "Greet someone by name."},
		func(_ context.Context, _ *mcp.CallToolRequest, in greetArgs) (*mcp.CallToolResult, any, error) {
			if in.Name == "" {
				return nil, nil, errors.New("name must not be empty")
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Hello, " + in.Name + "!"}}}, nil, nil
		})
	serverTransport, clientTransport := mcp.NewInMemoryTransports()
	serverSession, err := server.Connect(ctx, serverTransport, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer serverSession.Close()
	session, err := mcp.NewClient(&mcp.Implementation{Name: "my-agent", Version: "v1"}, nil).Connect(ctx, clientTransport, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer session.Close()

	// Every tool of the session, as toolstage.Tool.
	tools, err := mcptool.Tools(ctx, session)
	if err != nil {
		log.Fatal(err)
	}
	greet := tools[0]
	schema, _ := json.Marshal(greet.Schema())
	fmt.Printf("%s: %s\n%s\n", greet.Name(), greet.Description(), schema)

	out, err := greet.Call(ctx, `{"name": "Ada"}`)
	fmt.Printf("%q %v\n", out, err)

	// A failure the server reports (IsError) is an error the model can read.
	_, err = greet.Call(ctx, `{"name": ""}`)
	var toolErr *mcptool.ToolError
	fmt.Println(errors.As(err, &toolErr), err)
	// Output:
	// greet: Greet someone by name.
	// {"additionalProperties":false,"properties":{"name":{"description":"who to greet","type":"string"}},"required":["name"],"type":"object"}
	// "Hello, Ada!" <nil>
	// true name must not be empty
}
