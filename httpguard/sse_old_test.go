package httpguard

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// The server-sent-events reader as it was before line found a line's end
// with two memchr scans and handed on a line whole in its buffer without
// a copy: every line copied into the reader's line buffer, found with
// bytes.IndexAny. Kept as the oracle FuzzSSEReader holds sseReader to.
type oldSSEReader struct {
	br     *bufio.Reader
	max    int
	buf    []byte
	eof    bool
	skipLF bool
}

func newOldSSEReader(r io.Reader, max int) *oldSSEReader {
	return &oldSSEReader{br: bufio.NewReaderSize(r, streamReadSize), max: max}
}

func (r *oldSSEReader) line() ([]byte, error) {
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
			r.skipLF = false
			if b[0] == '\n' {
				_, _ = r.br.Discard(1)
				continue
			}
		}
		i := bytes.IndexAny(b, "\r\n")
		if i < 0 {
			r.buf = append(r.buf, b...)
			_, _ = r.br.Discard(len(b))
			if len(r.buf) > r.max {
				return nil, errTooLarge
			}
			continue
		}
		r.buf = append(r.buf, b[:i]...)
		r.skipLF = b[i] == '\r'
		_, _ = r.br.Discard(i + 1)
		if len(r.buf) > r.max {
			return nil, errTooLarge
		}
		return r.buf, nil
	}
}

func (r *oldSSEReader) next() (streamEvent, error) {
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
			if has {
				data = append(data, '\n')
			}
			data = append(data, value...)
			has = true
			if len(data) > r.max {
				return streamEvent{}, errTooLarge
			}
		}
	}
}
