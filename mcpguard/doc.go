// Package mcpguard guards the tool stage at the MCP wire: [New] returns an
// http.RoundTripper for a Go MCP client over Streamable HTTP that checks
// each tools/call against its tool's inputSchema before the server sees
// it, and each result against the tool's outputSchema before the client
// reads it. The MCP specification says servers MUST validate tool inputs
// and clients SHOULD validate structured results; go-sdk's raw
// Server.AddTool validates neither, and no Go client checks results.
//
//	session, err := mcp.NewClient(impl, nil).Connect(ctx, &mcp.StreamableClientTransport{
//		Endpoint:   url,
//		HTTPClient: &http.Client{Transport: mcpguard.New(nil)},
//	}, nil)
//
// Nothing else changes in the program: a call the transport refuses
// reads as the tool's own error result (IsError, its text in Content).
//
// # What it reads
//
// The transport reads the body of every POST, up to [MaxBody]. A single
// JSON-RPC 2.0 request whose method is tools/call is guarded; the tools/list
// results it carries teach it the tools. Everything else passes as it came,
// byte for byte: initialize and server/discover, notifications,
// resources, prompts, unknown methods, batches without a tools/call, GET
// and DELETE, and any body that is not well-formed JSON-RPC (no "jsonrpc":
// "2.0", an id that is neither a string nor a number, params that are not
// an object): the server answers those itself. Keys are matched exactly,
// as the SDKs match them.
//
// # Where the schemas come from
//
// The transport keeps each tool's inputSchema and outputSchema, per server
// and session: the endpoint URL, the Mcp-Session-Id header and the
// Authorization header (hashed; two users of a stateless server may be
// offered different tools), from the tools/list results that pass through
// it, as JSON or as server-sent events. A call naming a tool it has not
// seen makes it send tools/list itself: one request per session, however
// many calls miss at once, with the call's headers (its session, its
// credentials, its protocol version; Mcp-Method set to tools/list, the
// call's Mcp-Name and Mcp-Param-* headers dropped) and, for the
// 2026-07-28 protocol, the call's _meta (without its progress token); its
// pages are followed through nextCursor, at most 64 within MaxBody in all.
// notifications/tools/list_changed, read on any stream the client opens,
// and a DELETE that ends the session forget the session's tools: the next
// call fetches them again. A tools/list result with a positive ttlMs (the
// 2026-07-28 protocol's cacheable results) is fresh that long: the first
// call after it fetches the list again, so a schema the server changed is
// read; a result without one, or with 0 ("immediately stale", which the
// spec lets a client re-fetch or not), is kept until one of the above, a
// tool it lacks fetching it again anyway. The cache holds at most 1024 sessions and 64
// MiB of schemas, the oldest forgotten first. Schemas without "$schema"
// are read as JSON Schema 2020-12, the MCP default dialect, and each is
// compiled once.
//
// # Calls
//
// A tools/call is checked as the model stage checks a tool call
// ([guard.CheckArgs]): arguments that fail are stripped of empty values
// where that fixes them ([WithStripEmpty]) and coerced ("5" for an
// integer, "true" for a boolean, a list sent as a string: [WithRepair]),
// then validated; a key given twice in the arguments is a violation.
// Cleaned arguments are written back into the request in place, the rest
// of the body as the client wrote it ([guard.EventStripped],
// [guard.EventRepaired]). Arguments still invalid never reach the server:
// the transport answers the request itself with
//
//	{"jsonrpc":"2.0","id":<the call's id>,"result":{"content":[{"type":"text","text":<feedback>}],"isError":true}}
//
// holding the same feedback a re-ask holds ([errfmt.Feedback]), so the
// model reads every violation and can correct itself (SEP-1303), and
// reports a [guard.EventInvalid]. The answer is application/json, or one
// server-sent event when the client accepts only text/event-stream.
//
// # Results
//
// The result of a call whose tool declares an outputSchema is read (JSON,
// or the event of a stream that answers the call; the stream's other
// events pass as they come) and its structuredContent checked against it.
// An error result (isError) is not checked, nor a result of the
// 2026-07-28 protocol that is not complete (resultType "input_required",
// a multi round-trip request asking the client for input before the tool
// runs, or "task"); a complete result without structuredContent breaks
// the schema. A violation is reported
// ([EventInvalidResult]) and, by default, the result is replaced by an
// isError result naming the violations ([RefuseOutput]); with
// [WithOutputViolations]([PassOutput]) it is handed on as it came.
//
// # Failing open, failing closed
//
// What the transport cannot check passes with a [guard.EventUnguarded] (a
// [guard.EventSchemaError] for a schema), logged to slog.Default at Warn
// without a handler ([WithEventHandler]). With [WithFailClosed] it is
// refused instead:
//
//	a tool whose inputSchema or outputSchema does not compile  its calls answered isError (other tools are guarded)
//	tools/list could not be fetched, or is past its bounds     the call answered isError
//	a tool the server does not list                             answered isError listing the tools (open: passed, unknown_tool event)
//	a result to check that cannot be read (past MaxBody, …)     replaced by an isError result
//	a request body past MaxBody                                 HTTP 413 with a JSON-RPC error
//	a key of the envelope given twice, a batch with tools/call  HTTP 400 with a JSON-RPC error
//
// # Limits
//
// [WithCallLimit] caps the tools/calls forwarded per MCP session or per
// conversation thread ([PerThread]: the context's [guard.WithThread], else
// the [ThreadHeader]), for every tool or one ([guard.WithToolName]), with
// guard's [guard.ToolCallLimit] and its options: the counts are kept in
// its [guard.ThreadStore], so a shared store (redisstore) counts across
// replicas. A call is counted as it is forwarded; a call past a limit is
// answered with an isError result naming the limit and never reaches the
// server; a store that fails refuses the call unless
// [guard.WithStoreFailOpen].
//
// # Policies and annotations
//
// [WithToolPolicy] asks a function before each call is forwarded, with a
// [ToolInfo]: the tool's name, server and schemas, and its annotations
// (destructiveHint, readOnlyHint, idempotentHint, openWorldHint) only
// when the operator trusts the server ([WithTrustedServers]). By default
// no server is trusted and a policy sees no annotations: they are the
// server's own claims about its tools (the specification says clients
// must treat them as untrusted unless the server is trusted), and a
// policy that believed a server calling its destructive tool read-only
// would protect nothing. [RefuseDestructive] refuses every tool that may
// be destructive by the specification's defaults: on an untrusted server,
// every tool. A refused call is answered isError, reported in a
// [guard.EventToolDenied], never forwarded, never counted by a limit.
//
// # Events
//
// Events carry Middleware "mcpguard", the tool's name in Tool and the
// JSON-RPC id in CallID. They go to the context's observers
// ([guard.WithObserver]) and to the handler of [WithEventHandler], or
// without one to the context's handler ([guard.Report]). A limit's events
// are guard's ToolCallLimit's (Middleware "ToolCallLimit").
//
// # Spans and metrics
//
// Each tools/call is told to the [guard.RunObserver]s of the request's
// context, or of [WithObserver], as a tool execution: with otelguard's
// observer, an "execute_tool {name}" span (gen_ai.tool.name,
// gen_ai.tool.call.id), ended when its response has been read or closed,
// with error.type when the transport answered it itself (the refusal's
// cause: *validation.Error for invalid arguments or a withheld result,
// *guard.LimitExceededError, …) or the server answered with an HTTP error.
// The call's events are span events on it, and otelguard's
// toolguard.events counter counts them by kind and middleware.
//
// # Stdio
//
// [Stdio] guards a session over MCP's stdio transport (newline-delimited
// JSON-RPC between a client and a server process) with the same options
// and the same rules: each message of the client goes through the
// transport New returns, as one POST whose answer is the server's message
// with its id. toolguard-proxy -stdio -- CMD ARGS… is a wrapper around it.
//
// # Not yet
//
// A batch holding a tools/call is refused as above (JSON-RPC batches left
// MCP in 2025-06-18; one the guard cannot check must not pass). A
// tools/call sent as a notification (no id) is not a request and passes.
// The transport does not recompute the
// Mcp-Param-* headers of the 2026-07-28 protocol for an argument it
// cleaned; a header bound to a coerced boolean ("True" made true) then
// disagrees with the body, and the server refuses the call.
package mcpguard
