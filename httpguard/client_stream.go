package httpguard

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
)

// clientStream is the body of a streamed response the transport returns:
// a pipe the logical call's goroutine writes the client's events into. The
// response is committed (RoundTrip returns it) at the first event that
// carries something of the answer: until then the call may still end as an
// HTTP error response of its own (the upstream's 429, the guard's 422),
// which an SDK reads better than an error event inside a 200 stream. The
// events that only open a stream (message_start, response.created, a chunk
// with the role alone) wait for it.
type clientStream struct {
	// opening reports whether an event only opens the stream.
	opening func(ev streamEvent) bool
	// framing writes the events as the client reads them.
	framing   framing
	held      []streamEvent
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

func newClientStream(p wireProtocol, cancel context.CancelFunc) *clientStream {
	pr, pw := io.Pipe()
	return &clientStream{opening: p.opening, framing: p.framing(), pr: pr, pw: pw, committed: make(chan struct{}), cancel: cancel,
		status: http.StatusOK, proto: "HTTP/1.1", major: 1, minor: 1}
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

// putEvent writes ev to the client, committing the response at the first
// event that is not only an opening. It blocks until the client reads it.
func (c *clientStream) putEvent(ev streamEvent) error {
	if !c.isCommitted() && c.opening(ev) {
		c.held = append(c.held, ev)
		return nil
	}
	return c.flush(ev)
}

// flush commits the response and writes the held events, then evs.
func (c *clientStream) flush(evs ...streamEvent) error {
	c.commit.Do(func() { close(c.committed) })
	held := c.held
	c.held = nil
	for _, ev := range append(held, evs...) {
		c.events.Add(1)
		if _, err := c.pw.Write(c.framing.format(ev)); err != nil {
			return err
		}
	}
	return nil
}

// response is the client's committed response.
func (c *clientStream) response(req *http.Request) *http.Response {
	h := c.header
	if h == nil {
		h = http.Header{}
		h.Set("Content-Type", c.framing.contentType())
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

// dataType is the "type" member of an event's data ("" when it has
// none): the type of an Anthropic or Responses event.
func dataType(data []byte) string {
	var e struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(data, &e)
	return e.Type
}
