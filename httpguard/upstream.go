package httpguard

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/toolguard/toolguard/guard"
)

// UpstreamError is a provider's answer whose status is not 2xx, as the
// transport reports it to the stages: [retry.IsRetryable] classifies it by
// its status (408, 409, 429 and 5xx but 501 and 505 are retried, 529
// included) and by the provider's x-should-retry header, and retry.After
// reads its retry-after-ms or Retry-After header, so [ModelRetry] waits
// what the provider asked. When the stages give up on it, the client
// receives the response itself: status, headers and body as they came.
//
// [retry.IsRetryable]: https://pkg.go.dev/github.com/toolguard/toolguard/retry#IsRetryable
type UpstreamError struct {
	// Response is the provider's response: status and headers as they
	// came. Its Body is empty (the body is Body) and its Request nil, so
	// the request's credentials never travel with the error.
	Response *http.Response
	// Body is the response's body, read up to MaxBody (a longer one is
	// cut there).
	Body []byte
	wait time.Duration
	// text is the start of Body with the request's credentials blanked
	// (a provider may quote the key it refuses).
	text string
}

// maxErrorText bounds what an error's text quotes of a body.
const maxErrorText = 2 << 10

// Error says the status and quotes the start of the body, where providers
// say why (a rate limit, an exhausted quota).
func (e *UpstreamError) Error() string {
	return fmt.Sprintf("httpguard: upstream answered %s: %s", e.Response.Status, e.text)
}

// StatusCode returns the response's HTTP status.
func (e *UpstreamError) StatusCode() int { return e.Response.StatusCode }

// RetryAfter returns the wait the response asks for (retry-after-ms, else
// Retry-After in seconds or as a date); 0 when it asks for none.
func (e *UpstreamError) RetryAfter() time.Duration { return e.wait }

// clientResponse is the response as the client receives it.
func (e *UpstreamError) clientResponse(req *http.Request) *http.Response {
	r := *e.Response
	r.Header = e.Response.Header.Clone()
	r.Body = io.NopCloser(bytes.NewReader(e.Body))
	r.ContentLength = int64(len(e.Body))
	r.Request = req
	return &r
}

// preview is the start of b as text, cut at maxErrorText on a rune
// boundary.
func preview(b []byte) string {
	if len(b) <= maxErrorText {
		return string(b)
	}
	cut := maxErrorText
	for cut > 0 && !utf8.RuneStart(b[cut]) {
		cut--
	}
	return string(b[:cut]) + "…"
}

// passError carries an upstream response the transport cannot guard
// through the stages, which pass errors on, to the client.
type passError struct{ resp *http.Response }

func (e *passError) Error() string { return "httpguard: response passed through unguarded" }

// send is the innermost handler: it makes req's upstream request and
// reads the answer. Observers in ctx (Observe) see each request.
func (t *Transport) send(ctx context.Context, req *request) (*response, error) {
	if guard.ObserverFrom(ctx) == nil {
		return t.sendUpstream(ctx, req)
	}
	ctx, done := guard.ObserveModelCall(ctx, guard.ModelCall{Model: req.wire.Model})
	resp, err := t.sendUpstream(ctx, req)
	res := guard.ModelResult{Err: err, InputTokens: -1, OutputTokens: -1}
	if rep, output, ok := observed(ctx, req.proto, resp, err); ok {
		if u := rep.usage; rep.usageErr == nil && u.Reported {
			res.InputTokens, res.OutputTokens = int(u.InputTokens), int(u.OutputTokens)
		}
		res.FinishReasons = rep.finish
		res.Output = output
	}
	done(res)
	return resp, err
}

// observed is what an observer reads of resp, the answer of a request
// that ended with err: its report, and its output messages rendered when
// called; ok false when the request failed, the answer is handed on
// unread, or it cannot be assembled. A streamed answer not assembled yet
// is read from its assembler (streamReportOf), and assembled only when
// its output is asked for, then from the assembler, leaving resp as it
// is.
func observed(ctx context.Context, p wireProtocol, resp *response, err error) (streamReport, func() string, bool) {
	if err != nil {
		return streamReport{}, nil, false
	}
	if asm := resp.asm; resp.body == nil && asm != nil {
		rep, err := streamReportOf(p, asm)
		if err != nil {
			return streamReport{}, nil, false
		}
		return rep, func() string {
			body, err := asm.response()
			if err != nil {
				return ""
			}
			return outputMessages(ctx, p, body)
		}, true
	}
	body, err := resp.content()
	if body == nil || err != nil {
		return streamReport{}, nil, false
	}
	return reportOf(p, body), func() string { return outputMessages(ctx, p, body) }, true
}

