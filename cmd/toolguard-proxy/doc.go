// Command toolguard-proxy guards the tool calls of any LLM client, in any
// language, at the wire: a reverse proxy ([net/http/httputil.ReverseProxy])
// whose Transport is [github.com/toolguard/toolguard/httpguard]. Point the
// client's base URL at it; it forwards every request to -upstream (or to
// the upstream of its provider: see Upstreams), and the requests httpguard
// recognises (OpenAI Chat Completions and Responses,
// Anthropic Messages, Gemini generateContent, sync and streamed) go
// through toolguard's stages: invalid tool calls are re-asked before the
// client sees them, transient failures retried, tool calls limited per
// run and per thread.
//
//	toolguard-proxy -listen 127.0.0.1:8080 -upstream https://api.openai.com [-max-retries 2] [-fail-closed]
//	                [-unknown-tools pass|reject] [-history off|repair|refuse] [-run-limit N] [-thread-limit N] [-redis redis://…]
//	                [-model-call-limit N] [-max-body 8MiB] [-max-inflight N] [-version]
//	                [-auth-keys FILE -upstream-key-env NAME] [-admin-listen ADDR] [-store-fail-open]
//	                [-redis-cluster redis://host:port?addr=host2:port&addr=…]
//	                [-upstream-anthropic URL [-upstream-anthropic-key-env NAME]]
//	                [-upstream-gemini URL [-upstream-gemini-key-env NAME]] [-tls-cert FILE -tls-key FILE]
//	                [-mcp on|off] [-upstream-mcp URL [-upstream-mcp-key-env NAME]]
//	                [-mcp-session-limit N] [-mcp-thread-limit N]
//	toolguard-proxy -stdio [-fail-closed] [-mcp-session-limit N [-redis redis://…]] [-log-level L] -- CMD ARGS…
//
// One proxy serves every provider (see Upstreams), and guards the MCP
// requests it forwards (see MCP servers); -stdio wraps a stdio MCP server
// instead (see Stdio MCP servers). -version prints
// "toolguard-proxy VERSION REVISION" (devel for a build of a working tree;
// the VCS revision, unknown without one, -dirty for a changed tree) and
// exits.
//
// Every flag but -version and -stdio may also be set as an environment variable,
// TOOLGUARD_ and the flag's name in upper case with "_" for "-"
// (TOOLGUARD_UPSTREAM, TOOLGUARD_THREAD_LIMIT=10, TOOLGUARD_FAIL_CLOSED=true),
// which suits a container. The command line wins; TOOLGUARD_ names that
// match no flag are ignored; a value its flag refuses stops the proxy
// before it starts, with a line naming the variable (exit status 2).
//
// # Any language: run the proxy
//
// Start it beside the agent, then change the client's base URL and
// nothing else. The key still comes from the client: the proxy passes
// Authorization, x-api-key and x-goog-api-key through to the provider
// and never logs them (unless -auth-keys: see Keys and tenants).
//
//	go run github.com/toolguard/toolguard/cmd/toolguard-proxy -upstream https://api.openai.com
//
// Python (openai):
//
//	client = OpenAI(base_url="http://127.0.0.1:8080/v1",
//	                default_headers={"X-Toolguard-Thread": session_id})
//
// TypeScript (openai):
//
//	const client = new OpenAI({ baseURL: "http://127.0.0.1:8080/v1",
//	                            defaultHeaders: { "X-Toolguard-Thread": sessionId } });
//
// Or with no code change at all: OPENAI_BASE_URL=http://127.0.0.1:8080/v1.
// For Anthropic, run it with -upstream-anthropic https://api.anthropic.com
// (or -upstream, alone) and give the SDK base_url="http://127.0.0.1:8080"
// (ANTHROPIC_BASE_URL); for Gemini, -upstream-gemini
// https://generativelanguage.googleapis.com and the google-genai client's
// http_options base_url. The tool schemas are read from each request's
// own tools, so nothing is configured per tool.
//
// # Upstreams
//
// -upstream receives every request that no other upstream claims.
// -upstream-anthropic URL and -upstream-gemini URL give Anthropic's and
// Gemini's requests an upstream of their own, so that one proxy serves
// the openai, anthropic and google-genai clients of one agent:
//
//	toolguard-proxy -upstream https://api.openai.com -upstream-anthropic https://api.anthropic.com \
//	                -upstream-gemini https://generativelanguage.googleapis.com
//
// A path httpguard reads as one protocol's decides: …/chat/completions and
// …/responses go to -upstream; …/v1/messages and the paths below it
// (count_tokens, batches) to -upstream-anthropic; …/models/MODEL:METHOD
// (generateContent, streamGenerateContent, countTokens, embedContent, …)
// to -upstream-gemini. Any other path goes by the header only that
// provider's SDKs send, so that their other requests (the list of models,
// files) reach it too: anthropic-version (every Anthropic SDK sends it
// with every request) to -upstream-anthropic; x-goog-api-key or a key
// query parameter to -upstream-gemini. Everything else, and a provider's
// requests when its flag is not given, goes to -upstream. Every upstream
// is served alike: the same guard, retries and limits (a thread's counts
// are the thread's, whichever upstream its requests go to), errors said by
// their kind, the upstream's own Host, streams.
//
// With -auth-keys each upstream gets its own provider's key:
// -upstream-key-env names -upstream's, and -upstream-anthropic-key-env and
// -upstream-gemini-key-env, required with their upstream, name theirs, so
// that no provider is sent another's key. Without -auth-keys the clients'
// keys pass through, and the -key-env flags are refused.
//
// # Stages
//
// The transport's stages are, outermost first: otelguard's observer; the
// history check ([httpguard.HistoryCheck]), only with -history repair or
// refuse; the model-call limit ([httpguard.ModelCallLimit]), only when
// -model-call-limit is given; the tool-call limit ([httpguard.ToolCallLimit]), only when -run-limit or
// -thread-limit is given; argument validation ([httpguard.ToolArgValidation],
// always, -max-retries re-asks, -fail-closed, -unknown-tools); model retries
// ([httpguard.ModelRetry], always, -model-retries). This is the order
// package guard recommends: a retry repeats one upstream request, not a
// whole re-ask loop; the limit counts the calls validation let through, and
// a call it blocks is told to the model (-limit-exit continue), answered
// with a text saying which limit (end) or refused with 422 (error).
//
// -model-call-limit N caps the requests of one thread (found as for
// -thread-limit) that reach the guard: outside the re-asks and retries,
// it counts the client's requests, and the one past N never reaches the
// upstream. It is answered with a text saying which limit (-limit-exit
// end, and continue, since a refused request has nothing to re-ask) or
// refused with 422 model_call_limit_exceeded (error). With -redis its
// counts are shared too.
//
// -history repair sends a history the provider would refuse with a 400 —
// a call without a result, an orphan result, duplicate call ids, past
// arguments that are not an object, a null Anthropic input — repaired
// where that is unambiguous (never inventing arguments; each repair a
// history_repaired event, counted in toolguard_events_total), refused with
// 422 invalid_history where it is not; -history refuse refuses every such
// request, naming the message; off (the default) sends it as it came.
//
// A call of a tool the request does not offer passes on untouched by
// default (an unknown_tool event); with -unknown-tools reject it is
// invalid: the model is re-asked, told which tools there are, and with
// -fail-closed a call still unknown after the last re-ask is refused.
//
// The client's SDK retries too (the openai and anthropic SDKs twice by
// default, on 408, 409, 429, 5xx and dropped connections). The proxy's
// refusals carry x-should-retry: false, which the SDKs honour; its own
// retries come first, so a client that also retries multiplies them: lower
// the client's or -model-retries.
//
// # MCP servers
//
// The proxy guards the MCP requests it forwards with
// [github.com/toolguard/toolguard/mcpguard], as mcpguard.New does for a Go
// MCP client: put it in front of an MCP server's Streamable HTTP endpoint
// (-upstream http://mcp-server:3000) and point the host at the proxy
// (http://127.0.0.1:8080/mcp, the server's path kept). A request is MCP
// by its body, on any path but those httpguard guards as a model's
// (…/chat/completions, …/responses, …/v1/messages, …/models/MODEL:METHOD):
// a POST whose body is a JSON-RPC 2.0 message or batch ("jsonrpc":
// "2.0"); and a request of another method carrying an Mcp-Session-Id or
// Mcp-Protocol-Version header (a session's GET stream and its DELETE). A
// model request stays the model guard's however it is dressed (a
// "jsonrpc" member, an MCP header), so none leaves httpguard's stages and
// limits that way. Then:
//
//   - tools/call is stripped, coerced and validated against the tool's
//     inputSchema; cleaned arguments are forwarded cleaned; arguments
//     still invalid never reach the server: the proxy answers the request
//     itself with an isError tool result holding the feedback a re-ask
//     holds, so the model corrects itself;
//   - a result whose structuredContent breaks the tool's outputSchema is
//     replaced by an isError result naming the violations;
//   - tools/list results teach the proxy the tools, per server and session;
//     a call of a tool it has not seen makes it fetch tools/list itself,
//     once per session;
//   - everything else (initialize, notifications, resources, prompts,
//     malformed JSON-RPC, batches without a tools/call) passes byte for byte.
//
// MCP requests go to -upstream-mcp URL when it is given, else to
// -upstream, whatever their path and headers: one proxy can serve an
// agent's model and its MCP server (-upstream https://api.openai.com
// -upstream-mcp http://mcp-server:3000), or one MCP server alone
// (-upstream http://mcp-server:3000). They are authenticated, limited by
// -max-inflight, logged and counted as any request, with the same
// -auth-keys (the MCP server gets -upstream-mcp-key-env's key, or
// -upstream-key-env's without -upstream-mcp, in place of the client's,
// replaced after mcpguard, so that the sessions of a stateless server,
// told apart by their credentials, stay each client key's), -max-body,
// timeouts and metrics; the
// calls are execute_tool spans and their events (Middleware "mcpguard")
// are logged and counted in toolguard_events_total. -fail-closed refuses
// what mcpguard cannot check (a schema that does not compile, a tools/list
// that cannot be fetched, a tool the server does not list, a result that
// cannot be read) instead of passing it with an unguarded event.
// -mcp-session-limit N caps the tools/calls forwarded per MCP session, and
// -mcp-thread-limit N those per X-Toolguard-Thread thread (per tenant with
// -auth-keys; a call naming no thread is not counted, or refused with
// -fail-closed); a call past a limit is answered isError and never reaches
// the server; with -redis or -redis-cluster the counts are shared by every
// replica. -mcp off passes MCP requests as any other request.
//
// mcpguard sits beside httpguard, not in front of it: a model request is
// not read as JSON-RPC a second time nor its stream watched for MCP
// notifications, and a tools/call never goes through ModelRetry, which
// would send it again after a 5xx (running a tool twice may do twice what
// it does).
//
// # Stdio MCP servers
//
// toolguard-proxy -stdio -- CMD ARGS… wraps a stdio MCP server: it starts
// CMD, reads the host's newline-delimited JSON-RPC on its own stdin, and
// guards it as the HTTP proxy does ([mcpguard.Stdio]: tools/call checked,
// results checked, tools/list learned from CMD's answers or fetched from
// CMD once), writing CMD's messages and its own answers to stdout and
// nothing else: its logs are JSON on stderr, beside CMD's stderr, which
// passes through. A message longer than 8 MiB (mcpguard.MaxBody) is
// answered with a JSON-RPC error, never buffered. SIGINT, SIGTERM, SIGHUP
// and SIGQUIT are forwarded to CMD's process group; when CMD exits the
// proxy exits with its status (128+N for a signal N). -fail-closed,
// -mcp-session-limit (a session is the process's, counted in -redis when
// given), -log-level and OTLP traces apply; -upstream and the HTTP flags
// are not used. An IDE starts the proxy in the server's place, e.g. in
// Claude Desktop's or Cursor's mcpServers:
//
//	"everything": {
//	  "command": "toolguard-proxy",
//	  "args": ["-stdio", "--", "npx", "-y", "@modelcontextprotocol/server-everything"]
//	}
//
// # Keys and tenants
//
// With -auth-keys FILE the proxy is a shared service: each client gets a
// key of its own, and the provider's key stays with the proxy. The file
// holds one key per line, "KEY TENANT", separated by spaces or tabs;
// blank lines and lines beginning with # are skipped, and a third field
// beginning with # is a comment:
//
//	# team keys: KEY TENANT
//	tg-9f2c4e0a7b1d3e5f search-team
//	tg-0c1d2e3f4a5b6c7d billing     # rotated 2026-11
//
// A key is 16 to 512 bytes of printable ASCII; a tenant up to 64 letters,
// digits, '.', '_' and '-'; a tenant may have several keys, a key one
// tenant. -upstream-key-env NAME (required with -auth-keys, and only with
// it) names the environment variable holding the provider's key (with
// -upstream-anthropic or -upstream-gemini, each has its own: see
// Upstreams); the proxy refuses to start when it is unset or empty, and when the file is
// malformed, with one line naming the flag and the line of the file, never
// a key.
//
// A request must carry a key of the file where its SDK puts the API key:
// Authorization: Bearer (OpenAI and OpenAI-compatible clients), x-api-key
// (Anthropic), x-goog-api-key or the query parameter key (Gemini). Every
// one of those places that holds a key must hold one of the file's, all of
// one tenant. Otherwise the request is answered 401 in the protocol's
// error shape (type authentication_error; Gemini's UNAUTHENTICATED) and
// nothing reaches the upstream. The upstream receives the provider's key
// in the place the client's was (Authorization: Bearer, x-api-key,
// x-goog-api-key, key=), and never the client's key: the other credential
// headers are removed. Keys are compared as SHA-256 digests in constant
// time; a log line says of a refused key only the first 8 hex digits of
// its SHA-256 (key_hash).
//
// Thread limits count per tenant: tenant A's thread "t1" and tenant B's
// "t1" are two threads, whatever ids the clients choose (the guard counts
// "LEN:TENANT:ID", LEN the tenant's length). The access log and the event
// log lines name the tenant, and http_server_request_duration_seconds has
// a toolguard_tenant label (the first 100 tenants the process sees; later
// ones are "_OTHER").
//
// Without -admin-listen, /metrics on the traffic port needs a key too
// (any tenant's: it names every tenant), while /healthz and /readyz stay
// open to probes; serve it on -admin-listen to keep it from tenants.
//
// SIGHUP re-reads the key file (and the TLS pair: see TLS): requests
// arriving from then on are served with the new keys. A file that cannot
// be read or is malformed changes nothing; the log says why (the line,
// never the key). Without -auth-keys credentials pass through as they
// came; without -auth-keys and TLS, SIGHUP has its default effect.
//
// # TLS
//
// With -tls-cert FILE -tls-key FILE (PEM: the server's certificate
// followed by its chain, and its private key) the proxy serves HTTPS on
// -listen, TLS 1.2 and up, HTTP/1.1 as on plain -listen; a client speaking
// plain HTTP to it is answered 400. Both flags or neither; a file that
// cannot be read, a certificate that does not parse, a key that does not
// match stop the proxy before it starts, with a line naming the flag.
// SIGHUP re-reads both files: connections made from then on get the new
// certificate, and connections already open keep theirs, requests in
// flight untouched. A pair that cannot be read or does not match changes
// nothing, and the log says why. -admin-listen stays plain HTTP: it is
// for the operator's network, whose probes (Kubernetes' httpGet) and
// scrapers speak plain HTTP by default.
//
// # Headers
//
// X-Toolguard-Thread names the conversation thread of a request: the
// thread limit counts per thread (guard.WithThread). Without it, a
// request's thread is its transcript, as for an agent that names none. It
// must be one id of at most 256 bytes (else 400) and is removed before the
// request goes upstream. Without -auth-keys the proxy trusts it: whoever
// can reach the proxy can spend any thread's limit, so keep the proxy
// where only your agents reach it (loopback, a sidecar, a private
// network). With -auth-keys a client can spend only its own tenant's
// threads.
//
// A W3C traceparent header makes the proxy's spans part of the client's
// trace. Accept-Encoding is removed: the proxy negotiates compression with
// the upstream itself (httpguard decodes what the upstream compresses
// anyway), and answers the client uncompressed. Every other header, the query and the body pass through as
// they came, except the hop-by-hop headers every proxy drops; no
// X-Forwarded-For is added.
//
// # Endpoints
//
// GET /healthz answers 200 "ok" while the process serves: liveness only,
// it checks nothing outside the process. GET /readyz answers 200 "ok"
// when the proxy should be sent requests, 503 while the Redis of -redis
// (or a master of -redis-cluster) does not answer a PING within 500ms
// (each probe pings; not with
// -store-fail-open, under which the proxy serves without Redis) and while
// the proxy drains after SIGTERM; its body says which, never an address (the
// log has the error). GET /metrics is the Prometheus exposition.
//
// With -admin-listen ADDR those three are served on ADDR only: the
// traffic port (-listen) then proxies every path, /metrics included, so
// its clients reach the upstream and nothing of the operator's. The admin
// port proxies nothing and stays open while the proxy drains, so that
// /readyz can say so; it closes last. Without -admin-listen they are on
// the traffic port beside the proxied paths, whose listener closes at
// SIGTERM. Every other request is proxied.
//
// # Metrics
//
// Through OpenTelemetry's Prometheus exporter, on a registry of the
// proxy's own (with the Go runtime's and the process's collectors):
//
//   - http_server_request_duration_seconds (histogram, by
//     http_request_method and http_response_status_code): one point per
//     client request, a stream to its end; its _count counts the requests.
//   - http_server_active_requests: the requests in flight.
//   - toolguard_events_total (by toolguard_event_kind and
//     toolguard_middleware): every toolguard event; re-asks are kind
//     "reask", retries "retry", blocked calls "limit", invalid calls
//     "invalid", passed-on invalid calls "give_up", requests passed on
//     unguarded "unguarded" (see Unguarded requests).
//   - gen_ai_client_operation_duration_seconds: one point per request that
//     reached the upstream (re-asks and retries included), by
//     gen_ai_request_model and error_type.
//   - gen_ai_client_token_usage: tokens per upstream request where the
//     provider reports them, by gen_ai_token_type.
//
// Every label comes from a closed set, so that no client can grow the
// metrics (each label value is a series kept for the life of the
// process): http_request_method is one of the standard methods or
// "_OTHER", as OpenTelemetry's conventions say; gen_ai_request_model, the
// model the client named, is cut to 128 bytes and only the first 100
// distinct models get their own, the rest are "_OTHER"
// (otelguard.MaxModelLabel, otelguard.MaxModels).
//
// # Traces
//
// When OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)
// is set, spans are exported over OTLP/HTTP, configured by the standard
// OTEL_EXPORTER_OTLP_* variables; service.name is toolguard-proxy unless
// OTEL_SERVICE_NAME says otherwise. Each guarded request has a
// toolguard.generate_content span carrying the toolguard events, and a
// "chat {model}" span per upstream request (package otelguard). Spans hold
// no content. The last spans are exported at shutdown.
//
// # Logs
//
// JSON lines on stderr (log/slog), at -log-level: one line per request when
// its response (a stream to its end) is done, with the method, the path,
// the status, the duration, the bytes written, the thread and the
// upstream's request id; one line per toolguard event, with its kind,
// stage, attempt, tool, call id, JSON Pointer paths, the violations'
// keywords and paths, a limit's figures, an upstream status. Never a header
// value, a query (Gemini's ?key= is a key), a body, the model's arguments
// or the feedback text, which quote content. Requests cut short are logged
// at Warn with "aborted": true; a client that went away has status 499.
//
// # Unguarded requests
//
// Two kinds of request pass on although their tool calls cannot be
// guarded, and each is reported every time, as an "unguarded" event
// (toolguard_events_total, a Warn log line with its reason): a Chat
// Completions request that offers legacy functions and no tools (its
// function_call passes as it comes), and a WebSocket upgrade (OpenAI's
// Realtime API, whose frames httpguard does not read). A request offering
// tools on a path httpguard does not know is logged once per path
// (misconfigured).
//
// # Bodies and timeouts
//
// A request body larger than -max-body (8MiB, httpguard.MaxBody: every
// body accepted is guarded) is refused with 413, declared or chunked; a
// body not received within -body-timeout of the headers with 408; headers
// must arrive within -read-header-timeout; idle keep-alive connections are
// closed after -idle-timeout. With -max-inflight N, a request that
// arrives while N are being served (streams until their end) is refused
// at once with 503 (proxy_overloaded) and retry-after: 1, which the SDKs
// honour before they retry. Those errors, and 502 (upstream_unreachable)
// for an upstream that cannot be reached, come in the error shape of the
// protocol the path names (OpenAI's, Anthropic's, Google's:
// httpguard.ErrorResponse). No error a client reads names the upstream's
// address or host: a failure to reach or read the upstream is said by its
// kind (connection refused, timeout, TLS failed, DNS lookup failed,
// connection closed), in a 502 and in a stream's error event alike; the
// log names the address. There is no write timeout and no overall request
// timeout: either would cut a stream that outlives it. A client that goes
// away cancels its upstream request.
//
// # Shutdown
//
// On SIGTERM or SIGINT the proxy stops accepting connections, lets the
// requests in flight finish, streams and re-asks included, for up to
// -shutdown-timeout (2m; keep the orchestrator's grace period longer),
// exports its last spans and exits 0. Requests still running after
// -shutdown-timeout are cut and the exit status is 1.
//
// # Limits across replicas
//
// Replicas are stateless but for their thread counts. Without -redis
// each process counts its own (a bounded in-memory store), so N replicas
// behind a load balancer let N times the thread limit through. With
// -redis redis://host:6379/0 (go-redis URL options: password, db,
// dial_timeout, …) they share the counts (package guard/redisstore): one
// atomic step per reservation, so the limit holds exactly however the
// requests are spread. -redis-cluster URL (go-redis's cluster URL,
// redis://host1:6379?addr=host2:6379&addr=host3:6379; not with -redis)
// keeps them in a Redis Cluster: a thread's keys share one hash slot, so
// each step runs on the master serving it; /readyz then PINGs every
// master, and the check before the upstream (below) the master of the
// request's thread. -run-limit needs no store: a run is read from the
// request's transcript.
//
// When Redis cannot be reached, a limited request is answered 503 in its
// protocol's shape, type limit_store_unavailable, whose message is a fixed
// text ("toolguard-proxy: the limit store cannot be reached"): no address,
// port or key reaches a client; the store_error event's log line has the
// store's error. Nothing leaves unlimited, and the provider is not paid
// where the limit can be checked first:
//
//   - -model-call-limit reserves a request's count before the request
//     goes upstream, so a request it cannot count never goes;
//   - -thread-limit counts the tool calls in the answer, so it reserves
//     only once the upstream has answered. The proxy therefore asks Redis
//     first (a PING within 500ms) for each POST naming a thread
//     (X-Toolguard-Thread; a thread read from the transcript needs no
//     store) and refuses it without going upstream when Redis does not
//     answer. Redis failing between that check and the reservation still
//     costs the upstream request, and the answer is refused.
//
// With -store-fail-open limited requests pass instead, uncounted in the
// thread, each failure a store_error event (toolguard_events_total, a
// Warn log line), and /readyz no longer depends on Redis.
package main
