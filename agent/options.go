package agent

import (
	"context"
	"fmt"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/validation"
)

// Option configures an [Agent]. Options are applied in order by [New]. An option
// given an invalid value panics when it is made, with a message naming it.
type Option func(*config)

type config struct {
	middlewares     []middleware.Middleware
	systemPrompt    string
	maxIterations   int
	maxConcurrency  int
	toolName        func(string) string                     // WithToolNames; nil: SafeToolName
	callOptions     []llms.CallOption                       // WithCallOptions
	toolMiddlewares []ToolMiddleware                        // WithToolMiddleware
	events          func(context.Context, middleware.Event) // WithEventHandler
	output          *validation.Schema                      // WithOutputSchema (output.go)
	approval        approvalConfig                          // WithApproval, WithApprovalFor, WithInterruptKey, WithCheckpointer (approval.go)
	injectors       map[string]injector                     // Inject
}

// Defaults of the options.
const (
	DefaultMaxIterations  = 10
	DefaultMaxConcurrency = 4
)

// WithMiddleware adds middlewares around every model call of the agent, in
// [middleware.Chain] order (the first is the outermost; Chain also gives the
// order to use). Each call of WithMiddleware appends to the middlewares of
// earlier calls; nil middlewares are skipped. The default is none: the model
// is called as is. A middleware that implements
// [middleware.ObserverInstaller] also observes each run and its tool calls.
func WithMiddleware(mws ...middleware.Middleware) Option {
	return func(c *config) { c.middlewares = append(c.middlewares, mws...) }
}

// WithSystemPrompt sets the system message that starts every run. The
// default, "", sends no system message.
func WithSystemPrompt(s string) Option {
	return func(c *config) { c.systemPrompt = s }
}

// WithMaxIterations sets how many model turns a run may take (default
// [DefaultMaxIterations], 10). A turn is one model call through the middleware
// chain — which may reach the model several times when a middleware re-asks
// or retries — followed by the tool calls it asked for. A run whose model
// still calls tools after n turns ends with [ErrMaxIterations]. It panics if n
// is less than 1.
func WithMaxIterations(n int) Option {
	if n < 1 {
		panic(fmt.Sprintf("agent: WithMaxIterations(%d): a run needs at least one iteration", n))
	}
	return func(c *config) { c.maxIterations = n }
}

// WithMaxConcurrency sets how many tool calls of one model response run at
// the same time (default [DefaultMaxConcurrency], 4). 1 runs them one after
// the other. Results are placed in the transcript in call order whatever the
// order they finish in. It panics if n is less than 1.
func WithMaxConcurrency(n int) Option {
	if n < 1 {
		panic(fmt.Sprintf("agent: WithMaxConcurrency(%d): at least one tool call must be able to run", n))
	}
	return func(c *config) { c.maxConcurrency = n }
}