// sendUpstream makes the upstream request: a copy of the client's with
// req's body, and reads its answer, decoded when it is compressed. The copy
// shares the client's headers and URL, which neither the base transport
// (an http.RoundTripper does not modify its request) nor the transport
// writes: signAgain, which does, copies them first.
func (t *Transport) sendUpstream(ctx context.Context, req *request) (*response, error) {
	out := req.http.WithContext(ctx)
	body := req.body
	out.Body = io.NopCloser(bytes.NewReader(body))
	out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	out.ContentLength = int64(len(body))
	if err := t.signAgain(ctx, req, out, body); err != nil {
		return nil, err
	}
	hr, err := t.base.RoundTrip(out)
	if err != nil {
		return nil, redact(err, credentials(req.http))
	}
	if hr.StatusCode < 200 || hr.StatusCode > 299 {
		return nil, readUpstreamError(hr, credentials(req.http))
	}
	if req.direct {
		// A stream that offers no tools: no call to guard.
		return &response{proto: req.proto, pass: hr, status: hr.StatusCode, header: hr.Header}, nil
	}
	if req.unread != nil {
		// The request itself could not be read: neither can its answer.
		return passUnread(req, hr, "the request cannot be read", req.unread), nil
	}
	// The guard reads, and the client receives, the body decoded (see
	// decodeBody); a coding the guard cannot undo leaves an answer it
	// cannot read, handed on as it came.
	if err := decodeBody(hr); err != nil {
		var ue *unguardableError
		if errors.As(err, &ue) {
			return passUnread(req, hr, ue.why, ue.err), nil
		}
		hr.Body.Close()
		return nil, err
	}
	if req.sink != nil {
		if !req.proto.framing().isStream(hr.Header.Get("Content-Type")) {
			return passUnread(req, hr, "the answer to a streaming request is not an event stream",
				fmt.Errorf("Content-Type %q", hr.Header.Get("Content-Type"))), nil
		}
		return t.readStream(ctx, req, hr)
	}
	b, err := readSized(hr.Body, hr.ContentLength, MaxBody)
	if errors.Is(err, errTooLarge) {
		hr.Body = readCloser{io.MultiReader(bytes.NewReader(b), hr.Body), hr.Body}
		return passUnread(req, hr, "the response body is larger than MaxBody", nil), nil
	}
	hr.Body.Close()
	if err != nil {
		// A body that stops decoding part-way: refused, as a stream is.
		return nil, reportUnguardable(ctx, err)
	}
	resp := &response{proto: req.proto, body: b, status: hr.StatusCode, header: hr.Header}
	if _, err := resp.toolCalls(); err != nil {
		hr.Body = io.NopCloser(bytes.NewReader(b))
		return passUnread(req, hr, "the response is not of a shape the guard reads", err), nil
	}
	return resp, nil
}

// readUpstreamError reads a failed response into an *UpstreamError whose
// text holds none of secrets.
func readUpstreamError(hr *http.Response, secrets []string) *UpstreamError {
	b, _ := readBounded(hr.Body, MaxBody)
	hr.Body.Close()
	if len(b) > MaxBody {
		b = b[:MaxBody]
	}
	_, wait := upstreamError(hr, time.Now())
	r := *hr
	r.Body, r.Request = http.NoBody, nil
	return &UpstreamError{Response: &r, Body: b, wait: wait, text: blank(preview(b), secrets)}
}

// credentials are the secrets r carries: its Authorization header (and
// the token after its scheme), the API-key headers of OpenAI's Azure,
// Anthropic and Google, and a key in the query (Gemini's ?key=).
func credentials(r *http.Request) []string {
	var out []string
	add := func(v string) {
		if v = strings.TrimSpace(v); len(v) >= 8 {
			out = append(out, v)
		}
	}
	for _, v := range r.Header.Values("Authorization") {
		add(v)
		if _, tok, ok := strings.Cut(v, " "); ok {
			add(tok)
		}
	}
	for _, h := range []string{"X-Api-Key", "Api-Key", "X-Goog-Api-Key"} {
		for _, v := range r.Header.Values(h) {
			add(v)
		}
	}
	for _, v := range r.URL.Query()["key"] {
		add(v)
		add(url.QueryEscape(v))
	}
	return out
}

// blank returns s with every secret replaced.
func blank(s string, secrets []string) string {
	for _, k := range secrets {
		s = strings.ReplaceAll(s, k, "[REDACTED]")
	}
	return s
}

// redact returns err, or when its text holds one of secrets (a URL with
// ?key= in a *url.Error), an error with the same chain whose text does not.
func redact(err error, secrets []string) error {
	text := err.Error()
	if b := blank(text, secrets); b != text {
		return &redactedError{err: err, text: b}
	}
	return err
}

// redactedError is an error whose text has the request's credentials
// blanked; errors.Is and errors.As reach the original.
type redactedError struct {
	err  error
	text string
}

