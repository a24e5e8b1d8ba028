package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/httpguard"
)

// proxyStage is the Middleware of the events the proxy reports itself.
const proxyStage = "toolguard-proxy"

// The reasons of the proxy's unguarded events: fixed texts, never content.
const (
	legacyFunctions = "a Chat Completions request offers legacy functions (no tools): its function calls are not guarded"
	webSocket       = "a WebSocket upgrade (the Realtime API): its tool calls are not guarded"
)

// unguardedRequest is the Err of an unguarded event of the proxy: why is
// one of the fixed texts above.
type unguardedRequest struct{ why string }

func (e *unguardedRequest) Error() string { return "toolguard-proxy: unguarded: " + e.why }

// watchUnguarded reports, every time, the requests the proxy passes on
// without guarding what the model calls: a WebSocket upgrade (OpenAI's
// Realtime API, whose frames httpguard does not read) and a Chat
// Completions request that offers legacy functions and no tools (httpguard
// guards tools; a function_call passes as it comes). Each is an
// guard.EventUnguarded event: counted in toolguard_events_total, logged at Warn.
// The request itself passes on unchanged.
func (s *server) watchUnguarded(next http.Handler) http.Handler {
	return &watching{s, next}
}

// watching is watchUnguarded's handler (a type of its own: see
// instrumented).
type watching struct {
	s    *server
	next http.Handler
}

func (h *watching) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.s.watch(r)
	h.next.ServeHTTP(w, r)
}

// watch reports r when the proxy passes it unguarded.
func (s *server) watch(r *http.Request) {
	switch {
	case headerHasToken(r.Header, "Upgrade", "websocket"):
		s.unguarded(r.Context(), webSocket)
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/chat/completions") &&
		r.Body != nil && r.Body != http.NoBody:
		if s.offersLegacyFunctions(r) {
			s.unguarded(r.Context(), legacyFunctions)
		}
	}
}

// offersLegacyFunctions reads r's body, up to httpguard.MaxBody (past it
// the request is not guarded, and httpguard reports it), and reports
// whether it offers functions and no tools. r's body is replaced by one
// that reads the same bytes, and a failed read's error after them, so
// that the proxy answers as it would have (413, 408).
func (s *server) offersLegacyFunctions(r *http.Request) bool {
	body := r.Body
	b, err := io.ReadAll(io.LimitReader(body, httpguard.MaxBody))
	rest := io.Reader(body)
	if err != nil {
		rest = errReader{err}
	}
	r.Body = readCloser{io.MultiReader(bytes.NewReader(b), rest), body}
	if err != nil || !bytes.Contains(b, []byte(`"functions"`)) {
		return false
	}
	var v struct {
		Functions []json.RawMessage `json:"functions"`
		Tools     []json.RawMessage `json:"tools"`
	}
	return json.Unmarshal(b, &v) == nil && len(v.Functions) > 0 && len(v.Tools) == 0
}

// unguarded reports an unguarded event for why: to the proxy's observer
// (toolguard_events_total) and its event log (at Warn).
func (s *server) unguarded(ctx context.Context, why string) {
	ctx = guard.WithEvents(guard.WithObserver(ctx, s.observer), s.logEvent)
	guard.Report(ctx, guard.Event{Kind: guard.EventUnguarded, Middleware: proxyStage, Err: &unguardedRequest{why}})
}

// headerHasToken reports whether a comma-separated header of h holds
// token, in any case.
func headerHasToken(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for t := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// readCloser reads from r and closes c.
type readCloser struct {
	io.Reader
	c io.Closer
}

func (rc readCloser) Close() error { return rc.c.Close() }

// errReader fails every read with err.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }
