package httpguard

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/retry"
)

// Transport is an http.RoundTripper that guards the tool calls of the LLM
// requests it carries (see the package documentation) and passes every
// other request to its base untouched. It is safe for concurrent use.
type Transport struct {
	base    http.RoundTripper
	handler guard.Handler[*request, *response]
	guards  bool
	// reported holds what the transport has logged (report), so that each
	// is logged once: a reportKey per host, path, kind and message, at
	// most maxReported of them; remembered counts them.
	reported   sync.Map
	remembered atomic.Int64
	seed       maphash.Seed // of the reportKeys, made per Transport
	// chunks are the client streams' chunks their clients have read.
	chunks chunkPool
	// readers are the buffered readers of the streams read.
	readers readerPool
}

// New returns a Transport that sends the requests it recognises through
// mws, in [guard.Chain] order (the first is the outermost), and makes them
// with base; base nil means http.DefaultTransport. Zero Middlewares are
// skipped; with none, every request passes through untouched. base must
// not modify the requests it is given, as http.RoundTripper requires: an
// upstream request shares the client's request's headers and URL.
//
//	client := openai.NewClient(option.WithHTTPClient(&http.Client{
//		Transport: httpguard.New(nil, httpguard.ToolArgValidation(), httpguard.ModelRetry()),
//	}))
func New(base http.RoundTripper, mws ...Middleware) *Transport {
	if base == nil {
		base = http.DefaultTransport
	}
	t := &Transport{base: base, seed: maphash.MakeSeed()}
	stages := make([]guard.Middleware[*request, *response], 0, len(mws))
	for _, m := range mws {
		if m.m != nil {
			stages = append(stages, m.m)
		}
	}
	t.guards = len(stages) > 0
	t.handler = guard.Chain(stages...)(t.send)
	return t
}

// RoundTrip guards r when it is a request of a protocol the transport
// speaks, else passes it to the base transport untouched. It follows
// http.RoundTripper's rules: r is not modified (upstream requests are
// clones with a fresh body), and r's body is closed.
func (t *Transport) RoundTrip(r *http.Request) (*http.Response, error) {
	proto := recognise(r.Method, r.URL.Path)
	if proto == nil || !t.guards || r.Body == nil || r.Body == http.NoBody {
		if proto == nil && t.guards {
			return t.passUnknown(r)
		}
		return t.base.RoundTrip(r)
	}
	body, err := readSized(r.Body, r.ContentLength, MaxBody)
	if errors.Is(err, errTooLarge) {
		t.report(r, "unguarded", "the request body is larger than MaxBody", nil)
		return t.base.RoundTrip(withBody(r, readCloser{io.MultiReader(bytes.NewReader(body), r.Body), r.Body}, r.ContentLength))
	}
	r.Body.Close()
	if err != nil {
		return nil, err
	}
	wire, err := proto.parseRequest(r.URL.Path, body)
	if err != nil {
		if !offersTools(body) {
			return t.base.RoundTrip(withBytes(r, body))
		}
		// Its answer's calls cannot be checked: the stages refuse the
		// answer or pass it with an event, as for an answer they cannot
		// read.
		return t.roundTripUnread(r, &request{proto: proto, body: body, http: r, unread: err})
	}
	req := &request{proto: proto, wire: wire, body: body, http: r}
	if wire.Stream && len(wire.Tools) > 0 {
		return t.roundTripStream(r, req)
	}
	// A stream that offers no tools has no calls to hold: it goes to the
	// client as the upstream sends it, with no gate and no bound.
	req.direct = wire.Stream
	return t.roundTripUnread(r, req)
}

// roundTripUnread runs the logical call of a sync request, of a request
// that could not be read (whose answer is handed on unread), or of a
// stream that offers no tools (handed on as it comes).
func (t *Transport) roundTripUnread(r *http.Request, req *request) (*http.Response, error) {
	resp, err := t.handler(signedContext(r.Context(), req), req)
	if err != nil {
		return t.failure(r, req.proto, err)
	}
	if resp.pass != nil {
		resp.pass.Request = r
		return resp.pass, nil
	}
	if req.direct {
		// A stage's stand-in answer (a model-call limit's) to a stream.
		return t.streamAnswer(r, req.proto, resp)
	}
	return syncResponse(r, resp), nil
}

