package httpguard

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
)

// clientStream is the body of a streamed response the transport returns:
// a pipe the logical call's goroutine writes the client's events into. The
// response is committed (RoundTrip returns it) at the first event: until
// then the call may still end as an HTTP error response of its own (the
// upstream's 429, the guard's 422), which an SDK reads better than an error
// event inside a 200 stream.
type clientStream struct {
	pr        *io.PipeReader
	pw        *io.PipeWriter
	committed chan struct{} // closed at the first event
	commit    sync.Once
	cancel    context.CancelFunc // ends the call's upstream requests
	// events counts the events written (stageStream.Watch reads it).
	events atomic.Int64
	// status, header: the upstream stream's, for the client's response.
	// Written by the call's goroutine before the first event only, read
	// by RoundTrip after committed is closed.
	status int
	header http.Header
	proto  string
	major  int
	minor  int
}

func newClientStream(cancel context.CancelFunc) *clientStream {
	pr, pw := io.Pipe()
	return &clientStream{pr: pr, pw: pw, committed: make(chan struct{}), cancel: cancel, status: http.StatusOK,
		proto: "HTTP/1.1", major: 1, minor: 1}
}

// isCommitted reports whether an event was written.
func (c *clientStream) isCommitted() bool {
	select {
	case <-c.committed:
		return true
	default:
		return false
	}
}

// upstream records the status and headers of an upstream stream, for the
// client's response, unless the response is committed already.
func (c *clientStream) upstream(resp *http.Response) {
	if c.isCommitted() {
		return
	}
	c.status, c.header = resp.StatusCode, resp.Header.Clone()
	c.proto, c.major, c.minor = resp.Proto, resp.ProtoMajor, resp.ProtoMinor
}

// writeSSE writes ev to the client, committing the response at the first
// event. It blocks until the client reads it.
func (c *clientStream) writeSSE(ev sseEvent) error {
	c.commit.Do(func() { close(c.committed) })
	c.events.Add(1)
	_, err := c.pw.Write(formatEvent(ev))
	return err
}

// response is the client's committed response.
func (c *clientStream) response(req *http.Request) *http.Response {
	h := c.header
	if h == nil {
		h = http.Header{}
		h.Set("Content-Type", "text/event-stream")
	}
	h.Del("Content-Length")
	return &http.Response{
		Status:        strconv.Itoa(c.status) + " " + http.StatusText(c.status),
		StatusCode:    c.status,
		Proto:         c.proto,
		ProtoMajor:    c.major,
		ProtoMinor:    c.minor,
		Header:        h,
		Body:          clientBody{c},
		ContentLength: -1,
		Request:       req,
	}
}

// clientBody is the committed response's body.
type clientBody struct{ c *clientStream }

func (b clientBody) Read(p []byte) (int, error) { return b.c.pr.Read(p) }

// Close stops the call: its upstream requests are cancelled and its
// writes fail.
func (b clientBody) Close() error {
	b.c.cancel()
	return b.c.pr.CloseWithError(errClientClosed)
}

var errClientClosed = errors.New("httpguard: the client closed the response body")

// end closes the client's stream after the last event, or with err.
func (c *clientStream) end(err error) { _ = c.pw.CloseWithError(err) }
