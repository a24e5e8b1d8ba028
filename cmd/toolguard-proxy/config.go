package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/redis/go-redis/v9"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/httpguard"
)

// config is what the flags say.
type config struct {
	listen      string
	adminListen string   // /metrics, /healthz, /readyz; "": on listen
	upstream    *url.URL // every request no route below claims

	// -upstream-anthropic and -upstream-gemini with their -key-env:
	// upstreams of their own for Anthropic's and Gemini's requests
	// (providerOf); a route without a URL sends them to upstream.
	anthropic, gemini route
	// -upstream-mcp with its -key-env: the upstream of the MCP requests
	// (a JSON-RPC body); without a URL they go to upstream.
	mcpRoute route

	maxRetries   int                     // ToolArgValidation's re-asks
	modelRetries int                     // ModelRetry's retries
	failClosed   bool                    // ToolArgValidation fails closed
	unknownTools guard.UnknownToolPolicy // ToolArgValidation's calls of tools the request does not offer
	// history is what -history says of a history the provider would
	// refuse: nil (off), or the HistoryCheck's policy.
	history *httpguard.HistoryPolicy

	// -mcp: MCP requests (a JSON-RPC body, on any path but a model's) are guarded by
	// mcpguard; -mcp-session-limit and -mcp-thread-limit cap their
	// tools/calls per MCP session and per thread (0: none).
	mcp                             bool
	mcpSessionLimit, mcpThreadLimit int

	// -stdio: the command (and its arguments) of the stdio MCP server
	// the proxy wraps, instead of serving HTTP; nil without.
	stdio []string

	runLimit, threadLimit int // ToolCallLimit; 0: none
	modelCallLimit        int // ModelCallLimit per thread; 0: none
	limitExit             guard.ExitBehavior
	redisURL              string                // -redis: one Redis server (or Sentinel's master)
	redisCluster          *redis.ClusterOptions // -redis-cluster, parsed; nil without
	storeFailOpen         bool                  // the limits let calls pass uncounted when the store cannot be reached

	maxBody           int64
	maxInflight       int // requests served at once; 0: no cap
	readHeaderTimeout time.Duration
	bodyTimeout       time.Duration
	idleTimeout       time.Duration
	shutdownTimeout   time.Duration

	logLevel slog.Level

	// -auth-keys: the key file, the keys it held at start, and the
	// provider's key from the variable -upstream-key-env names. keys is
	// nil without -auth-keys: credentials then pass through.
	authKeysPath   string
	keys           *keyring
	upstreamKeyEnv string
	upstreamKey    string

	// -tls-cert and -tls-key: the files, and the pair they held at
	// start; tlsPair is nil without TLS (plain HTTP on listen).
	tlsCert, tlsKey string
	tlsPair         *tls.Certificate

	// env maps the name of each flag whose value came from the
	// environment to its variable, so that errors name what was set.
	env map[string]string
}

// route is the upstream of one provider's requests.
type route struct {
	url    *url.URL // nil: the provider's requests go to -upstream
	keyEnv string   // the variable of the provider's key (-upstream-…-key-env)
	key    string   // the provider's key, sent with -auth-keys; "" without
}

// envPrefix begins the environment variable of every flag but -version:
// TOOLGUARD_THREAD_LIMIT is -thread-limit (envName).
const envPrefix = "TOOLGUARD_"