// streamAnswer streams resp, an answer a stage made, to a client that
// asked for a stream, as the root gate streams a stand-in answer.
func (t *Transport) streamAnswer(r *http.Request, p wireProtocol, resp *response) (*http.Response, error) {
	ctx, cancel := context.WithCancel(r.Context())
	client := newClientStream(p, cancel)
	root := newGateSink(p, nil, client)
	ended := make(chan roundTrip, 1)
	go func() {
		defer cancel()
		_, err := root.Deliver(ctx, resp)
		if err == nil {
			err = client.flush()
		}
		if err != nil && !client.isCommitted() {
			client.end(errNotStreamed)
			ended <- roundTrip{nil, err}
			return
		}
		client.end(err)
	}()
	select {
	case <-client.committed:
		return client.response(r), nil
	case rt := <-ended:
		return rt.resp, rt.err
	}
}

// syncResponse is resp as the client receives it, with resp's header: the
// response and its body made in one allocation.
func syncResponse(r *http.Request, resp *response) *http.Response {
	h := answerHeader(resp.header, len(resp.body))
	out := new(syncAnswer)
	out.body.r.Reset(resp.body)
	out.Response = http.Response{
		Status:        statusLine(resp.status),
		StatusCode:    resp.status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h,
		Body:          &out.body,
		ContentLength: int64(len(resp.body)),
		Request:       r,
	}
	return &out.Response
}

// syncAnswer is a sync answer as the client receives it, with its body.
type syncAnswer struct {
	http.Response
	body bytesBody
}

// bytesBody is a body read from memory: io.NopCloser(bytes.NewReader(b))
// with the same methods (Read, WriteTo, Close), to be made as part of
// another value.
type bytesBody struct{ r bytes.Reader }

func (b *bytesBody) Read(p []byte) (int, error)         { return b.r.Read(p) }
func (b *bytesBody) WriteTo(w io.Writer) (int64, error) { return b.r.WriteTo(w) }
func (b *bytesBody) Close() error                       { return nil }

// answerHeader returns h, the header of an answer, with Content-Length n
// (h nil: a new header). h is the transport's to change: the upstream's,
// which the base transport handed over with its response (as an
// http.RoundTripper hands its responses to http.Client and
// httputil.ReverseProxy, which change their headers too; decodeBody
// changes it as well), or one a stage made. It is changed only when it
// says another length, or none: a provider's answer handed on unchanged
// keeps the header it came with, and costs no allocation.
func answerHeader(h http.Header, n int) http.Header {
	var buf [20]byte
	length := strconv.AppendInt(buf[:0], int64(n), 10)
	if v := h["Content-Length"]; len(v) == 1 && v[0] == string(length) {
		return h
	}
	if h == nil {
		h = make(http.Header, 1)
	}
	h["Content-Length"] = []string{string(length)}
	return h
}

// withBody returns a clone of r with body, of length n (-1: unknown).
func withBody(r *http.Request, body io.ReadCloser, n int64) *http.Request {
	out := r.Clone(r.Context())
	out.Body, out.ContentLength, out.GetBody = body, n, nil
	return out
}

// withBytes returns a clone of r with body b.
func withBytes(r *http.Request, b []byte) *http.Request {
	out := withBody(r, io.NopCloser(bytes.NewReader(b)), int64(len(b)))
	out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	return out
}

// roundTrip is a RoundTrip's outcome.
type roundTrip struct {
	resp *http.Response
	err  error
}

