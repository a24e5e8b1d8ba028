package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/validation"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
)

// instrument counts, times and logs each proxied request: the
// http.server.* metrics and one access log line, written when the
// response (a stream to its end) is done. The line holds the method, the
// path (never the query, which may hold a key), the status, the duration,
// the bytes written, the thread and the upstream's request id: no header
// value, no body.
func (s *server) instrument(next http.Handler) http.Handler {
	return &instrumented{s, next}
}

// instrumented is instrument's handler: a type of its own rather than an
// http.HandlerFunc, whose ServeHTTP would add a frame under every
// request's (see exchange).
type instrumented struct {
	s    *server
	next http.Handler
}

func (h *instrumented) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	x := h.s.startExchange(w, r)
	defer h.s.endExchange(x)
	h.next.ServeHTTP(&x.rec, x.r)
	x.aborted = false
}

// exchange is a proxied request as instrument counts, times and logs it,
// made in one allocation. A stream's connection goroutine waits for the
// answer under instrument's frame, and every proxied request's under
// every handler's: what instrument needs is here, and its work in
// startExchange and endExchange, so that the frame stays small (a frame
// of the handlers' depth grows that goroutine's stack from 8 to 16 KiB,
// which a stream held in flight keeps for as long as it lasts).
type exchange struct {
	rec    recorder
	info   requestInfo
	r      *http.Request // the request, with info in its context
	start  time.Time
	method attribute.KeyValue
	active []metric.AddOption
	// aborted is true until the handlers return: ReverseProxy aborts a
	// cut stream with a panic.
	aborted bool
}

// startExchange counts r as active and returns its exchange.
func (s *server) startExchange(w http.ResponseWriter, r *http.Request) *exchange {
	x := &exchange{rec: recorder{ResponseWriter: w}, start: time.Now(), aborted: true}
	x.r = r.WithContext(context.WithValue(r.Context(), requestInfoKey{}, &x.info))
	x.method = requestMethod(r.Method)
	x.active = s.tel.attrs.active(x.method)
	s.tel.active.Add(x.r.Context(), 1, x.active...)
	return x
}

// endExchange records x's duration and writes its access log line.
func (s *server) endExchange(x *exchange) {
	elapsed := time.Since(x.start)
	ctx, r, rec, info := x.r.Context(), x.r, &x.rec, &x.info
	status := rec.status
	if status == 0 {
		status = http.StatusOK
	}
	s.tel.active.Add(ctx, -1, x.active...)
	var done []metric.RecordOption
	if info.tenant != "" {
		done = []metric.RecordOption{metric.WithAttributes(x.method, semconv.HTTPResponseStatusCode(status), tenantAttr.String(s.tenantLabels.label(info.tenant)))}
	} else {
		done = s.tel.attrs.done(x.method, status)
	}
	s.tel.duration.Record(ctx, elapsed.Seconds(), done...)
	attrs := []slog.Attr{
		slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.Int("status", status),
		slog.Float64("duration_ms", float64(elapsed.Microseconds())/1000), slog.Int64("bytes", rec.bytes),
	}
	if info.tenant != "" {
		attrs = append(attrs, slog.String("tenant", info.tenant))
	}
	if info.thread != "" {
		attrs = append(attrs, slog.String("thread", info.thread))
	}
	if id := rec.Header().Get("X-Request-Id"); id != "" {
		attrs = append(attrs, slog.String("upstream_request_id", id))
	} else if id := rec.Header().Get("Request-Id"); id != "" { // Anthropic's
		attrs = append(attrs, slog.String("upstream_request_id", id))
	}
	level := slog.LevelInfo
	if x.aborted {
		attrs = append(attrs, slog.Bool("aborted", true))
		level = slog.LevelWarn
	}
	s.log.LogAttrs(ctx, level, "toolguard-proxy: request", attrs...)
}

// requestInfo is what the handlers learn of a request for its log line
// and metrics: the tenant of its key (-auth-keys) and the thread the
// client named (the guard counts the tenant's: tenantThread).
type requestInfo struct {
	tenant string
	thread string
}

