package httpguard

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"
)

// readFramed reads every event of r in framing f.
func readFramed(f framing, r io.Reader, max int) ([]streamEvent, error) {
	rd := f.newReader(r, max)
	var out []streamEvent
	for {
		ev, err := rd.next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, ev)
	}
}

func TestNDJSONReader(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string
	}{
		{"lines", "{\"a\":1}\n{\"b\":2}\n", []string{`{"a":1}`, `{"b":2}`}},
		{"crlf", "{\"a\":1}\r\n{\"b\":2}\r\n", []string{`{"a":1}`, `{"b":2}`}},
		{"blank lines skipped", "\n{\"a\":1}\n \t\r\n\n{\"b\":2}\n", []string{`{"a":1}`, `{"b":2}`}},
		{"space around trimmed", "  {\"a\":1}  \n", []string{`{"a":1}`}},
		{"cut off at the end", "{\"a\":1}\n{\"b\":2}", []string{`{"a":1}`, `{"b":2}`}},
		{"not JSON is the assembler's to refuse", "data: x\n", []string{`data: x`}},
		{"empty", "", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// One byte at a time too: lines split across reads.
			for _, r := range []io.Reader{strings.NewReader(tc.in), iotest.OneByteReader(strings.NewReader(tc.in))} {
				got, err := readFramed(ndjsonFraming{}, r, 1<<10)
				if err != nil {
					t.Fatal(err)
				}
				if len(got) != len(tc.want) {
					t.Fatalf("got %d events %q, want %q", len(got), got, tc.want)
				}
				for i := range got {
					if got[i].Event != "" || string(got[i].Data) != tc.want[i] {
						t.Errorf("event %d = %q, want data %q", i, got[i], tc.want[i])
					}
				}
			}
		})
	}
}

// Each event's Data is a slice of its own: reading the next line does not
// change an event already returned.
func TestNDJSONReaderEventsKeep(t *testing.T) {
	rd := ndjsonFraming{}.newReader(strings.NewReader("{\"a\":1}\n{\"b\":2}\n"), 1<<10)
	first, err := rd.next()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rd.next(); err != nil {
		t.Fatal(err)
	}
	if string(first.Data) != `{"a":1}` {
		t.Errorf("first event after reading the second = %q, want {\"a\":1}", first.Data)
	}
}

// countingReader counts the bytes read from r.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// endless is a stream of x that never ends a line.
type endless struct{}

func (endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	return len(p), nil
}

// A line is bounded: one of max bytes is read, one past it is errTooLarge,
// and an upstream that never ends its line is cut off at the bound, not
// read on.
func TestNDJSONReaderBounded(t *testing.T) {
	const max = 1 << 10
	at := strings.Repeat("x", max)
	if got, err := readFramed(ndjsonFraming{}, strings.NewReader(at+"\r\n"), max); err != nil || len(got) != 1 || len(got[0].Data) != max {
		t.Errorf("line of max bytes: %d events, %v; want it read", len(got), err)
	}
	if _, err := readFramed(ndjsonFraming{}, strings.NewReader(at+"x\n"), max); !errors.Is(err, errTooLarge) {
		t.Errorf("line of max+1 bytes: %v, want errTooLarge", err)
	}
	if _, err := readFramed(ndjsonFraming{}, strings.NewReader("{}\n"+at+"x"), max); !errors.Is(err, errTooLarge) {
		t.Errorf("last line of max+1 bytes without its end: %v, want errTooLarge", err)
	}
	src := &countingReader{r: endless{}}
	if _, err := readFramed(ndjsonFraming{}, src, max); !errors.Is(err, errTooLarge) {
		t.Fatalf("endless line: %v, want errTooLarge", err)
	}
	// bufio reads a buffer (4 KiB) at a time: the reader stops within one
	// buffer past the bound.
	if src.n > max+8<<10 {
		t.Errorf("endless line: read %d bytes before refusing it, want at most %d", src.n, max+8<<10)
	}
}

