package middleware

import (
	"context"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/guard"
)

// Request is one model call as it travels through a middleware chain: the
// messages and the call options the caller passed to GenerateContent.
//
// A middleware that changes a request builds a new Request (or a copy) rather
// than mutating the one it received: the caller's slices are shared with it.
type Request struct {
	Messages []llms.MessageContent
	Options  []llms.CallOption

	// applied is Options applied, when the request was made by this
	// package (newRequest): its options are applied once per model call,
	// however many middlewares read them.
	applied *llms.CallOptions
}

// newRequest returns a request of messages and options whose options are
// applied once, now.
func newRequest(messages []llms.MessageContent, options []llms.CallOption) *Request {
	r := &Request{Messages: messages, Options: options}
	o := applyOptions(options)
	r.applied = &o
	return r
}

// CallOptions returns the request's options applied, in order, to a zero
// llms.CallOptions. A request the middlewares make (every request a
// wrapped model's middlewares see) has them applied once; one built
// otherwise computes them on each call.
func (r *Request) CallOptions() llms.CallOptions {
	if r.applied != nil {
		return *r.applied
	}
	return applyOptions(r.Options)
}

// with returns a request of messages with r's options (applied once, as
// r's).
func (r *Request) with(messages []llms.MessageContent) *Request {
	return &Request{Messages: messages, Options: r.Options, applied: r.applied}
}

func applyOptions(options []llms.CallOption) llms.CallOptions {
	var o llms.CallOptions
	for _, opt := range options {
		if opt != nil {
			opt(&o)
		}
	}
	return o
}

// Tools returns the tools the request offers the model: CallOptions().Tools
// followed by the deprecated CallOptions().Functions, each converted to a
// function tool. langchaingo's OpenAIFunctionsAgent still passes its tools
// through llms.WithFunctions, so a middleware that looks tools up by name
// must use Tools rather than CallOptions().Tools alone.
func (r *Request) Tools() []llms.Tool {
	return toolsOf(r.CallOptions())
}

func toolsOf(o llms.CallOptions) []llms.Tool {
	if len(o.Functions) == 0 {
		return o.Tools
	}
	tools := make([]llms.Tool, 0, len(o.Tools)+len(o.Functions))
	tools = append(tools, o.Tools...)
	for i := range o.Functions {
		fn := o.Functions[i]
		tools = append(tools, llms.Tool{Type: "function", Function: &fn})
	}
	return tools
}

// Handler performs one model call. The innermost Handler of a chain calls the
// wrapped llms.Model; a middleware's Handler calls the next one zero or more
// times.
//
// A Handler must be safe for concurrent use. It returns either a non-nil
// response or a non-nil error. The response it returns belongs to the caller,
// which may modify it ([ToolArgValidation] writes corrected arguments back into
// it); a Handler must therefore not return a response it keeps or returns
// again.
type Handler func(ctx context.Context, req *Request) (*llms.ContentResponse, error)

// Middleware wraps a [Handler] with behaviour of its own: it sees each request
// before the model and each response after it, and may call next again
// (re-invoking middlewares such as [ToolArgValidation] and [ModelRetry] do).
//
// Implementations must be safe for concurrent use: one Middleware value serves
// every call of every goroutine that uses the wrapped model, so per-call state
// lives in the Handler's call, not in the Middleware.
type Middleware interface {
	WrapModelCall(next Handler) Handler
}

// Func adapts a function to the [Middleware] interface.
type Func func(next Handler) Handler

// WrapModelCall calls f(next).
func (f Func) WrapModelCall(next Handler) Handler { return f(next) }

// Chain composes middlewares into one. Nil middlewares are skipped; Chain()
// with nothing left is the identity.
//
// The first middleware is the outermost layer of the onion: it sees the
// request first and the response last.
//
//	Chain(a, b, c).WrapModelCall(h) == a.WrapModelCall(b.WrapModelCall(c.WrapModelCall(h)))
//
//	request  ─▶ a ─▶ b ─▶ c ─▶ model
//	response ◀─ a ◀─ b ◀─ c ◀─ model
//
// Everything inside a middleware that calls next more than once runs once per
// attempt: in Chain(validation, retry), a validation re-ask goes through retry
// again, and retry's backoff starts afresh for it.
//
// The built-in middlewares go in this order:
//
//	Chain(ToolCallLimit(...), ToolArgValidation(...), ModelRetry(...))
//
// The limiter counts only the tool calls that passed validation and will
// run; validation sees every raw response; retry absorbs the transient errors
// of each attempt, re-asks included. [ModelRetry] outside [ToolArgValidation]
// would repeat a whole validation sequence for one transient error.
//
// The result forwards the optional interfaces of what it chains: when one
// of mws is an [guard.ObserverInstaller] ([Observe]'s is), so is the
// chain, and it installs each such middleware's observer in order, so an
// agent given the chain observes its runs and tool calls as it would
// given the middlewares one by one.
func Chain(mws ...Middleware) Middleware {
	kept := make([]Middleware, 0, len(mws))
	var installers []guard.ObserverInstaller
	for _, mw := range mws {
		if mw != nil {
			kept = append(kept, mw)
			if in, ok := mw.(guard.ObserverInstaller); ok {
				installers = append(installers, in)
			}
		}
	}
	if len(installers) > 0 {
		return installingChain{chain: kept, installers: installers}
	}
	return chain(kept)
}

type chain []Middleware

// installingChain is a chain holding [guard.ObserverInstaller]s.
type installingChain struct {
	chain
	installers []guard.ObserverInstaller
}

// InstallObserver installs the observers of the chained installers, the
// outermost first.
func (c installingChain) InstallObserver(ctx context.Context) context.Context {
	for _, in := range c.installers {
		ctx = in.InstallObserver(ctx)
	}
	return ctx
}

func (c chain) WrapModelCall(next Handler) Handler {
	for i := len(c) - 1; i >= 0; i-- {
		next = c[i].WrapModelCall(next)
	}
	return next
}