type requestInfoKey struct{}

// infoFrom returns the requestInfo instrument put in ctx, or nil.
func infoFrom(ctx context.Context) *requestInfo {
	info, _ := ctx.Value(requestInfoKey{}).(*requestInfo)
	return info
}

// tenantAttr is the metric attribute of a request's tenant (-auth-keys).
const tenantAttr = attribute.Key("toolguard.tenant")

// maxTenantLabels is how many tenants the metrics name: the first ones a
// server sees; every later one is recorded as otherTenant. Tenants come
// from the key file, so they are few, but a file is reloaded and grows:
// the cap keeps the series of a long-lived process bounded all the same,
// as otelguard.MaxModels does for models.
const maxTenantLabels = 100

// otherTenant stands on the metrics for the tenants past maxTenantLabels.
const otherTenant = "_OTHER"

// tenantLabels is the closed set of tenants a server's metrics name.
type tenantLabels struct {
	mu   sync.Mutex
	seen map[string]bool
}

// label returns the toolguard.tenant of tenant: itself while fewer than
// maxTenantLabels tenants have been named, else otherTenant.
func (l *tenantLabels) label(tenant string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.seen[tenant] {
		return tenant
	}
	if len(l.seen) >= maxTenantLabels {
		return otherTenant
	}
	if l.seen == nil {
		l.seen = map[string]bool{}
	}
	l.seen[tenant] = true
	return tenant
}

// requestMethod is the http.request.method of a request on the metrics:
// one of the methods of RFC 9110 and PATCH, else "_OTHER", as
// OpenTelemetry's HTTP conventions say, so that a client cannot add series
// with methods of its own.
func requestMethod(m string) attribute.KeyValue {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodDelete,
		http.MethodConnect, http.MethodOptions, http.MethodTrace, http.MethodPatch:
		return semconv.HTTPRequestMethodKey.String(m)
	}
	return semconv.HTTPRequestMethodOther
}

// recorder is the client's ResponseWriter, recording the status and the
// bytes written. Unwrap lets http.ResponseController (ReverseProxy's
// flushes, admit's read deadline) reach the connection.
type recorder struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	n, err := r.ResponseWriter.Write(p)
	r.bytes += int64(n)
	return n, err
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// logEvent logs a toolguard event without content: its kind, stage,
// attempt, tool, call id, JSON Pointer paths, wait, the thread, and of its
// error only the type, the violations' keywords and paths, a limit's
// figures, an upstream status or a store's error. The error texts of invalid calls and the feedback quote the
// model's arguments; they are never logged. The events that mean a
// protection did not hold are logged at Warn, as guard.LogEvents does.
func (s *server) logEvent(ctx context.Context, e guard.Event) {
	level := slog.LevelInfo
	switch e.Kind {
	case guard.EventSchemaError, guard.EventSchemaFallback, guard.EventGiveUp, guard.EventLimit, guard.EventMisconfigured,
		guard.EventEmptyResponse, guard.EventStoreError, guard.EventForgedArgument, guard.EventUnguarded:
		level = slog.LevelWarn
	}
	if !s.log.Enabled(ctx, level) {
		return
	}
	attrs := make([]slog.Attr, 0, 12)
	attrs = append(attrs, slog.String("kind", string(e.Kind)), slog.String("middleware", e.Middleware))
	if e.Attempt != 0 {
		attrs = append(attrs, slog.Int("attempt", e.Attempt))
	}
	if e.Tool != "" {
		attrs = append(attrs, slog.String("tool", e.Tool))
	}
	if e.CallID != "" {
		attrs = append(attrs, slog.String("call_id", e.CallID))
	}
	if len(e.Paths) > 0 {
		attrs = append(attrs, slog.Any("paths", e.Paths))
	}
	if e.Wait != 0 {
		attrs = append(attrs, slog.Duration("wait", e.Wait))
	}
	if info := infoFrom(ctx); info != nil {
		if info.tenant != "" {
			attrs = append(attrs, slog.String("tenant", info.tenant))
		}
		if info.thread != "" {
			attrs = append(attrs, slog.String("thread", info.thread))
		}
	} else if t := guard.ThreadFrom(ctx); t != "" {
		attrs = append(attrs, slog.String("thread", t))
	}
	if e.Err != nil {
		attrs = append(attrs, errorAttrs(e.Err)...)
	}
	s.log.LogAttrs(ctx, level, "toolguard: "+string(e.Kind), attrs...)
}

