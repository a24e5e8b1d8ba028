package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"

	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/httpguard"
	"github.com/toolguard/toolguard/mcpguard"
)

// MCP through the proxy: a request whose body is JSON-RPC (on any path
// but a model's), or that carries an MCP session's headers, is an MCP
// request; it goes to mcpguard's transport, beside httpguard's, which
// takes every other request. Beside, not in front: a model request is never read as
// JSON-RPC twice nor its stream watched for MCP notifications, and an MCP
// request never meets httpguard's ModelRetry, which would send a
// tools/call again after a 5xx (a tool is not a model call: running it
// twice may do twice what it does).

// mcpKey marks the context of a request sniffMCP found to be MCP.
type mcpKey struct{}

// isMCP reports whether ctx is the context of an MCP request.
func isMCP(ctx context.Context) bool {
	v, _ := ctx.Value(mcpKey{}).(bool)
	return v
}

// sniffMCP marks MCP requests (mcpKey) for the transport (mcpRouter):
// a POST whose body is a JSON-RPC 2.0 message or batch (jsonRPC), on any
// path but one httpguard guards as a model protocol's
// (httpguard.Recognises), and a request of another method (a session's
// GET stream, the DELETE that ends it) with an Mcp-Session-Id or
// Mcp-Protocol-Version header. A model's
// path stays the model guard's and a POST is judged by its body alone, so
// that a model request cannot leave httpguard's stages, its limits among
// them, by carrying a "jsonrpc" member or an MCP header. It reads at most
// mcpguard.MaxBody of a body (the rest, past -max-body's bound too, is
// read by whoever reads it next, as it came). Without -mcp on it is next
// itself.
func (s *server) sniffMCP(next http.Handler) http.Handler {
	if !s.cfg.mcp {
		return next
	}
	return &sniffing{next}
}

// sniffing is sniffMCP's handler (a type of its own: see instrumented).
type sniffing struct{ next http.Handler }

func (h *sniffing) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.next.ServeHTTP(w, sniffed(r))
}

// sniffed is r as sniffMCP passes it on: marked when it is an MCP
// request.
func sniffed(r *http.Request) *http.Request {
	var mcp bool
	switch {
	case r.Method != http.MethodPost:
		mcp = r.Header.Get("Mcp-Session-Id") != "" || r.Header.Get("Mcp-Protocol-Version") != ""
	case httpguard.Recognises(r.Method, r.URL.Path):
	case r.Body != nil && r.Body != http.NoBody:
		body := r.Body
		b, err := io.ReadAll(io.LimitReader(body, mcpguard.MaxBody+1))
		rest := io.Reader(body)
		if err != nil {
			rest = errReader{err}
		}
		r.Body = readCloser{io.MultiReader(bytes.NewReader(b), rest), body}
		mcp = err == nil && jsonRPC(b, len(b) > mcpguard.MaxBody)
	}
	if mcp {
		r = r.WithContext(context.WithValue(r.Context(), mcpKey{}, true))
	}
	return r
}

// jsonRPC reports whether body is a JSON-RPC 2.0 message (an object whose
// "jsonrpc" member is "2.0"), or a batch holding one. truncated says body
// is the start of a longer one: then it is a message when it begins with
// its "jsonrpc" member, and mcpguard passes or refuses it as too large.
// Only a body holding the word "jsonrpc" is decoded.
func jsonRPC(body []byte, truncated bool) bool {
	i := bytes.Index(body, []byte(`"jsonrpc"`))
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if i < 0 || len(trimmed) == 0 || trimmed[0] != '{' && trimmed[0] != '[' {
		return false
	}
	if truncated {
		return i < 64
	}
	type envelope struct {
		JSONRPC *string `json:"jsonrpc"`
	}
	if trimmed[0] == '[' {
		var batch []envelope
		if json.Unmarshal(body, &batch) != nil {
			return false
		}
		return slices.ContainsFunc(batch, func(m envelope) bool { return m.JSONRPC != nil && *m.JSONRPC == "2.0" })
	}
	var m envelope
	return json.Unmarshal(body, &m) == nil && m.JSONRPC != nil && *m.JSONRPC == "2.0"
}

// mcpRouter is the proxy's transport: MCP requests (isMCP) to mcpguard's,
// every other to httpguard's.
type mcpRouter struct {
	mcp, model http.RoundTripper
}

func (t mcpRouter) RoundTrip(r *http.Request) (*http.Response, error) {
	if isMCP(r.Context()) {
		return t.mcp.RoundTrip(r)
	}
	return t.model.RoundTrip(r)
}

// mcpKeys is the upstream transport of mcpguard: with -auth-keys it
// replaces the client's key of each request by the MCP upstream's, as
// rewrite does for a model request, but after mcpguard: mcpguard keeps a
// session's tools and counts its calls (-mcp-session-limit) by the
// credentials it sees, and a stateless MCP server (no Mcp-Session-Id)
// has no other mark of a session, so with the provider's key in place
// every client would share one. The client's key is only hashed there,
// never kept or logged, and never reaches the upstream: every request
// mcpguard sends (its own tools/list included) passes here.
type mcpKeys struct {
	s    *server
	next http.RoundTripper
}

func (t mcpKeys) RoundTrip(r *http.Request) (*http.Response, error) {
	if c := clientFrom(r.Context()); c != nil {
		_, key := t.s.upstreamFor(r)
		r = r.Clone(r.Context())
		replaceClientKeys(r, c, key)
	}
	return t.next.RoundTrip(r)
}

// mcpOptions returns mcpguard's options from the flags: -fail-closed,
// -mcp-session-limit and -mcp-thread-limit (the session's first, so that
// a call refused by it is counted by neither), both counted in store
// (nil: memory) with -store-fail-open; the proxy's observer (spans, the
// events counter) and its event log.
func (cfg config) mcpOptions(o guard.Observer, store guard.ThreadStore, events func(context.Context, guard.Event)) []mcpguard.Option {
	opts := []mcpguard.Option{mcpguard.WithObserver(o), mcpguard.WithEventHandler(events)}
	if cfg.failClosed {
		opts = append(opts, mcpguard.WithFailClosed())
	}
	limit := func(n int) []guard.LimitOption {
		lo := []guard.LimitOption{guard.WithThreadLimit(n)}
		if store != nil {
			lo = append(lo, guard.WithThreadStore(store))
		}
		if cfg.storeFailOpen {
			lo = append(lo, guard.WithStoreFailOpen())
		}
		return lo
	}
	if cfg.mcpSessionLimit > 0 {
		opts = append(opts, mcpguard.WithCallLimit(mcpguard.PerSession, limit(cfg.mcpSessionLimit)...))
	}
	if cfg.mcpThreadLimit > 0 {
		opts = append(opts, mcpguard.WithCallLimit(mcpguard.PerThread, limit(cfg.mcpThreadLimit)...))
	}
	return opts
}