// envName is the environment variable that sets the flag name: upper
// case, "-" replaced by "_", after envPrefix.
func envName(name string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// src names where the flag name's value came from, for an error: its
// environment variable, or "-name" (the command line or the default).
func (cfg *config) src(name string) string {
	if v, ok := cfg.env[name]; ok {
		return v
	}
	return "-" + name
}

// errUsage reports flags that do not parse: the message and the usage
// have been written, and the command exits 2.
var errUsage = errors.New("toolguard-proxy: bad usage")

// errVersion reports -version: the version line has been written to
// stdout, and the command exits 0 without serving.
var errVersion = errors.New("toolguard-proxy: -version")

const usageHead = `toolguard-proxy guards the tool calls of any LLM client at the wire: a
reverse proxy whose transport is httpguard. Point the client's base URL at it.

  toolguard-proxy -listen 127.0.0.1:8080 -upstream https://api.openai.com
  OPENAI_BASE_URL=http://127.0.0.1:8080/v1 python agent.py

Headers: X-Toolguard-Thread names the conversation thread the thread limit
counts (removed before the request goes upstream; per tenant with -auth-keys).
Endpoints: /healthz (liveness), /readyz (503 while -redis or -redis-cluster does not answer or
while draining), /metrics (Prometheus), on -admin-listen when given, else on
-listen; everything else is proxied. OTLP traces when
OTEL_EXPORTER_OTLP_ENDPOINT is set. Logs: JSON on stderr, never a header,
a query or content. SIGTERM: stop accepting, finish in-flight requests
(streams included), exit 0. SIGHUP: re-read -auth-keys and -tls-cert/-tls-key.

One proxy, every provider: -upstream-anthropic and -upstream-gemini take
Anthropic's (/v1/messages, anthropic-version) and Gemini's
(/models/MODEL:METHOD, x-goog-api-key, ?key=) requests, -upstream-mcp the MCP
requests; the rest go to -upstream.

MCP: a request whose body is JSON-RPC (any path but a model's) is an MCP request: its
tools/call is checked by mcpguard (an invalid one answered with an isError
result and never forwarded), the rest passed byte for byte (-mcp off: not
guarded); they go to -upstream-mcp, else -upstream. A stdio MCP server is wrapped instead with
  toolguard-proxy -stdio [flags] -- CMD ARGS…

Every flag but -version and -stdio may also be set as an environment variable:
TOOLGUARD_ and its name in upper case with "_" for "-" (TOOLGUARD_THREAD_LIMIT=10,
TOOLGUARD_FAIL_CLOSED=true); the command line wins, and TOOLGUARD_ names that
match no flag are ignored.

Flags:
`

// parseConfig parses args over the environment env looks variables up in
// (os.LookupEnv; see parseWithEnv). -h writes the usage to stdout and
// returns flag.ErrHelp; -version writes versionLine's line to stdout and
// returns errVersion, whatever the other flags say; a bad flag or
// variable writes the problem and the usage to stderr and returns
// errUsage.
func parseConfig(args []string, env func(string) (string, bool), stdout, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("toolguard-proxy", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var (
		cfg                                                         config
		upstream, maxBody, limitExit, logLvl, unknownTools, history string
		redisCluster, mcp                                           string
		stdio                                                       bool
		anthropicURL, geminiURL, mcpURL                             string
		version                                                     bool
	)
	fs.StringVar(&cfg.listen, "listen", "127.0.0.1:8080", "`address` to serve on (host:port)")
	fs.StringVar(&cfg.adminListen, "admin-listen", "", "serve /metrics, /healthz and /readyz on this `address` (host:port) and no longer\non -listen, whose clients then reach the upstream alone (default: on -listen)")
	fs.StringVar(&upstream, "upstream", "", "the provider's base `URL`, e.g. https://api.openai.com, https://api.anthropic.com,\nhttps://generativelanguage.googleapis.com (required); a request's path is appended to it")
	fs.StringVar(&anthropicURL, "upstream-anthropic", "", "the base `URL` of Anthropic's requests (/v1/messages and below it, any request\nwith anthropic-version), e.g. https://api.anthropic.com (default: -upstream)")
	fs.StringVar(&geminiURL, "upstream-gemini", "", "the base `URL` of Gemini's requests (…/models/MODEL:METHOD, any request with\nx-goog-api-key or ?key=), e.g. https://generativelanguage.googleapis.com (default: -upstream)")
	fs.IntVar(&cfg.maxRetries, "max-retries", 2, "re-asks after invalid tool calls, per client request (ToolArgValidation)")
	fs.IntVar(&cfg.modelRetries, "model-retries", 2, "retries of an upstream request that failed transiently: 408, 409, 429, 5xx,\na dropped connection (ModelRetry; 0: none). The client's SDK retries too")
	fs.BoolVar(&cfg.failClosed, "fail-closed", false, "answer calls still invalid after the last re-ask with HTTP 422 in the\nprovider's error shape, instead of passing them on")
	fs.StringVar(&history, "history", "off", "what a request whose history the provider would refuse gets (`policy`): off (sent as it\ncame), repair (what is unambiguous repaired, a history_repaired event) or refuse\n(422 invalid_history, nothing sent): a call without a result, an orphan result,\nduplicate call ids, past arguments that are not an object, a null Anthropic input")
	fs.StringVar(&unknownTools, "unknown-tools", "pass", "what a call of a tool the request does not offer gets (`policy`): pass (passed on\nuntouched, an unknown_tool event) or reject (invalid: re-asked, refused with -fail-closed)")
	fs.IntVar(&cfg.runLimit, "run-limit", 0, "cap the tool calls of one run (the model's turns since the last user message) (ToolCallLimit; 0: none)")
	fs.IntVar(&cfg.threadLimit, "thread-limit", 0, "cap the tool calls of one thread: the X-Toolguard-Thread header's, else the\ntranscript's (ToolCallLimit; 0: none)")
	fs.IntVar(&cfg.modelCallLimit, "model-call-limit", 0, "cap the requests of one thread that reach the guard, as -thread-limit finds the\nthread (ModelCallLimit; 0: none); a request past it never reaches the upstream\nand is answered as -limit-exit says, continue as end (there is nothing to re-ask)")
	fs.StringVar(&limitExit, "limit-exit", "continue", "what a call past a limit gets (`mode`): continue (the model is told and asked again),\nend (an answer without tool calls saying which limit), error (HTTP 422)")
	fs.StringVar(&mcp, "mcp", "on", "guard the MCP requests the proxy forwards (`mode`): on (a POST whose body is JSON-RPC,\non any path but a model's, a GET or DELETE with an Mcp-Session-Id header: tools/call checked by\nmcpguard, tools/list learned, the rest passed byte for byte) or off (passed as any\nother request); MCP requests go to -upstream-mcp, else -upstream")
	fs.IntVar(&cfg.mcpSessionLimit, "mcp-session-limit", 0, "cap the MCP tools/calls forwarded per MCP session (the upstream URL, Mcp-Session-Id\nand the credentials sent upstream), counted in -redis when given (0: none)")
	fs.IntVar(&cfg.mcpThreadLimit, "mcp-thread-limit", 0, "cap the MCP tools/calls forwarded per X-Toolguard-Thread thread (per tenant with\n-auth-keys), counted in -redis when given; a call naming no thread is not counted,\nor refused with -fail-closed (0: none)")
	fs.BoolVar(&stdio, "stdio", false, "wrap a stdio MCP server instead of serving HTTP: toolguard-proxy -stdio -- CMD ARGS…\nstarts CMD, guards the JSON-RPC between this process's stdin/stdout and CMD's, and\nexits with CMD's status (-upstream and the HTTP flags are not used)")
	fs.StringVar(&cfg.redisURL, "redis", "", "keep thread counts in Redis (`URL` redis://[:password@]host:port/db), so that\nreplicas share one thread limit; without it each process counts its own")
	fs.StringVar(&redisCluster, "redis-cluster", "", "keep thread counts in a Redis Cluster, as -redis does in one server (`URL`\nredis://[user:password@]host:port?addr=host2:port&addr=host3:port, go-redis's\ncluster URL, rediss:// for TLS); not with -redis")
	fs.BoolVar(&cfg.storeFailOpen, "store-fail-open", false, "when -redis or -redis-cluster cannot be reached, let limited requests through\nuncounted (a store_error event, logged at warn) instead of answering 503\nlimit_store_unavailable")
	fs.StringVar(&maxBody, "max-body", "8MiB", "largest request body accepted, a `size` (413 past it); at most httpguard.MaxBody\n(8MiB) is guarded")
	fs.IntVar(&cfg.maxInflight, "max-inflight", 0, "requests served at once; past it a request is refused at once with 503 in the\nprovider's error shape and retry-after (0: no cap)")
	fs.DurationVar(&cfg.readHeaderTimeout, "read-header-timeout", 10*time.Second, "time to read a request's headers")
	fs.DurationVar(&cfg.bodyTimeout, "body-timeout", time.Minute, "time to read a request's body, from its headers (408 past it; 0: none)")
	fs.DurationVar(&cfg.idleTimeout, "idle-timeout", 2*time.Minute, "how long an idle keep-alive connection stays open")
	fs.DurationVar(&cfg.shutdownTimeout, "shutdown-timeout", 2*time.Minute, "on SIGTERM, how long in-flight requests (streams included) may take to\nfinish before they are cut; keep it below the orchestrator's grace period")
	fs.StringVar(&cfg.authKeysPath, "auth-keys", "", "require a client key: a `file` of lines KEY TENANT (# comments), re-read on SIGHUP;\na request must carry one where its SDK puts the API key (Authorization: Bearer,\nx-api-key, x-goog-api-key or ?key=), else 401; the upstream gets -upstream-key-env's\nkey there instead, and thread limits count per tenant")
	fs.StringVar(&cfg.upstreamKeyEnv, "upstream-key-env", "", "the environment variable (`name`) holding -upstream's API key, sent upstream\nin place of the client's key (required with -auth-keys)")
	fs.StringVar(&mcpURL, "upstream-mcp", "", "the base `URL` of the MCP requests (a JSON-RPC body, on any path but a model's), e.g.\nhttp://mcp-server:3000; the request's path is appended to it (default: -upstream)")
	fs.StringVar(&cfg.mcpRoute.keyEnv, "upstream-mcp-key-env", "", "the environment variable (`name`) holding -upstream-mcp's key, sent as the\nclient's was (required with -auth-keys and -upstream-mcp)")
	fs.StringVar(&cfg.anthropic.keyEnv, "upstream-anthropic-key-env", "", "the environment variable (`name`) holding -upstream-anthropic's API key\n(required with -auth-keys and -upstream-anthropic)")
	fs.StringVar(&cfg.gemini.keyEnv, "upstream-gemini-key-env", "", "the environment variable (`name`) holding -upstream-gemini's API key\n(required with -auth-keys and -upstream-gemini)")
	fs.StringVar(&cfg.tlsCert, "tls-cert", "", "serve HTTPS on -listen with this certificate `file` (PEM, the chain after the\nserver's certificate) and -tls-key's key; both re-read on SIGHUP")
	fs.StringVar(&cfg.tlsKey, "tls-key", "", "the private key `file` (PEM) of -tls-cert's certificate")
	fs.StringVar(&logLvl, "log-level", "info", "`level` of the logs: debug, info, warn or error")
	fs.BoolVar(&version, "version", false, "print the version (module version or devel, VCS revision) and exit")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usageHead)
		fs.PrintDefaults()
	}

	err := parseWithEnv(fs, args, env, &cfg)
	if errors.Is(err, flag.ErrHelp) {
		fs.SetOutput(stdout)
		fs.Usage()
		return cfg, flag.ErrHelp
	}
	if err == nil && version {
		fmt.Fprintln(stdout, buildVersion())
		return cfg, errVersion
	}
	if err == nil {
		err = cfg.finishMCP(mcp, stdio, fs.Args())
	}
	if err == nil {
		err = cfg.finish(upstream, maxBody, limitExit, logLvl, unknownTools, history)
	}
	if err == nil {
		err = cfg.finishRedis(redisCluster)
	}
	if err == nil && anthropicURL != "" {
		cfg.anthropic.url, err = cfg.upstreamURL("upstream-anthropic", anthropicURL)
	}
	if err == nil && geminiURL != "" {
		cfg.gemini.url, err = cfg.upstreamURL("upstream-gemini", geminiURL)
	}
	if err == nil && mcpURL != "" {
		if !cfg.mcp {
			err = fmt.Errorf("%s needs %s on: with it off no request is MCP", cfg.src("upstream-mcp"), cfg.src("mcp"))
		} else {
			cfg.mcpRoute.url, err = cfg.upstreamURL("upstream-mcp", mcpURL)
		}
	}
	if err == nil {
		err = cfg.finishAuth(env)
	}
	if err == nil {
		err = cfg.finishTLS()
	}
	if err != nil {
		fmt.Fprintf(stderr, "toolguard-proxy: %v\n\n", err)
		fs.SetOutput(stderr)
		fs.Usage()
		return cfg, errUsage
	}
	return cfg, nil
}

