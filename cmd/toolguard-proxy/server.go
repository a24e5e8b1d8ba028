package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/guard/otelguard"
	"github.com/toolguard/toolguard/guard/redisstore"
	"github.com/toolguard/toolguard/httpguard"
	"github.com/toolguard/toolguard/mcpguard"
)

// maxIdleConnsPerHost keeps that many connections to the upstream open
// between requests (http.DefaultTransport keeps 2, which under a few
// hundred concurrent clients would open and close a connection per
// request).
const maxIdleConnsPerHost = 512

// run is the command: it parses args, serves until ctx is done, then
// shuts down gracefully. env looks up the environment's variables
// (os.LookupEnv). -h writes the usage and -version the version to stdout
// and return nil.
func run(ctx context.Context, args []string, env func(string) (string, bool), stdout, stderr io.Writer) error {
	cfg, err := parseConfig(args, env, stdout, stderr)
	if errors.Is(err, flag.ErrHelp) || errors.Is(err, errVersion) {
		return nil
	}
	if err != nil {
		return err
	}
	if cfg.stdio != nil {
		return runStdio(ctx, cfg, os.Stdin, stdout, stderr)
	}
	s, err := newServer(ctx, cfg, stderr)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.listen)
	if err != nil {
		return errors.Join(fmt.Errorf("toolguard-proxy: %w", err), s.close(context.Background()))
	}
	if cfg.keys != nil || cfg.tlsPair != nil {
		// SIGHUP re-reads the key file and the TLS pair. Without either
		// there is nothing to reload, and SIGHUP keeps its default effect.
		hup := make(chan os.Signal, 1)
		signal.Notify(hup, syscall.SIGHUP)
		defer signal.Stop(hup)
		go func() {
			for {
				select {
				case <-hup:
					s.reload()
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	var admin net.Listener
	if cfg.adminListen != "" {
		if admin, err = net.Listen("tcp", cfg.adminListen); err != nil {
			return errors.Join(fmt.Errorf("toolguard-proxy: %s: %w", cfg.src("admin-listen"), err), ln.Close(), s.close(context.Background()))
		}
	}
	return s.serve(ctx, ln, admin)
}

// reload re-reads what SIGHUP reloads: the key file of -auth-keys and the
// pair of -tls-cert and -tls-key, each that is given; one that fails
// keeps what it had and the other is reloaded all the same.
func (s *server) reload() {
	if s.keys.Load() != nil {
		s.reloadKeys()
	}
	if s.cert != nil {
		s.reloadCert()
	}
}

// reloadKeys re-reads the key file of -auth-keys (on SIGHUP): the new keys
// serve the requests that arrive from then on. A file that cannot be read
// or is malformed changes nothing: the keys loaded before stay, and the
// log says why (the line, never a key).
func (s *server) reloadKeys() {
	keys, err := loadKeyFile(s.cfg.authKeysPath)
	if err != nil {
		s.log.Error("toolguard-proxy: the key file was not reloaded: the keys loaded before stay",
			"file", s.cfg.authKeysPath, "error", unwrapPath(err).Error())
		return
	}
	s.keys.Store(keys)
	s.log.Info("toolguard-proxy: the key file was reloaded", "file", s.cfg.authKeysPath, "keys", len(keys.entries), "tenants", keys.count)
}

// server is the proxy: an httputil.ReverseProxy whose Transport is
// httpguard's, behind the handlers that bound bodies, read the thread
// header, count and log requests; and /healthz and /metrics.
type server struct {
	cfg   config
	log   *slog.Logger
	tel   *telemetry
	redis redis.UniversalClient // -redis's *redis.Client or -redis-cluster's *redis.ClusterClient; nil without
	store *redisstore.Store     // the limits' counts in redis; nil without
	// redisAddr names the store in the log (never a client's body): the
	// server's address, or the cluster's seed addresses.
	redisAddr string
	base      *http.Transport // the upstream connections
	proxy     *httputil.ReverseProxy
	observer  *otelguard.Observer
	inflight  atomic.Int64 // requests being served (limitInflight)
	handler   http.Handler // the traffic port's
	admin     http.Handler // -admin-listen's: /metrics, /healthz, /readyz; nil without
	draining  atomic.Bool  // after ctx is done, until serve returns: /readyz is 503

	keys         atomic.Pointer[keyring] // -auth-keys, as last loaded; nil without
	cert         *certificate            // -tls-cert and -tls-key; nil without (plain HTTP)
	tenantLabels tenantLabels
}

// newServer builds the proxy cfg describes, logging JSON to stderr.
func newServer(ctx context.Context, cfg config, stderr io.Writer) (*server, error) {
	log := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: cfg.logLevel}))
	tel, err := newTelemetry(ctx, otlpConfigured())
	if err != nil {
		return nil, err
	}
	s := &server{cfg: cfg, log: log, tel: tel}
	if cfg.keys != nil {
		s.keys.Store(cfg.keys)
	}
	if cfg.tlsPair != nil {
		s.cert = newCertificate(cfg.tlsCert, cfg.tlsKey, cfg.tlsPair)
	}
	var store guard.ThreadStore
	switch {
	case cfg.redisURL != "":
		opts, err := redis.ParseURL(cfg.redisURL)
		if err != nil {
			// go-redis's message names the part that is wrong; a URL net/url
			// cannot parse is not repeated (redisURLError), password and all.
			return nil, errors.Join(fmt.Errorf("toolguard-proxy: %s: %w", cfg.src("redis"), redisURLError(err)), tel.shutdown(ctx))
		}
		s.redis, s.redisAddr = redis.NewClient(opts), opts.Addr
	case cfg.redisCluster != nil:
		// Every thread's keys share a hash tag, so each script runs on the
		// one master serving the thread's slot (package redisstore).
		s.redis, s.redisAddr = redis.NewClusterClient(cfg.redisCluster), strings.Join(cfg.redisCluster.Addrs, ",")
	}
	if s.redis != nil {
		s.store = redisstore.New(s.redis)
		store = quietStore{s.store}
		if err := s.pingRedis(ctx, 5*time.Second, ""); err != nil {
			msg := "toolguard-proxy: redis is not reachable; limited requests are answered 503 until it is"
			if cfg.storeFailOpen {
				msg = "toolguard-proxy: redis is not reachable; limited requests pass uncounted until it is (-store-fail-open)"
			}
			log.Warn(msg, "redis", s.redisAddr, "error", err.Error())
		}
	}
	s.base = http.DefaultTransport.(*http.Transport).Clone()
	s.base.MaxIdleConnsPerHost = maxIdleConnsPerHost
	s.observer = otelguard.New(otelguard.WithTracerProvider(tel.tracer), otelguard.WithMeterProvider(tel.meters))
	proxy := &httputil.ReverseProxy{
		Rewrite:      s.rewrite,
		Transport:    s.transport(store),
		ErrorHandler: s.proxyError,
		ErrorLog:     slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		BufferPool:   &copyBuffers{},
	}
	s.proxy = proxy
	// The operator's endpoints are on -admin-listen's port, and then only
	// there: a client of the traffic port reaches the upstream alone.
	// Without -admin-listen they stay on the traffic port.
	ops := http.NewServeMux()
	ops.HandleFunc("GET /healthz", s.healthz)
	ops.HandleFunc("GET /readyz", s.readyz)
	metrics := tel.metrics
	if cfg.keys != nil && cfg.adminListen == "" {
		// On the traffic port of a shared proxy the metrics, tenants'
		// names among them, are for holders of a key only; the probes
		// stay open.
		metrics = s.authenticate(metrics)
	}
	ops.Handle("GET /metrics", metrics)
	traffic := s.instrument(s.authenticate(s.limitInflight(s.admit(s.sniffMCP(s.checkStore(s.watchUnguarded(proxy)))))))
	if cfg.adminListen != "" {
		s.admin, s.handler = ops, traffic
	} else {
		ops.Handle("/", traffic)
		s.handler = ops
	}
	return s, nil
}