// roundTripStream runs a streaming request's logical call on a goroutine of
// its own, which writes the client's stream. It returns the streamed
// response at the first event written, or, when the call ends before any,
// the response it ends with (the upstream's error, the guard's 422).
func (t *Transport) roundTripStream(r *http.Request, req *request) (*http.Response, error) {
	ctx, cancel := context.WithCancel(signedContext(r.Context(), req))
	client := newClientStream(req.proto, cancel)
	client.pool = &t.chunks
	root := newGateSink(req.proto, nil, client)
	req.sink, req.client = root, client
	ended := make(chan roundTrip, 1)
	go func() {
		growStack()
		keep := false // the context outlives the call: a passed body reads from it
		defer func() {
			if !keep {
				cancel()
			}
		}()
		resp, err := t.handler(ctx, req)
		if err == nil {
			_, err = root.Deliver(ctx, resp)
		}
		if err == nil {
			client.end(client.flush())
			return
		}
		var se *upstreamStreamError
		if !client.isCommitted() && !errors.As(err, &se) {
			hr, herr := t.failure(r, req.proto, err)
			var pe *passError
			if errors.As(err, &pe) && hr != nil {
				// An upstream response handed on unread: its body is read
				// on the call's context, cancelled when it is closed.
				hr.Body, keep = cancelOnClose{hr.Body, cancel}, true
			}
			client.end(errNotStreamed)
			ended <- roundTrip{hr, herr}
			return
		}
		ferr := t.failStream(ctx, root, err)
		if ferr == nil {
			ferr = client.flush()
		}
		client.end(ferr)
	}()
	select {
	case <-client.committed:
		return client.response(r), nil
	case rt := <-ended:
		return rt.resp, rt.err
	}
}

var errNotStreamed = errors.New("httpguard: the call ended before its stream began")

// cancelOnClose is a body that cancels its context once closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b cancelOnClose) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

// failure is the client's answer to a call that ended with err before any
// of its stream reached the client: a guard's refusal as the provider would
// refuse (422, x-should-retry: false), a streamed answer past MaxBody as a
// 502 of type response_too_large (x-should-retry: false: the same request
// would get as large an answer), an upstream's failed response as it came,
// an unguarded response as it came, or else the error itself (a connection
// the upstream refused, a cancelled context), as the base transport would
// return it.
func (t *Transport) failure(r *http.Request, p wireProtocol, err error) (*http.Response, error) {
	if isUnguardable(err) {
		closeUnread(err)
		return errorResponse(p, r, http.StatusBadGateway, responseUnguardable, preview([]byte(err.Error()))), nil
	}
	if status, typ, msg, ok := refusal(err); ok {
		return errorResponse(p, r, status, typ, msg), nil
	}
	if errors.Is(err, errTooLarge) {
		return errorResponse(p, r, http.StatusBadGateway, responseTooLarge, tooLargeText), nil
	}
	var pe *passError
	if errors.As(err, &pe) {
		pe.resp.Request = r
		return pe.resp, nil
	}
	var ue *UpstreamError
	if errors.As(err, &ue) {
		return ue.clientResponse(r), nil
	}
	var re *retry.Error
	if errors.As(err, &re) {
		if re.ContextErr != nil {
			return nil, re.ContextErr
		}
		if re.Err != nil {
			return nil, re.Err
		}
	}
	return nil, err
}

// responseTooLarge is the error type of a streamed answer past MaxBody
// (see failure and failStream), and tooLargeText its message.
const (
	responseTooLarge = "response_too_large"
	tooLargeText     = "httpguard: the provider's streamed answer is larger than httpguard.MaxBody (8 MiB) and cannot be guarded"
)

// storeUnavailableText is what a client reads of a limit whose store
// cannot be reached (%s: the limiter).
const storeUnavailableText = "httpguard: %s: the limit store cannot be reached; retry later"

