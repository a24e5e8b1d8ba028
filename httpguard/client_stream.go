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
	// format is an event's bytes in the protocol's framing, and
	// contentType the framing's Content-Type.
	format      func(ev sseEvent) []byte
	contentType string

	// opening reports whether an event only opens the stream.
	opening   func(ev sseEvent) bool
	held      []sseEvent
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
	c := &clientStream{opening: openingEvent(p), pr: pr, pw: pw, committed: make(chan struct{}), cancel: cancel,
		status: http.StatusOK, proto: "HTTP/1.1", major: 1, minor: 1, format: formatEvent, contentType: "text/event-stream"}
	if _, ok := p.(ollamaWire); ok {
		c.format, c.contentType = formatNDJSON, ndjsonContentType
	}
	return c
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
// event that is not only an opening. It blocks until the client reads it.
func (c *clientStream) writeSSE(ev sseEvent) error {
	if !c.isCommitted() && c.opening(ev) {
		c.held = append(c.held, ev)
		return nil
	}
	return c.flush(ev)
}

// flush commits the response and writes the held events, then evs.
func (c *clientStream) flush(evs ...sseEvent) error {
	c.commit.Do(func() { close(c.committed) })
	held := c.held
	c.held = nil
	for _, ev := range append(held, evs...) {
		c.events.Add(1)
		if _, err := c.pw.Write(c.format(ev)); err != nil {
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
		h.Set("Content-Type", c.contentType)
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

// openingEvent returns p's test for events that only open a stream: they
// carry no text, call or end of the answer.
func openingEvent(p wireProtocol) func(sseEvent) bool {
	switch p.(type) {
	case chatWire:
		return func(ev sseEvent) bool { return chatOpening(ev.Data) }
	case messagesWire:
		return func(ev sseEvent) bool {
			switch eventType(ev) {
			case "message_start", "ping", "content_block_start":
				return true
			}
			return false
		}
	case responsesWire:
		return func(ev sseEvent) bool {
			switch eventType(ev) {
			case "response.created", "response.in_progress", "response.queued", "response.output_item.added", "response.content_part.added":
				return true
			}
			return false
		}
	}
	return func(sseEvent) bool { return false }
}

// eventType is the type of an Anthropic or Responses event: its parsed
// form's when a gate parsed it, else read from its data ("" when it has
// none).
func eventType(ev sseEvent) string {
	switch e := ev.parsed.(type) {
	case *messagesEvent:
		return e.Type
	case *responsesEvent:
		return e.Type
	}
	var e struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(ev.Data, &e)
	return e.Type
}

// chatOpening reports whether a chat chunk only opens the stream: no
// usage, and in every choice no finish_reason and a delta whose members
// other than role are "" or null (the role alone). Any other member of the
// delta counts (content, tool_calls, a server's own such as
// reasoning_content), and so does a chunk that is not what a chunk
// decodes from. It reads the bytes in place.
func chatOpening(b []byte) bool {
	if !json.Valid(b) {
		return false
	}
	r, err := root(b)
	if err != nil {
		return false
	}
	if kind(b, r) == 'n' {
		return true
	}
	it, err := iterMembers(b, r)
	if err != nil {
		return false
	}
	for it.next() {
		switch {
		case it.is("usage"):
			if kind(b, it.v) != 'n' {
				return false
			}
		case it.is("choices"):
			if !chatChoicesOpening(b, it.v) {
				return false
			}
		}
	}
	return it.err == nil
}

func chatChoicesOpening(b []byte, sp span) bool {
	if kind(b, sp) == 'n' {
		return true
	}
	es, err := arrayElems(b, sp)
	if err != nil {
		return false
	}
	for _, e := range es {
		if kind(b, e) == 'n' {
			continue
		}
		it, err := iterMembers(b, e)
		if err != nil {
			return false
		}
		for it.next() {
			switch {
			case it.is("finish_reason"):
				if k := kind(b, it.v); k != 'n' {
					return false
				}
			case it.is("delta"):
				if !chatDeltaOpening(b, it.v) {
					return false
				}
			}
		}
		if it.err != nil {
			return false
		}
	}
	return true
}

func chatDeltaOpening(b []byte, sp span) bool {
	if kind(b, sp) == 'n' {
		return true
	}
	it, err := iterMembers(b, sp)
	if err != nil {
		return false
	}
	for it.next() {
		role, err := keyIs(raw(b, it.k), "role")
		if v := string(raw(b, it.v)); err != nil || (!role && v != `""` && v != "null") {
			return false
		}
	}
	return it.err == nil
}