func TestNDJSONReaderError(t *testing.T) {
	r := io.MultiReader(strings.NewReader("{\"a\":1}\n{\"b\""), iotest.ErrReader(io.ErrUnexpectedEOF))
	got, err := readFramed(ndjsonFraming{}, r, 1<<10)
	if !errors.Is(err, io.ErrUnexpectedEOF) || len(got) != 1 {
		t.Errorf("broken stream: %d events, %v; want the whole line, then its error", len(got), err)
	}
}

// What format writes, the reader reads back as the same JSON value, one
// line per event, even when the value was indented.
func TestNDJSONFormatRoundTrip(t *testing.T) {
	evs := []streamEvent{
		{Data: []byte(`{"message":{"role":"assistant","content":"a\nb"},"done":false}`)},
		{Event: "ignored", Data: []byte("{\n  \"done\": true,\r\n  \"n\": [1,\n 2]\n}")},
	}
	var buf bytes.Buffer
	for _, ev := range evs {
		buf.Write(ndjsonFraming{}.format(ev))
	}
	if n := strings.Count(buf.String(), "\n"); n != len(evs) {
		t.Fatalf("format wrote %d lines for %d events: %q", n, len(evs), buf.String())
	}
	got, err := readFramed(ndjsonFraming{}, &buf, 1<<10)
	if err != nil || len(got) != len(evs) {
		t.Fatalf("read back %d events, %v", len(got), err)
	}
	for i := range evs {
		if got[i].Event != "" || !sameJSON(got[i].Data, evs[i].Data) {
			t.Errorf("event %d read back as %q, want the JSON of %q", i, got[i].Data, evs[i].Data)
		}
	}
	if !bytes.Equal(evs[1].Data, []byte("{\n  \"done\": true,\r\n  \"n\": [1,\n 2]\n}")) {
		t.Errorf("format changed the event it was given: %q", evs[1].Data)
	}
}

func TestFramingIsStream(t *testing.T) {
	tests := []struct {
		f    framing
		ct   string
		want bool
	}{
		{ndjsonFraming{}, "application/x-ndjson", true},
		{ndjsonFraming{}, "application/x-ndjson; charset=utf-8", true},
		{ndjsonFraming{}, "Application/NDJSON", true},
		{ndjsonFraming{}, "application/json", false},
		{ndjsonFraming{}, "text/event-stream", false},
		{ndjsonFraming{}, "", false},
		{sseFraming{}, "text/event-stream; charset=utf-8", true},
		{sseFraming{}, "application/x-ndjson", false},
	}
	for _, tc := range tests {
		if got := tc.f.isStream(tc.ct); got != tc.want {
			t.Errorf("%T.isStream(%q) = %v, want %v", tc.f, tc.ct, got, tc.want)
		}
	}
	if ct := (ndjsonFraming{}).contentType(); !(ndjsonFraming{}).isStream(ct) {
		t.Errorf("ndjsonFraming's own content type %q is not a stream to it", ct)
	}
}

// A gate that writes to bytes writes in its protocol's framing through
// framed; one that writes to an eventWriter hands events on whole.
func TestFramed(t *testing.T) {
	var buf bytes.Buffer
	w := framed(&buf, ndjsonFraming{})
	if err := writeEvent(w, streamEvent{Data: []byte(`{"done":true}`)}); err != nil {
		t.Fatal(err)
	}
	if buf.String() != "{\"done\":true}\n" {
		t.Errorf("framed NDJSON writer wrote %q, want one line", buf.String())
	}
	sink := &eventRecorder{}
	if got := framed(sink, ndjsonFraming{}); got != io.Writer(sink) {
		t.Errorf("framed(eventWriter) = %T, want the eventWriter itself", got)
	}
}

// eventRecorder is an eventWriter that keeps what it is given.
type eventRecorder struct{ evs []streamEvent }

func (r *eventRecorder) putEvent(ev streamEvent) error { r.evs = append(r.evs, ev); return nil }
func (r *eventRecorder) Write([]byte) (int, error)     { return 0, errors.New("bytes") }