// parseWithEnv sets fs's flags from args and from the environment env
// looks up, the command line winning: a first parse finds the flags the
// command line sets; each flag's variable that is set (an empty value
// included) is applied; a second parse of args puts the command line's
// values back on top. It records in cfg.env the flags whose value came
// from the environment. A variable whose value its flag refuses is an
// error naming the variable, even when the command line sets that flag
// too; TOOLGUARD_ variables that name no flag are not looked at, and
// -version is not read from the environment (TOOLGUARD_VERSION is a
// common name for something else), nor -stdio (the command it wraps
// follows it on the command line).
func parseWithEnv(fs *flag.FlagSet, args []string, env func(string) (string, bool), cfg *config) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	onCommandLine := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { onCommandLine[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if err != nil || f.Name == "version" || f.Name == "stdio" {
			return
		}
		name := envName(f.Name)
		v, ok := env(name)
		if !ok {
			return
		}
		if serr := f.Value.Set(v); serr != nil {
			err = fmt.Errorf("%s %q: not a value for -%s (%v)", name, v, f.Name, serr)
			return
		}
		if !onCommandLine[f.Name] {
			if cfg.env == nil {
				cfg.env = map[string]string{}
			}
			cfg.env[f.Name] = name
		}
	})
	if err != nil {
		return err
	}
	return fs.Parse(args)
}

