package agent

import (
	"context"

	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/middleware"
)

// installers returns the middlewares among mws that install an observer
// ([guard.ObserverInstaller], as otelguard's does), in order.
func installers(mws []middleware.Middleware) []guard.ObserverInstaller {
	var list []guard.ObserverInstaller
	for _, mw := range mws {
		if in, ok := mw.(guard.ObserverInstaller); ok {
			list = append(list, in)
		}
	}
	return list
}

// observeRun installs the observers of the agent's middlewares in ctx and
// tells the run observers ctx then carries that a run starts
// ([guard.ObserveRun]). It returns the run's context and the function
// to call with its outcome.
func (a *Agent) observeRun(ctx context.Context) (context.Context, func(error)) {
	for _, in := range a.installers {
		ctx = in.InstallObserver(ctx)
	}
	return guard.ObserveRun(ctx)
}