// refusal maps a guard's refusal to the client's error response: its
// status, error type and message.
func refusal(err error) (status int, typ, msg string, ok bool) {
	var (
		invalid *guard.InvalidToolCallsError
		schema  *guard.SchemaError
		limit   *guard.LimitExceededError
		state   *ServerStateError
		store   *guard.StoreError
		history *HistoryError
	)
	switch {
	case errors.As(err, &invalid):
		status, typ = http.StatusUnprocessableEntity, "invalid_tool_calls"
	case errors.As(err, &schema):
		status, typ = http.StatusUnprocessableEntity, "invalid_tool_schema"
	case errors.As(err, &limit):
		status, typ = http.StatusUnprocessableEntity, "tool_call_limit_exceeded"
		if limit.Kind == guard.CountModelCalls {
			typ = "model_call_limit_exceeded"
		}
	case errors.As(err, &state):
		status, typ = http.StatusUnprocessableEntity, "tool_calls_refused"
	case errors.As(err, &history):
		status, typ = http.StatusUnprocessableEntity, "invalid_history"
	case errors.Is(err, ErrSignerMissing):
		status, typ = http.StatusUnprocessableEntity, signerMissing
	case errors.As(err, &store):
		// What the store said (an address, a port, a key naming the
		// thread) is for the program's events and logs, not for whoever
		// sent the request.
		return http.StatusServiceUnavailable, "limit_store_unavailable", fmt.Sprintf(storeUnavailableText, store.Middleware), true
	default:
		return 0, "", "", false
	}
	return status, typ, preview([]byte(err.Error())), true
}