// finishMCP checks -mcp, its limits and -stdio with the arguments after
// the flags: the command -stdio wraps, and nothing without -stdio.
func (cfg *config) finishMCP(mcp string, stdio bool, args []string) error {
	switch mcp {
	case "on":
		cfg.mcp = true
	case "off":
	default:
		return fmt.Errorf("%s %q: want on or off", cfg.src("mcp"), mcp)
	}
	if cfg.mcpSessionLimit < 0 || cfg.mcpThreadLimit < 0 {
		return fmt.Errorf("%s and %s must not be negative (0: no limit)", cfg.src("mcp-session-limit"), cfg.src("mcp-thread-limit"))
	}
	switch {
	case !stdio && len(args) > 0:
		return fmt.Errorf("unexpected argument %q", args[0])
	case stdio && len(args) == 0:
		return fmt.Errorf("%s needs the server's command after the flags: toolguard-proxy -stdio [flags] -- CMD ARGS…", cfg.src("stdio"))
	case stdio && !cfg.mcp:
		return fmt.Errorf("%s wraps an MCP server: it cannot be used with %s off", cfg.src("stdio"), cfg.src("mcp"))
	case stdio && cfg.mcpThreadLimit > 0:
		return fmt.Errorf("%s counts the threads of X-Toolguard-Thread, which stdio has not: use %s", cfg.src("mcp-thread-limit"), cfg.src("mcp-session-limit"))
	}
	if stdio {
		cfg.stdio = args
	}
	return nil
}