// maxLoggedViolations bounds the violations an event's log line lists.
const maxLoggedViolations = 10

// errorAttrs describes an event's error without quoting content.
func errorAttrs(err error) []slog.Attr {
	var (
		limit   *guard.LimitExceededError
		store   *guard.StoreError
		status  interface{ StatusCode() int }
		invalid *validation.Error
		passed  *unguardedRequest
	)
	attrs := []slog.Attr{slog.String("error_type", fmt.Sprintf("%T", err))}
	switch {
	case errors.As(err, &limit):
		attrs = append(attrs, slog.String("scope", string(limit.Scope)), slog.Int("limit", limit.Limit), slog.Int("count", limit.Count))
	case errors.As(err, &passed):
		attrs = append(attrs, slog.String("reason", passed.why))
	case errors.As(err, &store):
		attrs = append(attrs, storeErrorAttrs(store)...)
	case errors.As(err, &invalid):
		// The keyword and the JSON Pointer of each violation, never its
		// message, which quotes the value.
		vs := make([]string, 0, min(len(invalid.Violations), maxLoggedViolations))
		for _, v := range invalid.Violations[:min(len(invalid.Violations), maxLoggedViolations)] {
			path := v.Path
			if path == "" {
				path = `""` // the arguments object
			}
			vs = append(vs, v.Keyword+" at "+path)
		}
		attrs = append(attrs, slog.Any("violations", vs))
	case errors.As(err, &status):
		attrs = append(attrs, slog.Int("upstream_status", status.StatusCode()))
	}
	return attrs
}

// requestAttrs holds the attribute sets of the proxy's own instruments,
// each built once and reused by every request that has it, rather than
// sorted and hashed anew for each (attribute.NewSet), and each kept as
// the options slice Add or Record takes, so that passing it allocates no
// variadic slice either (the instruments only read it). Reads take no
// lock (sync.Map). Safe for concurrent use; the zero value is empty.
type requestAttrs struct {
	// byMethod: http.request.method's set, for active (requestMethod's
	// closed set of values); byStatus: the sets of the method and
	// http.response.status_code, for duration, at most maxStatusSets of
	// them, since statuses come from the upstream (past the cap a set is
	// built per request, as before).
	byMethod, byStatus sync.Map // string -> []metric.AddOption, statusKey -> []metric.RecordOption
	statuses           atomic.Int64
}

// maxStatusSets bounds requestAttrs.byStatus: a few methods times the
// statuses upstreams answer are far fewer.
const maxStatusSets = 256

type statusKey struct {
	method string
	status int
}

// active returns the options of method's set (requestMethod's value).
func (a *requestAttrs) active(method attribute.KeyValue) []metric.AddOption {
	k := method.Value.AsString()
	if o, ok := a.byMethod.Load(k); ok {
		return o.([]metric.AddOption)
	}
	o, _ := a.byMethod.LoadOrStore(k, []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(method))})
	return o.([]metric.AddOption)
}

// done returns the options of the set of method and status.
func (a *requestAttrs) done(method attribute.KeyValue, status int) []metric.RecordOption {
	k := statusKey{method.Value.AsString(), status}
	if o, ok := a.byStatus.Load(k); ok {
		return o.([]metric.RecordOption)
	}
	o := []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(method, semconv.HTTPResponseStatusCode(status)))}
	if a.statuses.Add(1) > maxStatusSets {
		a.statuses.Add(-1)
		return o
	}
	if prev, loaded := a.byStatus.LoadOrStore(k, o); loaded {
		a.statuses.Add(-1) // another request stored it first
		return prev.([]metric.RecordOption)
	}
	return o
}