func (e *redactedError) Error() string { return e.text }
func (e *redactedError) Unwrap() error { return e.err }

// readStream feeds an upstream stream's events to req's sink as they come
// and returns the stream assembled into the sync response it amounts to
// (by the sink's gate, which assembles each attempt).
func (t *Transport) readStream(ctx context.Context, req *request, hr *http.Response) (*response, error) {
	defer hr.Body.Close()
	req.client.upstream(hr)
	req.sink.begin()
	rd, br := t.streamReader(req.proto.framing(), hr.Body)
	if br != nil {
		defer t.readers.put(br)
	}
	for {
		ev, err := rd.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		done, err := req.sink.event(ev)
		if err != nil {
			return nil, reportUnguardable(ctx, err)
		}
		if done {
			break
		}
	}
	asm := req.sink.gate.current()
	calls, err := req.sink.assembledCalls()
	if err != nil {
		return nil, reportUnguardable(ctx, err)
	}
	// The body is built when a stage reads it (response.content), or now
	// if reading the calls built it.
	return &response{proto: req.proto, body: req.sink.asm, asm: asm, status: hr.StatusCode, header: hr.Header, origin: req.sink, calls: calls}, nil
}

// streamReader returns the reader of a stream in framing f from body:
// for server-sent events, one reading through a buffered reader of the
// transport's pool (br), to be given back once the stream is read (none
// of its events holds its bytes: each event's data is copied out).
func (t *Transport) streamReader(f framing, body io.Reader) (rd eventReader, br *bufio.Reader) {
	if _, ok := f.(sseFraming); !ok {
		return f.newReader(body, MaxBody), nil
	}
	br = t.readers.get(body)
	return &sseReader{br: br, max: MaxBody}, br
}

// readerPool keeps the buffered readers streams of server-sent events
// are read through (streamReadSize bytes each), once read, for a
// Transport's next streams. Safe for concurrent use.
type readerPool struct{ p sync.Pool }

// get returns a buffered reader of r.
func (rp *readerPool) get(r io.Reader) *bufio.Reader {
	if br, ok := rp.p.Get().(*bufio.Reader); ok {
		br.Reset(r)
		return br
	}
	return bufio.NewReaderSize(r, streamReadSize)
}

// put keeps br, which no one reads any more.
func (rp *readerPool) put(br *bufio.Reader) {
	br.Reset(nil)
	rp.p.Put(br)
}

// readCloser reads from r and closes c.
type readCloser struct {
	io.Reader
	c io.Closer
}

func (r readCloser) Close() error { return r.c.Close() }

// statusLine is the Status of a response the transport makes: "200 OK"
// for nearly all, made without an allocation.
func statusLine(code int) string {
	if code == http.StatusOK {
		return "200 OK"
	}
	return strconv.Itoa(code) + " " + http.StatusText(code)
}

// StatusCode returns the HTTP status an upstream stream's error event
// stands for, so that retry classifies it as it classifies the same
// failure before a stream began: Google's numeric code, else the type
// OpenAI and Anthropic name (server_error and api_error 500,
// overloaded_error 529, rate limits 429); 0 when it names none.
func (e *upstreamStreamError) StatusCode() int {
	var ev struct {
		Type  string          `json:"type"`
		Code  json.RawMessage `json:"code"`
		Error *struct {
			Type string          `json:"type"`
			Code json.RawMessage `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(e.Data, &ev) != nil {
		return 0
	}
	codes := []json.RawMessage{ev.Code}
	names := []string{}
	if ev.Error != nil {
		codes = append(codes, ev.Error.Code)
		names = append(names, ev.Error.Type)
	}
	for _, c := range codes {
		var n int
		if json.Unmarshal(c, &n) == nil && n >= 400 && n <= 599 {
			return n
		}
		var s string
		if json.Unmarshal(c, &s) == nil {
			names = append(names, s)
		}
	}
	for _, name := range names {
		switch name {
		case "server_error", "api_error", "internal_error":
			return http.StatusInternalServerError
		case "overloaded_error":
			return 529
		case "rate_limit_error", "rate_limit_exceeded":
			return http.StatusTooManyRequests
		}
	}
	return 0
}

// reportUnguardable returns err, a failure to read a stream's events or a
// body; one that says the answer cannot be guarded is reported as an
// unguarded event first (to the observers and handler of ctx: the proxy's
// metrics count it). Such an answer is refused whether the stages fail
// open or closed: part of it was read, and what the client would read of
// the rest could not be checked.
func reportUnguardable(ctx context.Context, err error) error {
	if isUnguardable(err) {
		guard.Report(ctx, guard.Event{Kind: guard.EventUnguarded, Middleware: "httpguard", Err: err})
	}
	return err
}
