package httpguard

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
)

// clientStream is the body of a streamed response the transport returns:
// a bounded buffer the logical call's goroutine formats the client's
// events into and the client's Reads drain. The response is committed
// (RoundTrip returns it) at the first event that carries something of the
// answer: until then the call may still end as an HTTP error response of
// its own (the upstream's 429, the guard's 422), which an SDK reads better
// than an error event inside a 200 stream. The events that only open a
// stream (message_start, response.created, a chunk with the role alone)
// wait for it.
//
// The writer does not wait for the client to read each event (an io.Pipe
// did: a hand-off between the two goroutines per event): it appends the
// event's bytes and goes on, and waits only while the buffer holds
// clientStreamBound bytes or more. A Read takes all that is buffered, up
// to len(p), and waits only while nothing is. So a client that does not
// read holds the call at the bound: the buffer never holds more than the
// bound plus one event (an event is bounded by MaxBody, as it is read).
type clientStream struct {
	// opening reports whether an event only opens the stream.
	opening func(ev streamEvent) bool
	// framing writes the events as the client reads them.
	framing framing
	// held are the events that only open the stream, until it commits;
	// heldRoom is their first room: a stream opens with a few (a
	// message_start, a response.created and in_progress, a chunk with the
	// role alone), which then take no allocation.
	held      []streamEvent
	heldRoom  [4]streamEvent
	committed chan struct{} // closed at the first event
	commit    sync.Once
	cancel    context.CancelFunc // ends the call's upstream requests
	// events counts the events written to the buffer (stageStream.Watch
	// reads it): once there, an event is the client's, as it was once
	// handed to the pipe, since nothing takes it back.
	events atomic.Int64
	// status, header: the upstream stream's, for the client's response.
	// Written by the call's goroutine before the first event only, read
	// by RoundTrip after committed is closed.
	status int
	header http.Header
	proto  string
	major  int
	minor  int

	mu   sync.Mutex
	cond sync.Cond // signalled when buf, werr or closed changes
	// chunks hold the bytes written and not yet read, from
	// chunks[0][off:]; pending counts them. The writer appends to the
	// last chunk while it has room and starts a new one when not, so
	// that bytes buffered are never copied to grow the buffer; a chunk
	// the client has read is let go, but for the last, which is kept for
	// the next events if it is no larger than clientStreamChunk.
	chunks  [][]byte
	off     int
	pending int
	// pool takes the chunks of clientStreamChunk bytes the client has
	// read, for the next streams; nil: each chunk is made.
	pool *chunkPool
	// werr is how the writer ended (io.EOF for a clean end), nil until
	// then; the client reads it after what buf holds.
	werr error
	// closed: the client closed the body; writes fail.
	closed bool
	// waiting, when not nil, is called (with mu held) each time the
	// writer waits for room: a test's view of the bound.
	waiting func()
}

// clientStreamBound is what the client's stream buffers before its
// writer waits for the client to read: a few events' worth, so that the
// call goes on while the client reads what came before (the events of
// one upstream read rarely pass a few KiB), and small beside MaxBody, so
// that a client that reads slowly, or not at all, cannot make the
// transport hold its stream.
const clientStreamBound = 32 << 10

// clientStreamChunk is the least a chunk of the client's buffer holds: a
// few events, so that a stream's events take a few allocations, and small,
// since a stream held in flight keeps its last chunk.
const clientStreamChunk = 1 << 10

