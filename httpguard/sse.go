package httpguard

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"
)

// sseFraming is server-sent events, the framing of every protocol here
// (see stream.go): an event's event field is Event ("" when absent) and
// its data lines joined with "\n" are Data.
type sseFraming struct{}

func (sseFraming) contentType() string { return "text/event-stream" }

func (sseFraming) isStream(ct string) bool {
	return strings.HasPrefix(strings.ToLower(strings.TrimSpace(ct)), "text/event-stream")
}

func (sseFraming) newReader(r io.Reader, max int) eventReader { return newSSEReader(r, max) }

func (sseFraming) format(ev streamEvent) []byte { return formatEvent(ev) }

func (sseFraming) appendFormat(b []byte, ev streamEvent) []byte { return appendEvent(b, ev) }

// sseReader reads server-sent events from a stream, bounded: a line or an
// event's data longer than max is errTooLarge.
type sseReader struct {
	br  *bufio.Reader
	max int
	buf []byte
	// room is where events' data are copied to, an event after another:
	// made for one event's data and those of the events its buffer holds
	// after it (see appendData), so that the events of one upstream read
	// take one allocation, not one each. An event's data is a slice of it
	// with no capacity past its end, so that whoever appends to one does
	// not write over the next; a room lives as long as one of its events
	// does. Let go before a read that waits on the upstream.
	room   []byte
	eof    bool
	skipLF bool
}

func newSSEReader(r io.Reader, max int) *sseReader {
	return &sseReader{br: bufio.NewReaderSize(r, streamReadSize), max: max}
}

// streamReadSize is the buffer a stream's reader reads its upstream
// through. The upstream's body is buffered already (net/http reads a
// connection through 4 KiB of its own), so this one only spares a Read
// per line: a few events' worth will do, and a stream held in flight
// holds it for as long as it lasts. A line longer than it is read on
// into the line's own buffer.
const streamReadSize = 1 << 10

// keepLineCap is the largest line buffer a reader keeps between lines: one
// grown past it by a long line (up to MaxBody) is let go, so that a stream
// does not hold its longest line for the rest of its life.
const keepLineCap = 32 << 10

// line reads one line without its end (\n, \r\n or \r). The slice is
// valid until the next call: a line the buffer holds whole is a slice of
// it, not copied; one that spans reads is gathered in the line buffer. It
// takes what the buffer holds at once, up to the first line end, and
// waits for more only when the buffer holds no line end: a line ended by
// a lone \r is returned without waiting for the byte after it.
func (r *sseReader) line() ([]byte, error) {
	if cap(r.buf) > keepLineCap {
		r.buf = nil
	}
	r.buf = r.buf[:0]
	for {
		if r.br.Buffered() == 0 {
			if _, err := r.br.Peek(1); err != nil {
				if errors.Is(err, io.EOF) && len(r.buf) > 0 {
					r.eof = true
					return r.buf, nil
				}
				return nil, err
			}
		}
		b, _ := r.br.Peek(r.br.Buffered())
		if r.skipLF {
			// The line before ended with \r: a \n right after it belongs
			// to that end.
			r.skipLF = false
			if b[0] == '\n' {
				_, _ = r.br.Discard(1)
				continue
			}
		}
		i := lineEnd(b)
		if i < 0 {
			r.buf = append(r.buf, b...)
			_, _ = r.br.Discard(len(b))
			if len(r.buf) > r.max {
				return nil, errTooLarge
			}
			continue
		}
		r.skipLF = b[i] == '\r'
		_, _ = r.br.Discard(i + 1)
		if len(r.buf) == 0 {
			// Whole in the buffer, which Discard leaves as it is until
			// the next read.
			b = b[:i]
		} else {
			r.buf = append(r.buf, b[:i]...)
			b = r.buf
		}
		if len(b) > r.max {
			return nil, errTooLarge
		}
		return b, nil
	}
}

// lineEnd returns the index of the first \n or \r in b, -1 if none: two
// memchr scans, the second over the line the first found, where
// bytes.IndexAny tests each byte against the set.
func lineEnd(b []byte) int {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		i = len(b)
	}
	if j := bytes.IndexByte(b[:i], '\r'); j >= 0 {
		return j
	}
	if i == len(b) {
		return -1
	}
	return i
}