// failStream ends a stream that already reached the client, for a call
// that failed with err: the upstream's own error event as it came, or the
// guard's in the protocol's stream shape. It returns the error to close
// the client's stream with: nil after an error event, the context's error
// when the call was cancelled.
func (t *Transport) failStream(ctx context.Context, root *gateSink, err error) error {
	var se *upstreamStreamError
	if errors.As(err, &se) {
		_ = root.gate.abort(streamEvent{Data: se.Data})
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	typ, msg := "guard_error", preview([]byte(connectionText(err)))
	var ue *UpstreamError
	switch {
	case errors.As(err, &ue):
		typ = "upstream_error"
	case isUnguardable(err):
		typ = responseUnguardable
	case errors.Is(err, errTooLarge):
		typ, msg = responseTooLarge, tooLargeText
	default:
		if _, rtyp, rmsg, ok := refusal(err); ok {
			typ, msg = rtyp, rmsg
		}
	}
	if ferr := root.gate.fail(typ, msg); ferr != nil {
		return ferr
	}
	return nil
}

// passUnknown passes a request of no protocol the transport speaks to the
// base transport. One that offers tools is reported, once per host and
// path: its calls are not guarded (a provider or a path the transport does
// not know, a proxy's prefix).
func (t *Transport) passUnknown(r *http.Request) (*http.Response, error) {
	if r.Method != http.MethodPost || r.Body == nil || r.Body == http.NoBody ||
		!strings.Contains(strings.ToLower(r.Header.Get("Content-Type")), "json") || t.was(r, "misconfigured") {
		return t.base.RoundTrip(r)
	}
	body, err := readBounded(r.Body, MaxBody)
	if err != nil {
		// Too large to look at, or a failed read: the rest goes as it is.
		return t.base.RoundTrip(withBody(r, readCloser{io.MultiReader(bytes.NewReader(body), r.Body), r.Body}, r.ContentLength))
	}
	r.Body.Close()
	if offersTools(body) {
		t.report(r, "misconfigured", misconfiguredText, nil)
	}
	return t.base.RoundTrip(withBytes(r, body))
}

// offersTools reports whether body is a JSON object with a non-empty
// "tools" array, or may be one: a body that names "tools" but that
// encoding/json cannot read (nested past its depth) counts as offering
// them, so that its answer is not passed unchecked in silence.
func offersTools(body []byte) bool {
	if !bytes.Contains(body, []byte(`"tools"`)) {
		return false
	}
	var v struct {
		Tools []json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		var syn *json.SyntaxError
		return errors.As(err, &syn)
	}
	return len(v.Tools) > 0
}

// was reports whether kind was reported for r's host and path.
func (t *Transport) was(r *http.Request, kind string) bool {
	_, ok := t.reported.Load(t.reportKey(r, kind, misconfiguredText))
	return ok
}

// maxReported bounds the reports a Transport remembers. Past it, a report
// is logged every time instead of once: a client sending unique paths (a
// path may be up to the server's header bound, 1 MiB by default) grows no
// memory, and no report is silenced.
const maxReported = 4096

// reportKey identifies a report: a hash of its host, path, kind and
// message under the Transport's seed, 8 bytes whatever their length. Two
// reports whose keys collide (a chance of 2^-64 a pair, which a client
// cannot aim at without the seed) are logged once between them.
type reportKey uint64

func (t *Transport) reportKey(r *http.Request, kind, msg string) reportKey {
	var h maphash.Hash
	h.SetSeed(t.seed)
	var n [8]byte
	for _, s := range [...]string{r.URL.Host, r.URL.Path, kind, msg} {
		// Each length first, so that no two tuples write the same bytes.
		binary.LittleEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.WriteString(s)
	}
	return reportKey(h.Sum64())
}

const misconfiguredText = "a request offers tools on a path httpguard does not recognise: its tool calls are not guarded"

// report logs what the transport did not guard at Warn on slog.Default,
// once per host, path, kind ("misconfigured", "unguarded") and msg (a
// fixed text; err holds the details), as long as fewer than maxReported
// reports are remembered, and every time past that. It names the host and
// path, never a header: no credential reaches the log.
func (t *Transport) report(r *http.Request, kind, msg string, err error) {
	k := t.reportKey(r, kind, msg)
	if _, ok := t.reported.Load(k); ok {
		return
	}
	if t.remembered.Add(1) <= maxReported {
		if _, loaded := t.reported.LoadOrStore(k, struct{}{}); loaded {
			t.remembered.Add(-1)
			return
		}
	} else {
		t.remembered.Add(-1) // full: logged, not remembered
	}
	attrs := []slog.Attr{slog.String("host", r.URL.Host), slog.String("path", r.URL.Path)}
	if err != nil {
		attrs = append(attrs, slog.String("error", err.Error()))
	}
	slog.Default().LogAttrs(r.Context(), slog.LevelWarn, "toolguard: httpguard: "+kind+": "+msg, attrs...)
}

// connectionText is err's text as a client may read it: a failure of the
// connection to the upstream (a *net.OpError, a failed lookup) is named by
// its kind alone, never with the addresses or host names its text holds
// (the upstream's internal ip:port behind a proxy).
func connectionText(err error) string {
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return "httpguard: the upstream connection failed: DNS lookup failed"
	}
	var op *net.OpError
	if errors.As(err, &op) {
		kind := "connection error"
		switch {
		case op.Timeout():
			kind = "timeout"
		case errors.Is(op.Err, syscall.ECONNREFUSED):
			kind = "connection refused"
		case errors.Is(op.Err, syscall.ECONNRESET), errors.Is(op.Err, syscall.ECONNABORTED), errors.Is(op.Err, syscall.EPIPE):
			kind = "connection closed"
		}
		return "httpguard: the upstream connection failed: " + kind + " (" + op.Op + ")"
	}
	return err.Error()
}

// growStack grows the calling goroutine's stack to 8 KiB when it is
// smaller: its 4 KiB frame does not fit in a stack of 4 KiB. A stream's
// logical call starts on a goroutine of its own, whose stack starts at
// what goroutines use on average (2 or 4 KiB, most often) and would grow
// as the call goes deeper, a copy of the stack with every frame on it
// adjusted (runtime.copystack, about 7% of an Anthropic stream's CPU).
// Grown here, where one frame is on it, the copy is cheap. 8 KiB is what
// a stream's deepest paths need (an event's parse under the stages, the
// client's write, the calls' validation), and what a stream held in
// flight keeps anyway.
//
//go:noinline
func growStack() {
	var room [4 << 10]byte
	touch(room[:])
}

// touch does nothing with b; not inlined, so that growStack's room is
// made.
//
//go:noinline
func touch(b []byte) {}
