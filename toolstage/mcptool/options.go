package mcptool

import (
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolguard/toolguard/toolstage"
)

// DefaultMaxResultBytes is how much of a tool result's text a [Tool] returns
// unless [WithMaxResultBytes] says otherwise: 64 KiB, about 16k tokens. A
// result lands in the transcript and is sent again with every later model
// call, so one verbose server must not be able to fill the context window.
const DefaultMaxResultBytes = 64 << 10

// Option configures [Tools] and [New].
type Option interface{ apply(*config) }

type config struct {
	maxResultBytes int
	keep           func(*mcp.Tool) bool
	toolName       func(string) string // WithToolNames; nil: toolstage.SafeToolName
}

func newConfig(opts []Option) config {
	c := config{maxResultBytes: DefaultMaxResultBytes}
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	return c
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// WithMaxResultBytes bounds the text a tool call returns (its result, or
// the text of a *[ToolError]) to n bytes, cut at a UTF-8 boundary and followed
// by one line saying how much was cut. The default is
// [DefaultMaxResultBytes]; pass math.MaxInt for no bound. n must be positive;
// WithMaxResultBytes panics otherwise.
func WithMaxResultBytes(n int) Option {
	if n <= 0 {
		panic(fmt.Sprintf("mcptool: WithMaxResultBytes(%d): the bound must be positive", n))
	}
	return optionFunc(func(c *config) { c.maxResultBytes = n })
}

// WithFilter makes [Tools] adapt only the listed tools for which keep returns
// true, for example to offer the model a few tools of a large server. The
// default is to adapt every tool. keep must not modify the tool. [New] ignores
// this option. A nil keep restores the default.
func WithFilter(keep func(t *mcp.Tool) bool) Option {
	return optionFunc(func(c *config) { c.keep = keep })
}

// WithToolNames sets the name each tool is offered to the model under: for
// a server tool named n, fn(n). The default is toolstage.SafeToolName, which
// keeps names providers accept (^[a-zA-Z0-9_-]{1,64}$) and maps the others
// to a stable, provider-safe name. Calls still reach the server under its
// own name. fn must be deterministic and give distinct tools distinct
// non-empty names ([Tools] returns an error otherwise; [New] panics on an
// empty name). WithToolNames panics if fn is nil.
func WithToolNames(fn func(name string) string) Option {
	if fn == nil {
		panic("mcptool: WithToolNames(nil)")
	}
	return optionFunc(func(c *config) { c.toolName = fn })
}

func (c config) sentName(server string) string {
	fn := c.toolName
	if fn == nil {
		fn = toolstage.SafeToolName
	}
	return fn(server)
}
