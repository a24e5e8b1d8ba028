package mcpguard

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// Server-sent events, as the Streamable HTTP transport sends them: the
// transport reads a stream event by event, hands each on as it came unless
// it must change it, and never holds more than one event.

// errEventTooLarge is returned by [eventReader.next] for an event past the
// reader's bound.
var errEventTooLarge = errors.New("a server-sent event is larger than mcpguard.MaxBody")

// eventReader reads the events of a stream.
type eventReader struct {
	br  *bufio.Reader
	max int
}

func newEventReader(r io.Reader, max int) *eventReader {
	return &eventReader{br: bufio.NewReader(r), max: max}
}

// event is one server-sent event: its bytes as read, up to and including
// the blank line that ends it (or the stream's end), and the value of its
// data lines joined by "\n" (nil when it has none).
type event struct {
	raw  []byte
	data []byte
}

// next reads the next event. At the end of the stream it returns the
// bytes after the last event (an event the stream ended before its blank
// line, or nothing) with io.EOF. An event past the bound is returned as
// far as it was read with errEventTooLarge.
func (er *eventReader) next() (event, error) {
	var ev event
	for {
		line, err := er.br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			err = nil
			line = append([]byte(nil), line...)
			for {
				more, merr := er.br.ReadSlice('\n')
				line = append(line, more...)
				if len(ev.raw)+len(line) > er.max {
					return event{raw: append(ev.raw, line...)}, errEventTooLarge
				}
				if merr != bufio.ErrBufferFull {
					err = merr
					break
				}
			}
		}
		if len(ev.raw)+len(line) > er.max {
			return event{raw: append(ev.raw, line...)}, errEventTooLarge
		}
		ev.raw = append(ev.raw, line...)
		if err != nil {
			if len(line) > 0 {
				ev.addLine(line)
			}
			return ev, err
		}
		if len(bytes.TrimRight(line, "\r\n")) == 0 {
			return ev, nil // the event's end (or a lone blank line)
		}
		ev.addLine(line)
	}
}

// addLine records line's value when it is a data line.
func (ev *event) addLine(line []byte) {
	line = bytes.TrimRight(line, "\r\n")
	v, ok := bytes.CutPrefix(line, []byte("data"))
	if !ok || len(v) > 0 && v[0] != ':' {
		return
	}
	if len(v) > 0 {
		v = v[1:]
		v, _ = bytes.CutPrefix(v, []byte(" "))
	}
	if ev.data != nil {
		ev.data = append(ev.data, '\n')
	} else {
		ev.data = []byte{}
	}
	ev.data = append(ev.data, v...)
}

// replaceData returns ev's bytes with its data lines replaced by one line
// holding data (other fields, such as the event's id, kept in place).
func (ev *event) replaceData(data []byte) []byte {
	var out []byte
	wrote := false
	rest := ev.raw
	for len(rest) > 0 {
		i := bytes.IndexByte(rest, '\n')
		line := rest
		if i >= 0 {
			line, rest = rest[:i+1], rest[i+1:]
		} else {
			rest = nil
		}
		trimmed := bytes.TrimRight(line, "\r\n")
		if v, ok := bytes.CutPrefix(trimmed, []byte("data")); ok && (len(v) == 0 || v[0] == ':') {
			if !wrote {
				out = append(out, "data: "...)
				out = append(out, data...)
				out = append(out, '\n')
				wrote = true
			}
			continue
		}
		if len(trimmed) == 0 && !wrote {
			out = append(out, "data: "...)
			out = append(out, data...)
			out = append(out, '\n')
			wrote = true
		}
		out = append(out, line...)
	}
	if !wrote {
		out = append(out, "data: "...)
		out = append(out, data...)
		out = append(out, "\n\n"...)
	}
	return out
}

// sseEvent returns one event holding data, as the transport writes its
// own answers.
func sseEvent(data []byte) []byte {
	out := make([]byte, 0, len(data)+24)
	out = append(out, "event: message\ndata: "...)
	out = append(out, data...)
	return append(out, "\n\n"...)
}

// eventFilter is a stream's body as the client reads it: each event passes
// through fn, which returns the bytes to hand on (nil: the event as it
// came) and whether to stop reading the stream after them.
type eventFilter struct {
	up   io.ReadCloser
	er   *eventReader
	fn   func(ev event, err error) (out []byte, stop bool)
	buf  []byte
	err  error // to return once buf is drained
	pass bool  // copy the rest of the stream as it comes
}

func newEventFilter(up io.ReadCloser, fn func(ev event, err error) ([]byte, bool)) *eventFilter {
	return &eventFilter{up: up, er: newEventReader(up, MaxBody), fn: fn}
}

// Read hands on the filtered stream.
func (f *eventFilter) Read(p []byte) (int, error) {
	for len(f.buf) == 0 {
		if f.err != nil {
			return 0, f.err
		}
		if f.pass {
			return f.er.br.Read(p)
		}
		ev, err := f.er.next()
		out, stop := f.fn(ev, err)
		if out == nil {
			out = ev.raw
		}
		f.buf = out
		switch {
		case stop:
			f.err = io.EOF
		case err == errEventTooLarge:
			f.pass = true
		case err != nil:
			f.err = err
		}
	}
	n := copy(p, f.buf)
	f.buf = f.buf[n:]
	return n, nil
}

// Close closes the upstream body.
func (f *eventFilter) Close() error { return f.up.Close() }