// transport is the proxy's transport to the upstreams: httpguard's, and
// beside it, with -mcp on, mcpguard's for the MCP requests (mcpRouter),
// both over the same connections; store keeps the limits' counts (nil:
// memory).
func (s *server) transport(store guard.ThreadStore) http.RoundTripper {
	model := httpguard.New(quietErrors{s.base}, s.cfg.middlewares(s.observer, store, s.logEvent)...)
	if !s.cfg.mcp {
		return model
	}
	return mcpRouter{mcp: mcpguard.New(mcpKeys{s, quietErrors{s.base}}, s.cfg.mcpOptions(s.observer, store, s.logEvent)...), model: model}
}

// serve serves on ln (HTTPS with -tls-cert, else plain HTTP), and the
// admin endpoints on admin (-admin-listen; nil without; plain HTTP), until
// ctx is done; then it drains: /readyz answers 503,
// ln stops accepting connections, and the requests in flight, streams
// included, get up to -shutdown-timeout to finish before they are cut;
// the admin port closes last.
func (s *server) serve(ctx context.Context, ln, admin net.Listener) error {
	var (
		adminSrv    *http.Server
		adminServed = make(chan error, 1)
	)
	if admin != nil {
		adminSrv = &http.Server{
			Handler:           s.admin,
			ReadHeaderTimeout: s.cfg.readHeaderTimeout,
			IdleTimeout:       s.cfg.idleTimeout,
			ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		}
		s.log.Info("toolguard-proxy: admin endpoints listening", "addr", admin.Addr().String())
		go func() { adminServed <- adminSrv.Serve(admin) }()
	}
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: s.cfg.readHeaderTimeout,
		IdleTimeout:       s.cfg.idleTimeout,
		// No ReadTimeout or WriteTimeout: a connection's deadline covers
		// the whole response, which would cut a stream that outlives it.
		// The body has a deadline of its own (admit).
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	attrs := []any{"addr", ln.Addr().String(), "upstream", s.cfg.upstream.Redacted()}
	if u := s.cfg.anthropic.url; u != nil {
		attrs = append(attrs, "upstream_anthropic", u.Redacted())
	}
	if u := s.cfg.gemini.url; u != nil {
		attrs = append(attrs, "upstream_gemini", u.Redacted())
	}
	if u := s.cfg.mcpRoute.url; u != nil {
		attrs = append(attrs, "upstream_mcp", u.Redacted())
	}
	if keys := s.keys.Load(); keys != nil {
		attrs = append(attrs, "keys", len(keys.entries), "tenants", keys.count)
	}
	if s.cert != nil {
		// The handshake is made by the connection's first read, on the
		// connection's own goroutine: Serve never waits on a client.
		ln = s.cert.listen(ln)
		attrs = append(attrs, slog.GroupAttrs("tls", certAttrs(s.cert.cur.Load())...))
	}
	s.log.Info("toolguard-proxy: listening", attrs...)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	var err error
	select {
	case err = <-served:
	case err = <-adminServed:
		err = fmt.Errorf("toolguard-proxy: admin endpoints: %w", err)
		_ = srv.Close()
		<-served
		adminSrv = nil
	case <-ctx.Done():
		s.draining.Store(true)
		s.log.Info("toolguard-proxy: shutting down: finishing the requests in flight", "timeout", s.cfg.shutdownTimeout.String())
		sctx, cancel := context.WithTimeout(context.Background(), s.cfg.shutdownTimeout)
		err = srv.Shutdown(sctx)
		cancel()
		if err != nil {
			err = fmt.Errorf("toolguard-proxy: shutdown: requests still in flight after %s were cut: %w", s.cfg.shutdownTimeout, err)
			_ = srv.Close()
		}
		<-served // http.ErrServerClosed
	}
	if adminSrv != nil {
		actx, cancel := context.WithTimeout(context.Background(), time.Second)
		if adminSrv.Shutdown(actx) != nil {
			_ = adminSrv.Close() // a scrape or a probe still running
		}
		cancel()
		<-adminServed
	}
	cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = errors.Join(err, s.close(cctx))
	if err == nil {
		s.log.Info("toolguard-proxy: stopped")
	}
	return err
}

