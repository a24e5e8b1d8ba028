// Package mcptool offers the tools of an MCP server to a tool stage
// (toolstage.New), and so to any host's loop — an openai-go,
// anthropic-sdk-go or genai program's, or toolguard's agent — over the
// official Go SDK client (github.com/modelcontextprotocol/go-sdk). It
// imports toolstage, never langchaingo.
//
// [Tools] lists every tool of a connected *mcp.ClientSession and adapts each to
// toolstage.Tool. A tool's Schema is the server's own inputSchema, so the model
// is sent exactly what the server declared and the model stage (httpguard's
// or middleware's ToolArgValidation) checks each call against it before any
// request reaches the server: a call with bad arguments is answered with
// feedback and corrected by the model, and never costs a network round trip.
//
//	client := mcp.NewClient(&mcp.Implementation{Name: "my-agent", Version: "v1"}, nil)
//	session, err := client.Connect(ctx, &mcp.CommandTransport{Command: exec.Command("npx", "-y", "@modelcontextprotocol/server-everything")}, nil)
//	if err != nil { ... }
//	defer session.Close()
//	tools, err := mcptool.Tools(ctx, session)
//
// Calling a tool sends its arguments with CallTool and returns the result's
// content as text: text parts joined by newlines, other parts described in
// brackets (for example "[image image/png, 1234 bytes]"). A result the
// server marks as an error (IsError) is returned as a *[ToolError] whose text
// is the server's message, so the agent shows the model what went wrong;
// protocol and transport failures are returned as other errors.
//
// MCP tool names may contain characters OpenAI and Anthropic reject
// ("files.read", "a/b"; they accept ^[a-zA-Z0-9_-]{1,64}$). Such a tool is
// offered to the model under toolstage.SafeToolName of its name, stable and
// distinct ("files_read_601e4eb6"), and still called on the server by its
// own name; [WithToolNames] supplies another mapping.
//
// The session belongs to the caller: mcptool never closes it. The adapted
// tools are immutable and safe for concurrent use, as is the session.
//
// Closing a session over mcp.CommandTransport closes the server's stdin and
// waits for the process to exit, signalling it after five seconds. Some
// servers only exit on a signal, and npx runs the server as a grandchild
// that a signal to npx does not reach: examples/mcp starts npx in a process
// group of its own and stops the group.
package mcptool
