package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/guard/otelguard"
	"github.com/toolguard/toolguard/guard/redisstore"
	"github.com/toolguard/toolguard/mcpguard"
)

// exitStatus ends the command with a status of its own and nothing
// logged: -stdio's, the wrapped server's.
type exitStatus struct{ code int }

func (e *exitStatus) Error() string { return fmt.Sprintf("toolguard-proxy: exit status %d", e.code) }

// forwardedSignals returns the signals -stdio passes on to the server it
// wraps, which then decides when the wrapper exits (by exiting itself).
func forwardedSignals() []os.Signal {
	return []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT}
}

// runStdio is -stdio: it starts cfg.stdio's command, joins this process's
// stdin and stdout to the command's through mcpguard.Stdio, passes the
// command's stderr through to stderr, forwards signals to it, and returns
// its exit status (an *exitStatus; nil for 0). Nothing but the server's
// messages and the guard's answers is written to stdout: the logs are
// JSON on stderr. ctx's end is not the server's: a signal reaches it
// (forwarded) and it exits, which ends the session.
func runStdio(ctx context.Context, cfg config, stdin io.Reader, stdout, stderr io.Writer) error {
	log := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: cfg.logLevel}))
	ctx = context.WithoutCancel(ctx)
	tel, err := newTelemetry(ctx, otlpConfigured())
	if err != nil {
		return err
	}
	s := &server{cfg: cfg, log: log, tel: tel}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_ = tel.shutdown(sctx)
		cancel()
	}()
	var store guard.ThreadStore
	if cfg.mcpSessionLimit > 0 {
		switch {
		case cfg.redisURL != "":
			opts, err := redis.ParseURL(cfg.redisURL)
			if err != nil {
				return fmt.Errorf("toolguard-proxy: %s: %w", cfg.src("redis"), redisURLError(err))
			}
			s.redis = redis.NewClient(opts)
		case cfg.redisCluster != nil:
			s.redis = redis.NewClusterClient(cfg.redisCluster)
		}
		if s.redis != nil {
			defer s.redis.Close()
			store = quietStore{redisstore.New(s.redis)}
		}
	}
	s.observer = otelguard.New(otelguard.WithTracerProvider(tel.tracer), otelguard.WithMeterProvider(tel.meters))

	cmd := exec.Command(cfg.stdio[0], cfg.stdio[1:]...)
	cmd.Stderr = stderr
	ownProcessGroup(cmd)
	serverIn, err := cmd.StdinPipe()
	if err != nil {
		return fmt.Errorf("toolguard-proxy: -stdio: %w", err)
	}
	serverOut, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("toolguard-proxy: -stdio: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("toolguard-proxy: -stdio: starting %s: %w", cfg.stdio[0], err)
	}
	log.Info("toolguard-proxy: wrapping a stdio MCP server", "command", cfg.stdio[0], "args", len(cfg.stdio)-1, "pid", cmd.Process.Pid)

	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, forwardedSignals()...)
	defer signal.Stop(sigs)
	stopForwarding := make(chan struct{})
	defer close(stopForwarding)
	go func() {
		for {
			select {
			case sig := <-sigs:
				log.Info("toolguard-proxy: forwarding a signal to the server", "signal", sig.String())
				_ = signalServer(cmd, sig)
			case <-stopForwarding:
				return
			}
		}
	}()

	serr := mcpguard.Stdio(ctx, mcpguard.StdioPipes{ClientIn: stdin, ClientOut: stdout, ServerIn: serverIn, ServerOut: serverOut},
		cfg.mcpOptions(s.observer, store, s.logEvent)...)
	if serr != nil {
		log.Warn("toolguard-proxy: the stdio session ended with an error", "error", serr.Error())
	}
	werr := cmd.Wait()
	code := cmd.ProcessState.ExitCode()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		code = 128 + int(ws.Signal()) // as a shell reports a server a signal ended
	}
	var ee *exec.ExitError
	if werr != nil && !errors.As(werr, &ee) {
		return fmt.Errorf("toolguard-proxy: -stdio: %w", werr)
	}
	log.Info("toolguard-proxy: the stdio MCP server exited", "status", code, "command", strings.TrimSpace(cfg.stdio[0]))
	if code != 0 {
		return &exitStatus{code}
	}
	return nil
}
