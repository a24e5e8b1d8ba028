package main

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"go.opentelemetry.io/otel"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	// What reaches the process-wide loggers (httpguard's reports of what
	// it did not guard, OpenTelemetry's export errors) is JSON on stderr
	// too.
	slog.SetDefault(slog.New(slog.NewJSONHandler(os.Stderr, nil)))
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		slog.Warn("toolguard-proxy: opentelemetry", "error", err.Error())
	}))
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	switch {
	case errors.Is(err, errUsage):
		os.Exit(2)
	case err != nil:
		slog.Error(err.Error())
		os.Exit(1)
	}
}
