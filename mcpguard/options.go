package mcpguard

import (
	"context"
	"fmt"

	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/repair"
	"github.com/toolguard/toolguard/strip"
)

// MaxBody bounds every body the transport reads (8 MiB): a request, a
// response it checks, one server-sent event, and the pages of a tools/list
// it fetches, together. Nothing is buffered past it.
const MaxBody = 8 << 20

// Name is the name the transport's events carry in
// [guard.Event].Middleware.
const Name = "mcpguard"

// EventInvalidResult: a tool's result does not match its outputSchema
// (structuredContent breaks it, or is missing while the tool declares
// one). Err is the *validation.Error; Tool and CallID (the JSON-RPC id)
// name the call. The result was replaced by an isError result
// ([RefuseOutput]) or passed on as it came ([PassOutput]).
const EventInvalidResult guard.EventKind = "invalid_result"

// OutputPolicy says what the transport does with a tool result whose
// structuredContent does not match the tool's outputSchema
// ([WithOutputViolations]).
type OutputPolicy int

const (
	// RefuseOutput replaces the result with an isError result that names
	// the violations, so the model never reads data its tool promised not
	// to send. This is the default.
	RefuseOutput OutputPolicy = iota
	// PassOutput hands the result on as the server sent it; the violation
	// is still reported ([EventInvalidResult]).
	PassOutput
)

// Option configures [New].
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	failClosed bool
	output     OutputPolicy
	strip      strip.Mode
	repair     repair.Repairer
	events     func(context.Context, guard.Event)
	limits     []limitSpec
	observer   guard.Observer
	policy     func(context.Context, ToolInfo) error
	trusted    []string // servers whose annotations a policy reads, as serverOf writes them
}

// WithEventHandler sends the transport's events to fn (after the
// observers the request's context carries, [guard.WithObserver]) instead
// of to the context's handler ([guard.WithEvents]). fn is called on the
// goroutine of the request, concurrently when the client is used
// concurrently, and must not block.
//
// Without it, events go to the context ([guard.Report]), and those that
// mean a call passed unchecked (a [guard.EventUnguarded] or a
// [guard.EventSchemaError] failing open) are also logged to slog.Default
// at Warn, so that failing open is never silent.
func WithEventHandler(fn func(ctx context.Context, e guard.Event)) Option {
	return optionFunc(func(c *config) { c.events = fn })
}

// WithFailClosed makes the transport refuse what it cannot check instead
// of passing it with an event: a call of a tool whose input or output
// schema does not compile, a call whose tool's schema could not be
// fetched, a call of a tool the server does not list, and a result it was
// to check but could not read (each answered with an isError result that
// says why; the call never reaches the server); a request body past
// [MaxBody] (HTTP 413), and a message that gives a key twice or a batch
// holding a tools/call (HTTP 400), each with a JSON-RPC error.
func WithFailClosed() Option {
	return optionFunc(func(c *config) { c.failClosed = true })
}

// WithOutputViolations sets what happens to a result whose
// structuredContent does not match its tool's outputSchema (default
// [RefuseOutput]).
func WithOutputViolations(p OutputPolicy) Option {
	if p != RefuseOutput && p != PassOutput {
		panic(fmt.Sprintf("mcpguard: WithOutputViolations(%d): unknown policy", int(p)))
	}
	return optionFunc(func(c *config) { c.output = p })
}

// WithStripEmpty sets how a call's empty values (null, {}, []) are removed
// (default [strip.SchemaAware]: only from a call that fails, only where
// removing them fixes violations), as [guard.WithStripEmpty] does for the
// model stage.
func WithStripEmpty(mode strip.Mode) Option {
	switch mode {
	case strip.Off, strip.Recursive, strip.SchemaAware:
	default:
		panic(fmt.Sprintf("mcpguard: WithStripEmpty(%v): unknown mode", mode))
	}
	return optionFunc(func(c *config) { c.strip = mode })
}

// WithRepair sets how the arguments of a failing call are repaired before
// they are refused (default [repair.Coercions]: "5" for an integer, "true"
// for a boolean, a list sent as a string), as [guard.WithRepair] does for
// the model stage; [repair.None] turns repair off. r must not be nil.
func WithRepair(r repair.Repairer) Option {
	if r == nil {
		panic("mcpguard: WithRepair(nil)")
	}
	return optionFunc(func(c *config) { c.repair = r })
}
