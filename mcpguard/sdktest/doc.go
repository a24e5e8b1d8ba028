// Package sdktest proves package mcpguard with MCP SDKs that stay out of
// toolguard's go.mod: a github.com/mark3labs/mcp-go client talking through
// mcpguard.New to an mcp-go server over loopback Streamable HTTP, in both
// protocol eras (the initialize handshake with Mcp-Session-Id, 2025-11-25,
// and the stateless 2026-07-28 protocol with server/discover). mcp-go's
// server checks no arguments unless asked (WithInputSchemaValidation) and
// its client does not check results against outputSchema, so what the
// tests see is the transport's work: a bad call answered with feedback and
// never forwarded, then the corrected call forwarded once; a result that
// breaks its outputSchema withheld; tools/list fetched once per session.
//
// It is a module of its own (replace => ../..), so that mcp-go and its
// dependencies never reach toolguard's go.mod; .ci/run vets and tests it.
package sdktest
