package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	// What reaches the process-wide loggers (httpguard's reports of what
	// it did not guard, go-redis's dial failures, OpenTelemetry's export
	// errors) is JSON on stderr too.
	slog.SetDefault(slog.New(slog.NewJSONHandler(os.Stderr, nil)))
	redis.SetLogger(redisLogger{slog.Default()})
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		slog.Warn("toolguard-proxy: opentelemetry", "error", err.Error())
	}))
	err := run(ctx, os.Args[1:], os.LookupEnv, os.Stdout, os.Stderr)
	var status *exitStatus
	switch {
	case errors.As(err, &status):
		os.Exit(status.code)
	case errors.Is(err, errUsage):
		os.Exit(2)
	case err != nil:
		slog.Error(err.Error())
		os.Exit(1)
	}
}

// redisLogger writes go-redis's own messages (a pool that cannot dial) to
// l at Warn.
type redisLogger struct{ l *slog.Logger }

func (r redisLogger) Printf(ctx context.Context, format string, v ...any) {
	r.l.WarnContext(ctx, "toolguard-proxy: redis: "+fmt.Sprintf(format, v...))
}