// finish checks the flags and sets the fields given as text.
func (cfg *config) finish(upstream, maxBody, limitExit, logLvl, unknownTools, history string) error {
	switch {
	case upstream == "" && cfg.stdio == nil:
		return fmt.Errorf("%s is required", cfg.src("upstream"))
	case upstream != "":
		u, err := cfg.upstreamURL("upstream", upstream)
		if err != nil {
			return err
		}
		cfg.upstream = u
	}
	if cfg.maxRetries < 0 || cfg.modelRetries < 0 {
		return fmt.Errorf("%s and %s must not be negative", cfg.src("max-retries"), cfg.src("model-retries"))
	}
	if cfg.runLimit < 0 || cfg.threadLimit < 0 {
		return fmt.Errorf("%s and %s must not be negative (0: no limit)", cfg.src("run-limit"), cfg.src("thread-limit"))
	}
	if cfg.modelCallLimit < 0 {
		return fmt.Errorf("%s must not be negative (0: no limit)", cfg.src("model-call-limit"))
	}
	if cfg.runLimit > 0 && cfg.threadLimit > 0 && cfg.runLimit > cfg.threadLimit {
		return fmt.Errorf("%s %d is larger than %s %d", cfg.src("run-limit"), cfg.runLimit, cfg.src("thread-limit"), cfg.threadLimit)
	}
	switch limitExit {
	case "continue":
		cfg.limitExit = guard.ExitContinue
	case "end":
		cfg.limitExit = guard.ExitEnd
	case "error":
		cfg.limitExit = guard.ExitError
	default:
		return fmt.Errorf("%s %q: want continue, end or error", cfg.src("limit-exit"), limitExit)
	}
	switch history {
	case "off":
	case "repair":
		p := httpguard.RepairHistory
		cfg.history = &p
	case "refuse":
		p := httpguard.RefuseHistory
		cfg.history = &p
	default:
		return fmt.Errorf("%s %q: want off, repair or refuse", cfg.src("history"), history)
	}
	switch unknownTools {
	case "pass":
		cfg.unknownTools = guard.UnknownPass
	case "reject":
		cfg.unknownTools = guard.UnknownReject
	default:
		return fmt.Errorf("%s %q: want pass or reject", cfg.src("unknown-tools"), unknownTools)
	}
	if cfg.adminListen != "" && cfg.adminListen == cfg.listen {
		return fmt.Errorf("%s %q is %s's address: the admin endpoints need a port of their own", cfg.src("admin-listen"), cfg.adminListen, cfg.src("listen"))
	}
	if cfg.maxInflight < 0 {
		return fmt.Errorf("%s must not be negative (0: no cap)", cfg.src("max-inflight"))
	}
	n, err := humanize.ParseBytes(maxBody)
	if err != nil || n < 1 || n > 1<<40 {
		return fmt.Errorf("%s %q: want a size such as 8MiB, 512KiB or 1000000", cfg.src("max-body"), maxBody)
	}
	cfg.maxBody = int64(n)
	if cfg.readHeaderTimeout <= 0 || cfg.idleTimeout <= 0 || cfg.shutdownTimeout <= 0 || cfg.bodyTimeout < 0 {
		return fmt.Errorf("%s, %s and %s must be positive, %s not negative",
			cfg.src("read-header-timeout"), cfg.src("idle-timeout"), cfg.src("shutdown-timeout"), cfg.src("body-timeout"))
	}
	if err := cfg.logLevel.UnmarshalText([]byte(strings.ToUpper(logLvl))); err != nil {
		return fmt.Errorf("%s %q: want debug, info, warn or error", cfg.src("log-level"), logLvl)
	}
	return nil
}

