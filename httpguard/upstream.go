package httpguard

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
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
}

// maxErrorText bounds what an error's text quotes of a body.
const maxErrorText = 2 << 10

// Error says the status and quotes the start of the body, where providers
// say why (a rate limit, an exhausted quota).
func (e *UpstreamError) Error() string {
	return fmt.Sprintf("httpguard: upstream answered %s: %s", e.Response.Status, preview(e.Body))
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
	if err == nil && resp.body != nil {
		if u, uerr := req.proto.usage(resp.body); uerr == nil && u.Reported {
			res.InputTokens, res.OutputTokens = int(u.InputTokens), int(u.OutputTokens)
		}
		res.FinishReasons = req.proto.finish(resp.body)
	}
	done(res)
	return resp, err
}

// sendUpstream makes the upstream request: a clone of the client's with
// req's body.
func (t *Transport) sendUpstream(ctx context.Context, req *request) (*response, error) {
	out := req.http.Clone(ctx)
	body := req.body
	out.Body = io.NopCloser(bytes.NewReader(body))
	out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	out.ContentLength = int64(len(body))
	hr, err := t.base.RoundTrip(out)
	if err != nil {
		return nil, err
	}
	if hr.StatusCode < 200 || hr.StatusCode > 299 {
		return nil, readUpstreamError(hr)
	}
	if req.sink != nil {
		if !isEventStream(hr) {
			t.unguarded(req, "the answer to a streaming request is not an event stream ("+hr.Header.Get("Content-Type")+")")
			return &response{proto: req.proto, pass: hr}, nil
		}
		return t.readStream(req, hr)
	}
	if enc := hr.Header.Get("Content-Encoding"); enc != "" && !strings.EqualFold(enc, "identity") {
		t.unguarded(req, "the response body is encoded ("+enc+")")
		return &response{proto: req.proto, pass: hr}, nil
	}
	b, err := readBounded(hr.Body, MaxBody)
	if errors.Is(err, errTooLarge) {
		t.unguarded(req, "the response body is larger than MaxBody")
		hr.Body = readCloser{io.MultiReader(bytes.NewReader(b), hr.Body), hr.Body}
		return &response{proto: req.proto, pass: hr}, nil
	}
	hr.Body.Close()
	if err != nil {
		return nil, err
	}
	if _, err := req.proto.calls(b); err != nil {
		t.unguarded(req, "the response cannot be read: "+err.Error())
		hr.Body = io.NopCloser(bytes.NewReader(b))
		return &response{proto: req.proto, pass: hr}, nil
	}
	return &response{proto: req.proto, body: b, status: hr.StatusCode, header: hr.Header}, nil
}

// readUpstreamError reads a failed response into an *UpstreamError.
func readUpstreamError(hr *http.Response) *UpstreamError {
	b, _ := readBounded(hr.Body, MaxBody)
	hr.Body.Close()
	if len(b) > MaxBody {
		b = b[:MaxBody]
	}
	_, wait := upstreamError(hr, time.Now())
	r := *hr
	r.Body, r.Request = http.NoBody, nil
	return &UpstreamError{Response: &r, Body: b, wait: wait}
}

// isEventStream reports whether hr is a stream of server-sent events.
func isEventStream(hr *http.Response) bool {
	ct := hr.Header.Get("Content-Type")
	return strings.HasPrefix(strings.ToLower(strings.TrimSpace(ct)), "text/event-stream")
}

// readStream feeds an upstream stream's events to req's sink as they come
// and returns the stream assembled into the sync response it amounts to.
func (t *Transport) readStream(req *request, hr *http.Response) (*response, error) {
	defer hr.Body.Close()
	req.client.upstream(hr)
	req.sink.begin()
	asm := req.proto.newAssembler()
	rd := newSSEReader(hr.Body, MaxBody)
	for {
		ev, err := rd.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		done, err := asm.add(ev)
		if err != nil {
			return nil, err
		}
		if err := req.sink.writeSSE(ev); err != nil {
			return nil, err
		}
		if done {
			break
		}
	}
	b, err := asm.response()
	if err != nil {
		return nil, err
	}
	if _, err := req.proto.calls(b); err != nil {
		return nil, fmt.Errorf("httpguard: the streamed response cannot be guarded: %w", err)
	}
	return &response{proto: req.proto, body: b, status: hr.StatusCode, header: hr.Header}, nil
}

// readCloser reads from r and closes c.
type readCloser struct {
	io.Reader
	c io.Closer
}

func (r readCloser) Close() error { return r.c.Close() }

// statusLine is the Status of a response the transport makes.
func statusLine(code int) string { return strconv.Itoa(code) + " " + http.StatusText(code) }
