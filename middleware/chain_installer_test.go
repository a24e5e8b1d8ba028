package middleware_test

import (
	"context"
	"slices"
	"testing"

	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/middleware"
)

// installer is a pass-through middleware that installs an observer: it
// records its name in the context's list when asked to.
type installer struct {
	middleware.Middleware
	name string
}

type installedKey struct{}

func (in installer) InstallObserver(ctx context.Context) context.Context {
	names, _ := ctx.Value(installedKey{}).([]string)
	return context.WithValue(ctx, installedKey{}, append(slices.Clone(names), in.name))
}

func newInstaller(name string) installer {
	var none []string
	return installer{Middleware: tracer(name, &none), name: name}
}

// Chain forwards ObserverInstaller: a chain holding installers (nested
// chains included) is one, and installs theirs in order, the outermost
// first; a chain without any is not one.
func TestChainForwardsObserverInstaller(t *testing.T) {
	t.Parallel()
	var log []string
	for _, tc := range []struct {
		name  string
		chain middleware.Middleware
		want  []string // nil: not an ObserverInstaller
	}{
		{"no installer", middleware.Chain(tracer("a", &log), nil), nil},
		{"one installer", middleware.Chain(tracer("a", &log), newInstaller("otel")), []string{"otel"}},
		{"in order", middleware.Chain(newInstaller("x"), tracer("a", &log), newInstaller("y")), []string{"x", "y"}},
		{"nested", middleware.Chain(newInstaller("x"), middleware.Chain(nil, middleware.Chain(newInstaller("y")))), []string{"x", "y"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, ok := tc.chain.(guard.ObserverInstaller)
			if ok != (tc.want != nil) {
				t.Fatalf("Chain is an ObserverInstaller: %v, want %v", ok, tc.want != nil)
			}
			if !ok {
				return
			}
			got, _ := in.InstallObserver(context.Background()).Value(installedKey{}).([]string)
			if !slices.Equal(got, tc.want) {
				t.Errorf("InstallObserver installed %v, want %v", got, tc.want)
			}
		})
	}
}