// finishRedis checks the limit store's flags and parses -redis-cluster's
// URL (clusterURL): -redis or -redis-cluster, not both; either needs a
// limit whose counts it keeps, and -store-fail-open needs either. A URL
// go-redis cannot read is refused naming the flag, never its password.
func (cfg *config) finishRedis(clusterURL string) error {
	if cfg.redisURL != "" && clusterURL != "" {
		return fmt.Errorf("%s and %s: give one, the limit store is either one server or a cluster", cfg.src("redis"), cfg.src("redis-cluster"))
	}
	store := "redis"
	if clusterURL != "" {
		store = "redis-cluster"
		opts, err := redis.ParseClusterURL(clusterURL)
		if err != nil {
			return fmt.Errorf("%s: %w", cfg.src("redis-cluster"), redisURLError(err))
		}
		cfg.redisCluster = opts
	}
	if (cfg.redisURL != "" || clusterURL != "") && cfg.threadLimit == 0 && cfg.modelCallLimit == 0 && cfg.mcpSessionLimit == 0 && cfg.mcpThreadLimit == 0 {
		return fmt.Errorf("%s keeps thread counts: it needs %s, %s, %s or %s", cfg.src(store), cfg.src("thread-limit"), cfg.src("model-call-limit"),
			cfg.src("mcp-session-limit"), cfg.src("mcp-thread-limit"))
	}
	if cfg.storeFailOpen && cfg.redisURL == "" && clusterURL == "" {
		return fmt.Errorf("%s needs %s or %s: without either the counts are in memory, which never fails",
			cfg.src("store-fail-open"), cfg.src("redis"), cfg.src("redis-cluster"))
	}
	return nil
}

// redisURLError is go-redis's error for a URL it cannot read, without
// the URL: net/url's errors quote the whole URL, password included,
// where go-redis's own name only the part that is wrong.
func redisURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("not a URL: %w", ue.Err)
	}
	return err
}

