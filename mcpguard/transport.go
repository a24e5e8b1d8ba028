package mcpguard

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync/atomic"

	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/repair"
	"github.com/toolguard/toolguard/strip"
	"github.com/toolguard/toolguard/validation"
)

// transport is the http.RoundTripper [New] returns.
type transport struct {
	base    http.RoundTripper
	cfg     config
	tools   *toolCache
	schemas *validation.Cache
	fetches atomic.Uint64 // numbers the ids of the tools/list requests it sends

	limits         *limiter // nil without WithCallLimit
	hasThreadLimit bool     // a PerThread limit is set
}

// New returns an http.RoundTripper for a Go MCP client over Streamable
// HTTP that guards the tools/call requests it carries and passes
// everything else to base (nil: http.DefaultTransport) as it came. It is
// safe for concurrent use. The package documentation describes what it
// does; invalid options panic here, never later.
//
//	session, err := mcp.NewClient(impl, nil).Connect(ctx, &mcp.StreamableClientTransport{
//		Endpoint:   url,
//		HTTPClient: &http.Client{Transport: mcpguard.New(nil)},
//	}, nil)
func New(base http.RoundTripper, opts ...Option) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	cfg := config{strip: strip.SchemaAware, repair: repair.Coercions()}
	for _, o := range opts {
		if o != nil {
			o.apply(&cfg)
		}
	}
	t := &transport{
		base:    base,
		cfg:     cfg,
		tools:   newToolCache(),
		schemas: validation.NewCache(validation.WithDefaultDraft(validation.Draft2020)),
		limits:  newLimiter(cfg.limits, cfg.events),
	}
	for _, l := range cfg.limits {
		t.hasThreadLimit = t.hasThreadLimit || l.scope == PerThread
	}
	return t
}

// RoundTrip guards r when it is a JSON-RPC POST holding a tools/call, and
// learns the tools of the tools/list results it carries.
func (t *transport) RoundTrip(r *http.Request) (*http.Response, error) {
	if t.cfg.observer != nil {
		r = r.WithContext(guard.WithObserver(r.Context(), t.cfg.observer))
	}
	switch r.Method {
	case http.MethodPost:
		return t.post(r)
	case http.MethodGet:
		// The session's stream of server messages: watched for
		// notifications/tools/list_changed, handed on as it comes.
		return t.watch(r, keyOf(r), nil)(t.base.RoundTrip(r))
	case http.MethodDelete:
		// The client ends its session: its tools are forgotten.
		t.tools.forget(keyOf(r))
	}
	return t.base.RoundTrip(r)
}

// post reads r's body (within MaxBody) and guards it when it holds a
// tools/call.
func (t *transport) post(r *http.Request) (*http.Response, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return t.base.RoundTrip(r)
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxBody+1))
	if err != nil {
		r.Body.Close()
		return nil, fmt.Errorf("mcpguard: reading the request body: %w", err)
	}
	if len(body) > MaxBody {
		return t.tooLarge(r, body)
	}
	r.Body.Close()
	switch firstByte(body) {
	case '{':
		m, err := decodeMessage(body)
		var dup *duplicateKeyError
		switch {
		case errors.As(err, &dup):
			return t.unguardedRequest(r, body, fmt.Errorf("mcpguard: a JSON-RPC message gives %w", err))
		case err != nil: // not JSON-RPC: the server answers it
			return t.pass(r, body)
		case m.method == "tools/call" && m.id != nil:
			return t.call(r, body, m)
		case m.method == "tools/list" && m.id != nil:
			return t.list(r, body, m)
		}
	case '[':
		if hasCall, ok := batchHasCall(body); ok && hasCall {
			return t.unguardedRequest(r, body, errors.New("mcpguard: a batch holding a tools/call is not guarded"))
		}
	}
	return t.pass(r, body)
}

