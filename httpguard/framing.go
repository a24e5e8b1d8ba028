package httpguard

import "io"

// framing is how a stream's bytes are cut into events and written back:
// server-sent events (sseFraming), one JSON value per line (ndjsonFraming),
// and binary frames such as the AWS event stream's (a prelude with lengths
// and CRCs, headers, a payload) fit it alike, since it reads from and
// writes to bytes, never lines. Each protocol names its framing
// (wireProtocol.framing); the transport reads the upstream stream and
// writes the client's through it, and the gates see only streamEvents.
//
// A framing maps its frames onto a streamEvent: its type, where the frame
// names one, to Event (an SSE event field; an event-stream frame's
// :event-type header), and its payload to Data. A framing is a value with
// no state; its reader holds the state of one stream.
type framing interface {
	// contentType is the Content-Type of a stream in this framing, for a
	// client's response whose upstream named none.
	contentType() string
	// isStream reports whether an upstream response whose Content-Type is
	// ct is a stream in this framing.
	isStream(ct string) bool
	// newReader returns a reader of the events of the stream r, bounded:
	// a frame (a line, an event, a payload) past max bytes is errTooLarge,
	// and nothing past the bound is buffered.
	newReader(r io.Reader, max int) eventReader
	// format returns ev as the bytes the client reads.
	format(ev streamEvent) []byte
}

// appendFramer is a framing that formats in place: appendFormat appends to
// b what format returns. The client's stream formats each event into its
// buffer with it; a framing without it (the AWS event stream's, whose
// prelude carries the frame's length and CRC) is copied from format.
type appendFramer interface {
	appendFormat(b []byte, ev streamEvent) []byte
}

// appendFormat appends ev to b as f formats it.
func appendFormat(f framing, b []byte, ev streamEvent) []byte {
	if a, ok := f.(appendFramer); ok {
		return a.appendFormat(b, ev)
	}
	return append(b, f.format(ev)...)
}

// eventReader reads one stream's events in its framing.
type eventReader interface {
	// next returns the next event; io.EOF after the last. An event cut
	// off by the end of the stream is returned, as the SDKs read it.
	next() (streamEvent, error)
}

// framed returns a writer that gates write events to in framing f: w when
// it takes events whole (an eventWriter: the sink outside, the client's
// stream), else w with each event formatted by f. A protocol whose
// framing is not SSE hands its gate framed(w, f), since writeEvent
// formats server-sent events for a writer that takes bytes.
func framed(w io.Writer, f framing) io.Writer {
	if _, ok := w.(eventWriter); ok {
		return w
	}
	return framedWriter{w: w, f: f}
}

// framedWriter writes events to w formatted by f.
type framedWriter struct {
	w io.Writer
	f framing
}

func (w framedWriter) putEvent(ev streamEvent) error {
	_, err := w.w.Write(w.f.format(ev))
	if f, ok := w.w.(interface{ Flush() }); ok && err == nil {
		f.Flush()
	}
	return err
}

// Write writes p as it is: bytes already in the framing.
func (w framedWriter) Write(p []byte) (int, error) { return w.w.Write(p) }