// lengthFraming is a binary framing of the AWS event stream's kind: each
// frame is a length-prefixed type and a length-prefixed payload, with no
// line structure (payloads hold NUL and line ends).
type lengthFraming struct{}

func (lengthFraming) contentType() string     { return "application/x-test-frames" }
func (lengthFraming) isStream(ct string) bool { return ct == "application/x-test-frames" }
func (lengthFraming) format(ev streamEvent) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(len(ev.Event)))
	b = append(b, ev.Event...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(ev.Data)))
	return append(b, ev.Data...)
}
func (lengthFraming) newReader(r io.Reader, max int) eventReader {
	return &lengthReader{r: r, max: max}
}

type lengthReader struct {
	r   io.Reader
	max int
}

func (r *lengthReader) field() ([]byte, error) {
	var n [4]byte
	if _, err := io.ReadFull(r.r, n[:]); err != nil {
		return nil, err
	}
	size := binary.BigEndian.Uint32(n[:])
	if int64(size) > int64(r.max) {
		return nil, errTooLarge
	}
	b := make([]byte, size)
	if _, err := io.ReadFull(r.r, b); err != nil {
		return nil, io.ErrUnexpectedEOF
	}
	return b, nil
}

func (r *lengthReader) next() (streamEvent, error) {
	typ, err := r.field()
	if err != nil {
		return streamEvent{}, err
	}
	data, err := r.field()
	if err != nil {
		return streamEvent{}, io.ErrUnexpectedEOF
	}
	return streamEvent{Event: string(typ), Data: data}, nil
}

// binaryChat is Chat Completions streamed in binary frames: a protocol
// whose framing is not lines.
type binaryChat struct{ chatWire }

func (binaryChat) framing() framing { return lengthFraming{} }

// The client's stream is written in its protocol's framing, binary frames
// included, and names the framing's content type when the upstream named
// none.
func TestClientStreamWritesItsFraming(t *testing.T) {
	_, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := newClientStream(binaryChat{}, cancel)
	evs := []streamEvent{
		{Data: []byte(`{"choices":[{"index":0,"delta":{"role":"assistant"}}]}`)},
		{Event: "chunk", Data: []byte("{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\\n\"}}]}\n\x00")},
		{Data: []byte("[DONE]")},
	}
	go func() {
		for _, ev := range evs {
			if err := c.putEvent(ev); err != nil {
				c.end(err)
				return
			}
		}
		c.end(c.flush())
	}()
	<-c.committed
	resp := c.response(&http.Request{})
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "application/x-test-frames" {
		t.Errorf("Content-Type = %q, want the framing's", ct)
	}
	got, err := readFramed(lengthFraming{}, resp.Body, 1<<10)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(evs) {
		t.Fatalf("client read %d frames %q, want %d", len(got), got, len(evs))
	}
	for i := range evs {
		if got[i].Event != evs[i].Event || !bytes.Equal(got[i].Data, evs[i].Data) {
			t.Errorf("frame %d = %q, want %q", i, got[i], evs[i])
		}
	}
}

// appendFormat appends to what b holds exactly what format returns, for
// the framings that format in place and for one that does not.
func TestAppendFormatIsFormat(t *testing.T) {
	evs := []streamEvent{
		{Data: []byte(`{"a":1}`)},
		{Event: "message_start", Data: []byte(`{"type":"message_start"}`)},
		{Data: []byte("{\n  \"a\": \"x\"\r\n}")},
		{Event: "ping", Data: []byte("")},
		{Data: []byte("line\n\nafter")},
	}
	for _, f := range []framing{sseFraming{}, ndjsonFraming{}, lengthFraming{}} {
		for _, ev := range evs {
			got := appendFormat(f, []byte("prefix"), ev)
			if want := append([]byte("prefix"), f.format(ev)...); !bytes.Equal(got, want) {
				t.Errorf("%T %q: appendFormat gives %q, want %q", f, ev.Data, got, want)
			}
		}
	}
}
