// Package mcpguard guards the tool stage at the MCP wire: [New] returns an
// http.RoundTripper for a Go MCP client over Streamable HTTP that checks
// each tools/call against the tool's inputSchema before it reaches the
// server, and each result against the tool's outputSchema before the
// client reads it.
package mcpguard