// close releases what newServer took: the upstream connections, the Redis
// client, and the telemetry, whose last spans it exports.
func (s *server) close(ctx context.Context) error {
	s.base.CloseIdleConnections()
	var errs []error
	if s.redis != nil {
		errs = append(errs, s.redis.Close())
	}
	errs = append(errs, s.tel.shutdown(ctx))
	return errors.Join(errs...)
}

// copyBufferSize is the size of the buffers the proxy copies answers
// through: httputil.ReverseProxy's own (it allocates one per answer
// without a BufferPool).
const copyBufferSize = 32 << 10

// copyBuffers is the proxy's httputil.BufferPool: the buffer each answer
// is copied to the client through is reused by the next answer rather
// than allocated (32 KiB a request, the largest allocation of a
// proxied request). A buffer holds the bytes of the answer it last
// copied until the next copy overwrites them; none leaves the process.
// Safe for concurrent use.
type copyBuffers struct{ pool sync.Pool }

// Get returns a buffer of copyBufferSize bytes.
func (c *copyBuffers) Get() []byte {
	if b, ok := c.pool.Get().(*[]byte); ok {
		return *b
	}
	return make([]byte, copyBufferSize)
}

// Put keeps b for a later Get; a buffer of another size is dropped.
func (c *copyBuffers) Put(b []byte) {
	if len(b) != copyBufferSize {
		return
	}
	c.pool.Put(&b)
}