// storeFlag names the flag of the limit store: -redis-cluster's, else
// -redis's (or its variable).
func (cfg *config) storeFlag() string {
	if cfg.redisCluster != nil {
		return cfg.src("redis-cluster")
	}
	return cfg.src("redis")
}

// upstreamURL parses the value v of the upstream flag name: an http or
// https URL with a host and no query, to which a request's path is
// appended.
func (cfg *config) upstreamURL(name, v string) (*url.URL, error) {
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("%s %q: want an http or https URL with a host and no query", cfg.src(name), v)
	}
	return u, nil
}

// middlewares returns the transport's stages, outermost first: the
// observer, the history check (-history), the model-call limit and the tool-call limit (each only when
// its limit is given), argument validation, and model retries innermost,
// so that a retry repeats one upstream request and not a whole re-ask
// loop, and the tool-call limit sees the calls validation accepted. The
// model-call limit, outside the re-asks and retries, counts the client's
// requests, and one it refuses costs no upstream request. store keeps
// both limits' thread counts (nil: each limit's own memory).
func (cfg config) middlewares(o guard.Observer, store guard.ThreadStore, events func(ctx context.Context, e guard.Event)) []httpguard.Middleware {
	mws := []httpguard.Middleware{httpguard.Observe(o)}
	if cfg.history != nil {
		// Right after the observer, so that its events reach it; before
		// the limits and the re-asks, which then see the repaired history.
		mws = append(mws, httpguard.HistoryCheck(*cfg.history))
	}
	if cfg.modelCallLimit > 0 {
		// ModelCallLimit has no ExitContinue: a refused request cannot be
		// re-asked, so -limit-exit continue ends the loop as end does.
		exit := guard.ExitEnd
		if cfg.limitExit == guard.ExitError {
			exit = guard.ExitError
		}
		opts := []guard.LimitOption{guard.WithThreadLimit(cfg.modelCallLimit), guard.WithExitBehavior(exit), guard.WithEventHandler(events)}
		if store != nil {
			opts = append(opts, guard.WithThreadStore(store))
		}
		if cfg.storeFailOpen {
			opts = append(opts, guard.WithStoreFailOpen())
		}
		mws = append(mws, httpguard.ModelCallLimit(opts...))
	}
	if cfg.runLimit > 0 || cfg.threadLimit > 0 {
		opts := []guard.LimitOption{guard.WithExitBehavior(cfg.limitExit), guard.WithEventHandler(events)}
		if cfg.threadLimit > 0 {
			opts = append(opts, guard.WithThreadLimit(cfg.threadLimit))
		}
		if cfg.runLimit > 0 {
			opts = append(opts, guard.WithRunLimit(cfg.runLimit))
		}
		if store != nil {
			opts = append(opts, guard.WithThreadStore(store))
		}
		if cfg.storeFailOpen {
			opts = append(opts, guard.WithStoreFailOpen())
		}
		if cfg.failClosed {
			// An answer it cannot count is refused, not passed uncounted.
			opts = append(opts, guard.WithFailClosed())
		}
		mws = append(mws, httpguard.ToolCallLimit(opts...))
	}
	vopts := []guard.ValidationOption{guard.WithMaxRetries(cfg.maxRetries), guard.WithUnknownTools(cfg.unknownTools), guard.WithEventHandler(events)}
	if cfg.failClosed {
		vopts = append(vopts, guard.WithFailClosed())
	}
	mws = append(mws, httpguard.ToolArgValidation(vopts...))
	mws = append(mws, httpguard.ModelRetry(guard.WithMaxRetries(cfg.modelRetries), guard.WithEventHandler(events)))
	return mws
}

