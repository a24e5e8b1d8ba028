package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"sync"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/httpguard"
	"go.opentelemetry.io/otel/propagation"
)

// threadHeader names the conversation thread of a request: the thread
// limit counts per thread. It is removed before the request goes upstream.
const threadHeader = "X-Toolguard-Thread"

// maxThreadID bounds the thread header's value.
const maxThreadID = 256

// rewrite makes the upstream request: the client's, sent to the upstream
// of its provider (upstreamFor: -upstream-anthropic, -upstream-gemini,
// else -upstream) with the thread header removed. Accept-Encoding is removed too, so that
// the upstream connection negotiates compression itself and hands
// httpguard a body it can read: a client's "gzip, br" passed on would get
// an encoded answer the guard would have to decode first.
//
// With -auth-keys, the client's key is replaced by that upstream's
// provider key (replaceClientKeys): here for a model request, by mcpKeys
// for an MCP request.
func (s *server) rewrite(pr *httputil.ProxyRequest) {
	target, key := s.upstreamFor(pr.In)
	pr.SetURL(target)
	pr.Out.Header.Del(threadHeader)
	pr.Out.Header.Del("Accept-Encoding")
	if c := clientFrom(pr.In.Context()); c != nil && !isMCP(pr.In.Context()) {
		// An MCP request's key is replaced last, by mcpKeys, so that
		// mcpguard tells one client's session from another's.
		replaceClientKeys(pr.Out, c, key)
	}
}

// admit prepares a client request for the proxy: the trace context of its
// traceparent header, the thread of its X-Toolguard-Thread header, and its
// body bounded by -max-body and -body-timeout. It refuses a body declared
// larger than -max-body (413) and a thread header that is not one id of at
// most maxThreadID bytes (400). With -auth-keys the thread the guard
// counts is the tenant's (tenantThread): tenants choose their thread ids
// without meeting each other's.
func (s *server) admit(next http.Handler) http.Handler {
	return &admitted{s, next}
}

// admitted is admit's handler (a type of its own: see instrumented).
type admitted struct {
	s    *server
	next http.Handler
}

func (h *admitted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r = h.s.admission(w, r); r != nil {
		h.next.ServeHTTP(w, r)
	}
}

// admission is r as admit passes it on, or nil when admit answered it.
func (s *server) admission(w http.ResponseWriter, r *http.Request) *http.Request {
	ctx := s.tel.propagator.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
	if ids := r.Header.Values(threadHeader); len(ids) > 0 {
		if len(ids) > 1 || ids[0] == "" || len(ids[0]) > maxThreadID {
			writeError(w, r, http.StatusBadRequest, "invalid_request_error",
				"toolguard-proxy: X-Toolguard-Thread must be one non-empty id of at most 256 bytes")
			return nil
		}
		thread := ids[0]
		if info := infoFrom(ctx); info != nil {
			info.thread = thread
		}
		if c := clientFrom(ctx); c != nil {
			thread = tenantThread(c.tenant, thread)
		}
		ctx = guard.WithThread(ctx, thread)
	}
	if r.ContentLength > s.cfg.maxBody {
		writeError(w, r, http.StatusRequestEntityTooLarge, "request_too_large", s.tooLarge())
		return nil
	}
	if r.Body != nil && r.Body != http.NoBody {
		body := &requestBody{rc: http.MaxBytesReader(w, r.Body, s.cfg.maxBody)}
		if s.cfg.bodyTimeout > 0 {
			// Cleared by the server when the body has been read (it
			// then waits for the client's next request).
			_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(s.cfg.bodyTimeout))
		}
		r.Body = body
		ctx = context.WithValue(ctx, bodyKey{}, body)
	}
	return r.WithContext(ctx)
}

func (s *server) tooLarge() string {
	return "toolguard-proxy: the request body is larger than -max-body (" + humanize.IBytes(uint64(s.cfg.maxBody)) + ")"
}

// requestBody is a client's request body that remembers why reading it
// failed, so that the proxy can answer 413 or 408 rather than 502.
type requestBody struct {
	rc   io.ReadCloser
	mu   sync.Mutex
	fail error
}

type bodyKey struct{}

func (b *requestBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		b.mu.Lock()
		if b.fail == nil {
			b.fail = err
		}
		b.mu.Unlock()
	}
	return n, err
}

func (b *requestBody) Close() error { return b.rc.Close() }

func (b *requestBody) err() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.fail
}

// proxyError answers a request the proxy could not complete: 413 for a
// body past -max-body, 408 for a body not received within -body-timeout,
// 502 when the upstream cannot be reached, saying only the kind of
// failure (upstreamFailure), never an address. A client that went away gets
// nothing (logged as 499). The error is logged with the path, never the
// URL, whose query may hold a key (Gemini's ?key=); the transports'
// errors do not quote it.
func (s *server) proxyError(w http.ResponseWriter, r *http.Request, err error) {
	var bodyErr error
	if b, _ := r.Context().Value(bodyKey{}).(*requestBody); b != nil {
		bodyErr = b.err()
	}
	var tooLarge *http.MaxBytesError
	var timeout net.Error
	switch {
	case errors.As(err, &tooLarge) || errors.As(bodyErr, &tooLarge):
		writeError(w, r, http.StatusRequestEntityTooLarge, "request_too_large", s.tooLarge())
	case errors.As(bodyErr, &timeout) && timeout.Timeout():
		writeError(w, r, http.StatusRequestTimeout, "request_timeout", "toolguard-proxy: the request body was not received within -body-timeout")
	case r.Context().Err() != nil:
		w.WriteHeader(499) // nginx's "client closed request", for the log and metrics only
	default:
		detail := err // the log may name the upstream's address, the client's answer not
		var uf *upstreamFailure
		if errors.As(err, &uf) {
			detail = uf.err
		}
		s.log.LogAttrs(r.Context(), slog.LevelWarn, "toolguard-proxy: upstream request failed",
			slog.String("path", r.URL.Path), slog.String("error", detail.Error()))
		msg := "toolguard-proxy: the upstream could not be reached"
		if uf != nil {
			msg += ": " + uf.kind
		}
		writeError(w, r, http.StatusBadGateway, "upstream_unreachable", msg)
	}
}

// writeError answers with status in the error shape of the protocol r's
// path names (httpguard.ErrorResponse: Anthropic's, Google's, else
// OpenAI's), so that the client's SDK surfaces it as an API error;
// x-should-retry: false except for 408 and 502, which an SDK may retry.
func writeError(w http.ResponseWriter, r *http.Request, status int, typ, msg string) {
	resp := httpguard.ErrorResponse(r, status, typ, msg)
	defer resp.Body.Close()
	h := w.Header()
	for k, v := range resp.Header {
		h[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}