func newClientStream(p wireProtocol, cancel context.CancelFunc) *clientStream {
	c := &clientStream{opening: p.opening, framing: p.framing(), committed: make(chan struct{}), cancel: cancel,
		status: http.StatusOK, proto: "HTTP/1.1", major: 1, minor: 1}
	c.cond.L = &c.mu
	c.held = c.heldRoom[:0]
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
// client's response, unless the response is committed already. The
// header is the transport's to hand on (see answerHeader): nothing reads
// an upstream stream's header once its body is read.
func (c *clientStream) upstream(resp *http.Response) {
	if c.isCommitted() {
		return
	}
	c.status, c.header = resp.StatusCode, resp.Header
	c.proto, c.major, c.minor = resp.Proto, resp.ProtoMajor, resp.ProtoMinor
}

// putEvent writes ev to the client, committing the response at the first
// event that is not only an opening. It waits only while the buffer is
// full. Once the response is committed nothing is held (flush wrote the
// held events and nothing is held after), so an event goes straight to
// write.
func (c *clientStream) putEvent(ev streamEvent) error {
	if !c.isCommitted() {
		if c.opening(ev) {
			c.held = append(c.held, ev)
			return nil
		}
		if err := c.flush(); err != nil {
			return err
		}
	}
	return c.write(ev)
}

// flush commits the response and writes the held events, then lets them
// go: once written, an event is the buffer's copy.
func (c *clientStream) flush() error {
	c.commit.Do(func() { close(c.committed) })
	held := c.held
	c.held = nil
	var err error
	for _, ev := range held {
		if err = c.write(ev); err != nil {
			break
		}
	}
	clear(c.heldRoom[:])
	return err
}

// write appends ev, formatted, to the buffer, once it holds less than the
// bound; errClientClosed once the client closed the body.
func (c *clientStream) write(ev streamEvent) error {
	c.events.Add(1)
	c.mu.Lock()
	defer c.mu.Unlock()
	for !c.closed && c.werr == nil && c.pending >= clientStreamBound {
		if c.waiting != nil {
			c.waiting()
		}
		c.cond.Wait()
	}
	switch {
	case c.closed:
		return errClientClosed
	case c.werr != nil:
		return io.ErrClosedPipe
	}
	a, ok := c.framing.(appendFramer)
	if !ok {
		// A framing that does not format in place: its frame is a chunk.
		b := c.framing.format(ev)
		c.chunks = append(c.chunks, b)
		c.pending += len(b)
		c.cond.Signal()
		return nil
	}
	if len(c.chunks) == 1 && c.off == len(c.chunks[0]) {
		// All read: the kept chunk starts over.
		c.chunks[0], c.off = c.chunks[0][:0], 0
	}
	need := len(ev.Data) + len(ev.Event) + 32 // most events' bytes
	n := len(c.chunks)
	if n == 0 || cap(c.chunks[n-1])-len(c.chunks[n-1]) < need {
		if need <= clientStreamChunk {
			c.chunks = append(c.chunks, c.pool.get())
		} else {
			c.chunks = append(c.chunks, make([]byte, 0, need))
		}
		n++
	}
	last := len(c.chunks[n-1])
	c.chunks[n-1] = a.appendFormat(c.chunks[n-1], ev)
	c.pending += len(c.chunks[n-1]) - last
	c.cond.Signal()
	return nil
}

// read reads what the buffer holds, up to len(p), waiting while it holds
// nothing; the writer's end after the last byte.
func (c *clientStream) read(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		switch {
		case c.closed:
			return 0, io.ErrClosedPipe
		case c.pending > 0:
			n := 0
			for n < len(p) && c.pending > 0 {
				k := copy(p[n:], c.chunks[0][c.off:])
				n, c.off, c.pending = n+k, c.off+k, c.pending-k
				if c.off == len(c.chunks[0]) && len(c.chunks) > 1 {
					// Read whole, with more after it: let go.
					c.pool.put(c.chunks[0])
					c.chunks[0] = nil
					c.chunks, c.off = c.chunks[1:], 0
				}
			}
			if c.pending == 0 && cap(c.chunks[0]) > clientStreamChunk {
				c.chunks, c.off = nil, 0
			}
			c.cond.Signal()
			return n, nil
		case c.werr != nil:
			// All read, and no event comes after: the chunk kept for the
			// next events goes back to the pool.
			c.release()
			return 0, c.werr
		case len(p) == 0:
			return 0, nil
		}
		c.cond.Wait()
	}
}

// release gives the buffer's chunks to the pool and empties it.
func (c *clientStream) release() {
	for i, b := range c.chunks {
		c.pool.put(b)
		c.chunks[i] = nil
	}
	c.chunks, c.off, c.pending = nil, 0, 0
}

// chunkPool keeps the chunks of clientStreamChunk bytes of the client
// streams of one Transport, once their clients have read them, for its
// next streams: a stream writes its events into a few (3 KB of an
// Anthropic stream's 16), which are otherwise garbage once read. A
// chunk taken from the pool is written from its start, and a client
// reads only what was written: nothing of a stream before reaches
// another. Safe for concurrent use; the nil pool makes each chunk.
type chunkPool struct{ p sync.Pool }

// get returns an empty chunk of clientStreamChunk bytes.
func (cp *chunkPool) get() []byte {
	if cp != nil {
		if a, ok := cp.p.Get().(*[clientStreamChunk]byte); ok {
			return a[:0]
		}
	}
	return make([]byte, 0, clientStreamChunk)
}

// put keeps b, a chunk no one reads any more, if it is of
// clientStreamChunk bytes.
func (cp *chunkPool) put(b []byte) {
	if cp != nil && cap(b) == clientStreamChunk {
		cp.p.Put((*[clientStreamChunk]byte)(b[:clientStreamChunk]))
	}
}

// response is the client's committed response.
func (c *clientStream) response(req *http.Request) *http.Response {
	h := c.header
	if h == nil {
		h = http.Header{}
		h.Set("Content-Type", c.framing.contentType())
	}
	if _, ok := h["Content-Length"]; ok {
		// Only when it is there: a base transport may hand one header
		// to several answers, which a delete would write to at once.
		h.Del("Content-Length")
	}
	return &http.Response{
		Status:        statusLine(c.status),
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

func (b clientBody) Read(p []byte) (int, error) { return b.c.read(p) }

// Close stops the call: its upstream requests are cancelled and its
// writes fail. What the buffer held is dropped.
func (b clientBody) Close() error {
	b.c.cancel()
	c := b.c
	c.mu.Lock()
	c.closed = true
	c.release()
	c.cond.Broadcast()
	c.mu.Unlock()
	return nil
}

var errClientClosed = errors.New("httpguard: the client closed the response body")

// end closes the client's stream after the last event, or with err; the
// first end counts.
func (c *clientStream) end(err error) {
	if err == nil {
		err = io.EOF
	}
	c.mu.Lock()
	if c.werr == nil {
		c.werr = err
	}
	c.cond.Broadcast()
	c.mu.Unlock()
}

// dataType is the "type" member of an event's data ("" when it has
// none): the type of an Anthropic or Responses event.
func dataType(data []byte) string {
	var e struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(data, &e)
	return e.Type
}
