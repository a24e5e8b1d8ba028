package httpguard

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"mime"
)

// ndjsonFraming is newline-delimited JSON (application/x-ndjson): one JSON
// value per line, as Ollama's native API streams. A line is an event's
// Data, with the white space around it trimmed; Event is always "" (the
// lines name no type); blank lines are skipped. The framing does not
// check that a line is JSON: the protocol's assembler reads it.
type ndjsonFraming struct{}

func (ndjsonFraming) contentType() string { return "application/x-ndjson" }

// isStream: application/x-ndjson, or application/ndjson, with any
// parameters.
func (ndjsonFraming) isStream(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	return mt == "application/x-ndjson" || mt == "application/ndjson"
}

func (ndjsonFraming) newReader(r io.Reader, max int) eventReader {
	return &ndjsonReader{br: bufio.NewReaderSize(r, streamReadSize), max: max}
}

// format writes ev.Data on one line: a line end inside it (JSON that was
// indented) becomes a space, which JSON reads as the same value, since a
// JSON string holds no raw line end.
func (f ndjsonFraming) format(ev streamEvent) []byte {
	return f.appendFormat(make([]byte, 0, len(ev.Data)+1), ev)
}

// appendFormat appends ev to b as format writes it.
func (ndjsonFraming) appendFormat(b []byte, ev streamEvent) []byte {
	n := len(b)
	b = append(b, ev.Data...)
	for i, c := range b[n:] {
		if c == '\n' || c == '\r' {
			b[n+i] = ' '
		}
	}
	return append(b, '\n')
}

// ndjsonReader reads the lines of one NDJSON stream, bounded: a line
// longer than max is errTooLarge, found before more than max bytes and
// one buffer of the line are held.
type ndjsonReader struct {
	br  *bufio.Reader
	max int
	buf []byte
}

// next returns the next line that is not blank, in a slice of its own;
// io.EOF after the last. A last line without a line end is returned too.
func (r *ndjsonReader) next() (streamEvent, error) {
	for {
		ln, err := r.line()
		if err != nil {
			return streamEvent{}, err
		}
		if ln = bytes.TrimSpace(ln); len(ln) > 0 {
			return streamEvent{Data: append([]byte(nil), ln...)}, nil
		}
	}
}

// line reads one line with its end; the slice is valid until the next
// call.
func (r *ndjsonReader) line() ([]byte, error) {
	if cap(r.buf) > keepLineCap {
		r.buf = nil
	}
	r.buf = r.buf[:0]
	for {
		b, err := r.br.ReadSlice('\n')
		r.buf = append(r.buf, b...)
		// The line, less its end (\n or \r\n), must fit max.
		if len(bytes.TrimRight(r.buf, "\r\n")) > r.max {
			return nil, errTooLarge
		}
		switch {
		case err == nil:
			return r.buf, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(r.buf) > 0:
			return r.buf, nil
		default:
			return nil, err
		}
	}
}