// next returns the next event with data; io.EOF after the last. An event
// cut off by the end of the stream (no blank line after it) is returned
// too, as the SDKs do.
func (r *sseReader) next() (streamEvent, error) {
	if r.br.Buffered() == 0 || cap(r.room) > keepLineCap {
		// Its next line waits on the upstream: a stream held in flight
		// holds no room for events to come. Nor does an event after a
		// long one share its room, which would keep it for as long as
		// the small one lives.
		r.room = nil
	}
	var ev streamEvent
	var data []byte
	has := false
	for {
		if r.eof {
			if has {
				ev.Data = data
				return ev, nil
			}
			return streamEvent{}, io.EOF
		}
		ln, err := r.line()
		if errors.Is(err, io.EOF) {
			r.eof = true
			continue
		}
		if err != nil {
			return streamEvent{}, err
		}
		if len(ln) == 0 {
			if has {
				ev.Data = data
				return ev, nil
			}
			ev = streamEvent{}
			continue
		}
		if ln[0] == ':' {
			continue // comment
		}
		name, value, _ := bytes.Cut(ln, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(name) {
		case "event":
			ev.Event = eventName(value)
		case "data":
			data = r.appendData(data, value, has)
			has = true
			if len(data) > r.max {
				return streamEvent{}, errTooLarge
			}
		}
	}
}

// appendData appends a data line's value to data, the data so far of the
// event being read (the end of r.room), after a \n when more, and returns
// the event's data, capacity cut at its end. Data that stays empty stays
// nil, as append leaves it. When the room has no space left for value, a
// new one is made for the data so far, value and the lines the buffer
// holds whole besides (the data of their events is no longer), and the
// data so far copied to it: no larger than the event's data and the
// line, both bounded, and the buffer. value may be a slice of the buffer:
// Peek of what it holds already does not read.
func (r *sseReader) appendData(data, value []byte, more bool) []byte {
	n := len(value)
	if more {
		n++
	}
	if n == 0 {
		return data
	}
	if cap(r.room)-len(r.room) < n {
		// Room besides for the lines the buffer holds whole: a line cut
		// by the buffer's end comes whole later and would not fit in
		// what its start left.
		b, _ := r.br.Peek(r.br.Buffered())
		room := make([]byte, 0, len(data)+n+bytes.LastIndexByte(b, '\n')+1)
		r.room = append(room, data...)
	}
	start := len(r.room) - len(data)
	if more {
		r.room = append(r.room, '\n')
	}
	r.room = append(r.room, value...)
	return r.room[start:len(r.room):len(r.room)]
}

// formatEvent returns ev as the bytes of a server-sent event.
func formatEvent(ev streamEvent) []byte {
	n := len(ev.Data) + len("data: \n\n")
	if ev.Event != "" {
		n += len("event: \n") + len(ev.Event)
	}
	n += bytes.Count(ev.Data, []byte("\n")) * len("data: ")
	return appendEvent(make([]byte, 0, n), ev)
}

// appendEvent appends ev to b as the bytes of a server-sent event: the
// client's stream formats into its buffer with it, a slice per event
// spared.
func appendEvent(b []byte, ev streamEvent) []byte {
	if ev.Event != "" {
		b = append(b, "event: "...)
		b = append(b, ev.Event...)
		b = append(b, '\n')
	}
	data := ev.Data
	for {
		ln, rest, more := bytes.Cut(data, []byte("\n"))
		b = append(b, "data: "...)
		b = append(b, ln...)
		b = append(b, '\n')
		if !more {
			break
		}
		data = rest
	}
	return append(b, '\n')
}

// eventName returns the event field value b as a string: an Anthropic or
// OpenAI Responses event type (every event of theirs names its type) as
// the constant their decoders use, without an allocation; any other
// copied.
func eventName(b []byte) string {
	if t, ok := messagesType(b); ok {
		return t
	}
	if t, ok := responsesType(b); ok {
		return t
	}
	return string(b)
}
