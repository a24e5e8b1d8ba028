package httpguard

// Newline-delimited JSON framing, as Ollama's native API streams: one JSON
// value per line (Content-Type application/x-ndjson), no event names, no
// end marker (the last value says it is the last). A line is carried
// through the gates as an sseEvent whose Data is the line and whose Event
// is "", so that the assemblers, gates and stages written for server-sent
// events serve it unchanged; only the reading and the writing differ.

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"mime"
	"net/http"
)

// ndjsonContentType is the Content-Type of an NDJSON stream, as Ollama
// sends it.
const ndjsonContentType = "application/x-ndjson"

// isNDJSON reports whether hr is an NDJSON stream: its Content-Type is
// application/x-ndjson (or application/ndjson, or application/jsonl, the
// other names the format goes by), parameters aside.
func isNDJSON(hr *http.Response) bool {
	mt, _, err := mime.ParseMediaType(hr.Header.Get("Content-Type"))
	if err != nil {
		return false
	}
	switch mt {
	case ndjsonContentType, "application/ndjson", "application/jsonl":
		return true
	}
	return false
}

// ndjsonReader reads the lines of an NDJSON stream, bounded: a line longer
// than max is errTooLarge, and nothing past max+1 bytes of one line is
// kept.
type ndjsonReader struct {
	br  *bufio.Reader
	max int
	buf []byte
	eof bool
}

func newNDJSONReader(r io.Reader, max int) *ndjsonReader {
	return &ndjsonReader{br: bufio.NewReader(r), max: max}
}

// next returns the next line that is not blank as an event (Data the line
// without its end, \n or \r\n); io.EOF after the last. A last line that
// the stream ends without a newline is returned too.
func (r *ndjsonReader) next() (sseEvent, error) {
	for {
		if r.eof {
			return sseEvent{}, io.EOF
		}
		ln, err := r.line()
		if errors.Is(err, io.EOF) {
			r.eof = true
			if len(bytes.TrimSpace(ln)) == 0 {
				return sseEvent{}, io.EOF
			}
		} else if err != nil {
			return sseEvent{}, err
		}
		ln = bytes.TrimSuffix(ln, []byte("\r"))
		if len(bytes.TrimSpace(ln)) == 0 {
			continue
		}
		// A copy: gates may keep an event past the next read.
		return sseEvent{Data: append([]byte(nil), ln...)}, nil
	}
}

// line reads up to the next \n, without it; io.EOF with what was read
// when the stream ends first.
func (r *ndjsonReader) line() ([]byte, error) {
	r.buf = r.buf[:0]
	for {
		chunk, err := r.br.ReadSlice('\n')
		n := len(r.buf) + len(chunk)
		if err == nil {
			n-- // the \n ends the line, it is not part of it
		}
		if n > r.max {
			return nil, errTooLarge
		}
		r.buf = append(r.buf, chunk...)
		switch {
		case err == nil:
			return r.buf[:len(r.buf)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return r.buf, err
		}
	}
}

// formatNDJSON returns ev's data as one NDJSON line: compacted, so that a
// value the guard wrote with line breaks still takes one line, and ended
// with \n.
func formatNDJSON(ev sseEvent) []byte {
	data := ev.Data
	if bytes.ContainsAny(data, "\r\n") {
		data = compact(data)
	}
	out := make([]byte, 0, len(data)+1)
	out = append(out, data...)
	return append(out, '\n')
}