// finishAuth checks -auth-keys and the -key-env flags of the upstreams,
// reads the key file and each upstream's key from the variable env looks
// up. With -auth-keys, -upstream-key-env is required, and so is the
// -key-env of each route given (-upstream-anthropic, -upstream-gemini,
// -upstream-mcp):
// each upstream gets its own provider's key, never another's. Without
// -auth-keys none may be given. No key reaches an error.
func (cfg *config) finishAuth(env func(string) (string, bool)) error {
	routes := []struct {
		flag string
		r    *route
	}{{"upstream-anthropic", &cfg.anthropic}, {"upstream-gemini", &cfg.gemini}, {"upstream-mcp", &cfg.mcpRoute}}
	for _, rt := range routes {
		if rt.r.keyEnv != "" && rt.r.url == nil {
			return fmt.Errorf("%s needs %s: it names the key of that upstream", cfg.src(rt.flag+"-key-env"), cfg.src(rt.flag))
		}
	}
	if cfg.authKeysPath == "" {
		for _, f := range []struct{ name, value string }{
			{"upstream-key-env", cfg.upstreamKeyEnv}, {"upstream-anthropic-key-env", cfg.anthropic.keyEnv}, {"upstream-gemini-key-env", cfg.gemini.keyEnv},
			{"upstream-mcp-key-env", cfg.mcpRoute.keyEnv},
		} {
			if f.value != "" {
				return fmt.Errorf("%s needs %s: without client keys the proxy would spend the provider's key for whoever reaches it",
					cfg.src(f.name), cfg.src("auth-keys"))
			}
		}
		return nil // credentials pass through
	}
	if cfg.upstreamKeyEnv == "" {
		return fmt.Errorf("%s needs %s, the variable holding the provider's key, which the upstream gets in place of the client's",
			cfg.src("auth-keys"), cfg.src("upstream-key-env"))
	}
	key, err := cfg.providerKey(env, "upstream-key-env", cfg.upstreamKeyEnv)
	if err != nil {
		return err
	}
	cfg.upstreamKey = key
	for _, rt := range routes {
		if rt.r.url == nil {
			continue
		}
		if rt.r.keyEnv == "" {
			return fmt.Errorf("%s needs %s with %s: its upstream gets that provider's key in place of the client's, not %s's",
				cfg.src(rt.flag), cfg.src(rt.flag+"-key-env"), cfg.src("auth-keys"), cfg.src("upstream"))
		}
		if rt.r.key, err = cfg.providerKey(env, rt.flag+"-key-env", rt.r.keyEnv); err != nil {
			return err
		}
	}
	keys, err := loadKeyFile(cfg.authKeysPath)
	if err != nil {
		return fmt.Errorf("%s %s: %w", cfg.src("auth-keys"), cfg.authKeysPath, unwrapPath(err))
	}
	cfg.keys = keys
	return nil
}

// providerKey returns the provider's key from the variable name, which
// the flag flag names: set, not empty, and fit for a header.
func (cfg *config) providerKey(env func(string) (string, bool), flag, name string) (string, error) {
	key, ok := env(name)
	switch {
	case !ok:
		return "", fmt.Errorf("%s %s: the variable is not set: it must hold the provider's key", cfg.src(flag), name)
	case key == "":
		return "", fmt.Errorf("%s %s: the variable is empty: it must hold the provider's key", cfg.src(flag), name)
	case !validHeaderValue(key):
		return "", fmt.Errorf("%s %s: the variable holds a character a header cannot carry (a control character or a newline)",
			cfg.src(flag), name)
	}
	return key, nil
}

// finishTLS checks -tls-cert and -tls-key, both or neither, and loads
// the pair (loadPair).
func (cfg *config) finishTLS() error {
	switch {
	case cfg.tlsCert == "" && cfg.tlsKey == "":
		return nil // plain HTTP
	case cfg.tlsKey == "":
		return fmt.Errorf("%s needs %s, the certificate's private key", cfg.src("tls-cert"), cfg.src("tls-key"))
	case cfg.tlsCert == "":
		return fmt.Errorf("%s needs %s, the certificate of the key", cfg.src("tls-key"), cfg.src("tls-cert"))
	}
	pair, err := loadPair(cfg.src("tls-cert"), cfg.tlsCert, cfg.src("tls-key"), cfg.tlsKey)
	if err != nil {
		return err
	}
	cfg.tlsPair = pair
	return nil
}

// validHeaderValue reports whether v can be sent as a header's value as it
// is: no control characters (a newline would start another header).
func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 && c != '\t' || c == 0x7f {
			return false
		}
	}
	return strings.TrimSpace(v) == v
}

// unwrapPath drops the path an *fs.PathError repeats.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
