package mcpguard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/toolguard/toolguard/guard"
)

// ToolInfo is what a policy ([WithToolPolicy]) knows of the tool a call
// names.
type ToolInfo struct {
	// Name is the tool's name, as the call gives it.
	Name string
	// Server is the endpoint the call goes to: its URL without query and
	// fragment (an empty path written "/").
	Server string
	// InputSchema and OutputSchema are the schemas the server lists for
	// the tool, as it sent them; nil when it declares none, or when the
	// tool is not known (a tool the server does not list, passed failing
	// open, or tools that could not be listed).
	InputSchema, OutputSchema json.RawMessage
	// Annotations are the tool's annotations, only when the server is
	// trusted ([WithTrustedServers]) and lists them; nil otherwise. The
	// MCP specification says a client must consider annotations
	// untrusted unless they come from a trusted server: a server that
	// calls its "delete_everything" tool read-only is only making a
	// claim.
	Annotations *Annotations
}

// Annotations are the hints a tool's annotations give (MCP
// ToolAnnotations), each nil when the server does not send it.
type Annotations struct {
	Title           string `json:"title,omitempty"`
	ReadOnlyHint    *bool  `json:"readOnlyHint,omitempty"`    // the tool does not modify its environment (default false)
	DestructiveHint *bool  `json:"destructiveHint,omitempty"` // an update may be destructive (default true; meaningful when not read-only)
	IdempotentHint  *bool  `json:"idempotentHint,omitempty"`  // calling it again with the same arguments has no further effect (default false)
	OpenWorldHint   *bool  `json:"openWorldHint,omitempty"`   // it reaches an open world of outside entities (default true)
}

// Destructive reports whether a call of the tool may be destructive, with
// the defaults of the MCP specification: yes, unless trusted annotations
// say it is read-only (readOnlyHint true) or not destructive
// (destructiveHint false). A tool without trusted annotations may be.
func (t ToolInfo) Destructive() bool {
	a := t.Annotations
	switch {
	case a == nil:
		return true
	case a.ReadOnlyHint != nil && *a.ReadOnlyHint:
		return false
	case a.DestructiveHint != nil:
		return *a.DestructiveHint
	}
	return true
}

// ErrDestructive is the error of [RefuseDestructive] for a tool that may
// be destructive.
var ErrDestructive = errors.New("mcpguard: the tool may be destructive")

// RefuseDestructive returns a policy ([WithToolPolicy]) that refuses every
// call of a tool that may be destructive ([ToolInfo.Destructive]): all
// calls but those of tools a trusted server ([WithTrustedServers])
// annotates read-only or not destructive. On a server that is not trusted
// it refuses every call, since nothing the server says can vouch for a
// tool.
func RefuseDestructive() func(context.Context, ToolInfo) error {
	return func(_ context.Context, t ToolInfo) error {
		if t.Destructive() {
			return ErrDestructive
		}
		return nil
	}
}

// WithToolPolicy makes the transport ask fn before it forwards a
// tools/call whose arguments passed (or that passes unchecked, failing
// open): an error refuses the call, which is answered with an isError
// result holding the error's text, reported in a [guard.EventToolDenied]
// and never counted by a limit ([WithCallLimit]). fn is called on the
// goroutine of the request, concurrently when the client is used
// concurrently. The default is no policy.
func WithToolPolicy(fn func(ctx context.Context, tool ToolInfo) error) Option {
	if fn == nil {
		panic("mcpguard: WithToolPolicy(nil)")
	}
	return optionFunc(func(c *config) { c.policy = fn })
}

// WithTrustedServers names the servers whose tool annotations a policy
// may read ([ToolInfo].Annotations): each an absolute http or https URL.
// A server is trusted when its endpoint URL, without query and fragment,
// equals one of urls, or lies under one that ends in "/"
// ("https://mcp.example.com/" trusts every endpoint of that host). The
// default is none: a server's annotations are its own claims about its
// tools, which the MCP specification says a client must treat as
// untrusted unless the server is. An invalid URL panics here.
func WithTrustedServers(urls ...string) Option {
	var trusted []string
	for _, s := range urls {
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			panic(fmt.Sprintf("mcpguard: WithTrustedServers(%q): not an absolute http or https URL", s))
		}
		trusted = append(trusted, serverOf(u))
	}
	return optionFunc(func(c *config) { c.trusted = append(c.trusted, trusted...) })
}

// serverOf returns u without query and fragment, its scheme and host
// lower-cased, an empty path as "/".
func serverOf(u *url.URL) string {
	v := *u
	v.RawQuery, v.ForceQuery, v.Fragment, v.RawFragment = "", false, "", ""
	v.Scheme, v.Host = strings.ToLower(v.Scheme), strings.ToLower(v.Host)
	if v.Path == "" {
		v.Path, v.RawPath = "/", ""
	}
	return v.String()
}

// trusts reports whether server is trusted.
func (c *config) trusts(server string) bool {
	for _, t := range c.trusted {
		if server == t || strings.HasSuffix(t, "/") && strings.HasPrefix(server, t) {
			return true
		}
	}
	return false
}

// toolPolicy asks the policy about the call of tool name (ts nil when the
// transport does not know it), and returns the text and cause of the
// isError result that refuses it, or a nil cause.
func (t *transport) toolPolicy(r *http.Request, ts *toolSchema, name, id string) (string, error) {
	if t.cfg.policy == nil {
		return "", nil
	}
	info := ToolInfo{Name: name, Server: serverOf(r.URL)}
	if ts != nil {
		info.InputSchema, info.OutputSchema = ts.input, ts.output
		if ts.annotations != nil && t.cfg.trusts(info.Server) {
			var a Annotations
			if json.Unmarshal(ts.annotations, &a) == nil {
				info.Annotations = &a
			}
		}
	}
	err := t.cfg.policy(r.Context(), info)
	if err == nil {
		return "", nil
	}
	t.emit(r.Context(), guard.Event{Kind: guard.EventToolDenied, Tool: name, CallID: id, Err: err})
	return notExecutedText(name, err), err
}