// tooLarge handles a request body past MaxBody, of which head was read.
func (t *transport) tooLarge(r *http.Request, head []byte) (*http.Response, error) {
	reason := fmt.Errorf("mcpguard: the request body is larger than %d bytes, the bound of what is read", MaxBody)
	t.emitFailOpen(r.Context(), guard.Event{Kind: guard.EventUnguarded, Err: reason})
	if t.cfg.failClosed {
		r.Body.Close()
		return respond(r, http.StatusRequestEntityTooLarge, rpcError(nil, -32600, reason.Error())), nil
	}
	out := r.Clone(r.Context())
	out.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(head), r.Body), r.Body}
	out.GetBody = nil
	return t.watch(r, keyOf(r), nil)(t.base.RoundTrip(out))
}

// unguardedRequest handles a request that may hold a tools/call the
// transport cannot check: refused failing closed, passed with an event
// failing open.
func (t *transport) unguardedRequest(r *http.Request, body []byte, reason error) (*http.Response, error) {
	t.emitFailOpen(r.Context(), guard.Event{Kind: guard.EventUnguarded, Err: reason})
	if t.cfg.failClosed {
		return respond(r, http.StatusBadRequest, rpcError(nil, -32600, reason.Error())), nil
	}
	return t.pass(r, body)
}

// pass forwards body, as it came, and watches the response.
func (t *transport) pass(r *http.Request, body []byte) (*http.Response, error) {
	return t.watch(r, keyOf(r), nil)(t.forward(r, body))
}

// forward sends r with body to the server.
func (t *transport) forward(r *http.Request, body []byte) (*http.Response, error) {
	out := r.Clone(r.Context())
	out.Body = io.NopCloser(bytes.NewReader(body))
	out.ContentLength = int64(len(body))
	out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return t.base.RoundTrip(out)
}

// watch returns a function that hands on a response, its stream (when it
// is one) watched for notifications/tools/list_changed, which forget k's
// tools, and each of its events also passed to also (when not nil), which
// returns the bytes to hand on in the event's place (nil: the event) and
// whether the stream ends there. also is given the event reader's error
// too: an event past MaxBody comes with errEventTooLarge and no data.
func (t *transport) watch(r *http.Request, k listKey, also func(event, error) ([]byte, bool)) func(*http.Response, error) (*http.Response, error) {
	return func(resp *http.Response, err error) (*http.Response, error) {
		if err != nil || resp.StatusCode != http.StatusOK || mediaType(resp.Header) != "text/event-stream" {
			return resp, err
		}
		resp.Body = newEventFilter(resp.Body, func(ev event, err error) ([]byte, bool) {
			if ev.data != nil && bytes.Contains(ev.data, []byte("notifications/tools/list_changed")) {
				if m, err := decodeMessage(ev.data); err == nil && m.method == "notifications/tools/list_changed" {
					t.tools.forget(k)
				}
			}
			if also != nil {
				return also(ev, err)
			}
			return nil, false
		})
		return resp, nil
	}
}

// emit reports e: to the context's observers and the handler of
// WithEventHandler, or without one as guard.Report does.
func (t *transport) emit(ctx context.Context, e guard.Event) {
	e.Middleware = Name
	if t.cfg.events == nil {
		guard.Report(ctx, e)
		return
	}
	if o := guard.ObserverFrom(ctx); o != nil {
		o.OnEvent(ctx, e)
	}
	t.cfg.events(ctx, e)
}

// emitFailOpen reports e, an event that lets something through unchecked
// unless the transport fails closed: without a handler of the transport's
// own, failing open, it is also logged to slog.Default at Warn.
func (t *transport) emitFailOpen(ctx context.Context, e guard.Event) {
	t.emit(ctx, e)
	if t.cfg.events == nil && !t.cfg.failClosed {
		e.Middleware = Name
		slog.Default().LogAttrs(ctx, slog.LevelWarn, "toolguard: "+string(e.Kind), slog.Any("event", e),
			slog.String("hint", "mcpguard.WithEventHandler routes or silences these"))
	}
}

// idText returns a JSON-RPC id as an event's CallID: a string id
// decoded, a number as written.
func idText(id []byte) string {
	var s string
	if len(id) > 0 && id[0] == '"' && json.Unmarshal(id, &s) == nil {
		return s
	}
	return string(id)
}
