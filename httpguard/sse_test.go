package httpguard

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func readAll(t *testing.T, r io.Reader, max int) ([]streamEvent, error) {
	t.Helper()
	rd := newSSEReader(r, max)
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

func TestSSEReader(t *testing.T) {
	tests := []struct {
		name, in string
		want     []streamEvent
	}{
		{"data only", "data: {\"a\":1}\n\ndata: [DONE]\n\n", []streamEvent{{Data: []byte(`{"a":1}`)}, {Data: []byte("[DONE]")}}},
		{"typed", "event: message_start\ndata: {}\n\n", []streamEvent{{Event: "message_start", Data: []byte("{}")}}},
		{"crlf", "data: a\r\n\r\ndata: b\r\n\r\n", []streamEvent{{Data: []byte("a")}, {Data: []byte("b")}}},
		{"lone cr", "data: a\r\rdata: b\r\r", []streamEvent{{Data: []byte("a")}, {Data: []byte("b")}}},
		{"multi-line data", "data: a\ndata: b\n\n", []streamEvent{{Data: []byte("a\nb")}}},
		{"comment and ping line", ": keep-alive\n\nevent: ping\ndata: {\"type\":\"ping\"}\n\n", []streamEvent{{Event: "ping", Data: []byte(`{"type":"ping"}`)}}},
		{"no space after colon", "data:x\n\n", []streamEvent{{Data: []byte("x")}}},
		{"unknown fields ignored", "id: 7\nretry: 10\ndata: x\n\n", []streamEvent{{Data: []byte("x")}}},
		{"event without data dropped", "event: a\n\ndata: b\n\n", []streamEvent{{Data: []byte("b")}}},
		{"cut off at the end", "data: a\n\ndata: b", []streamEvent{{Data: []byte("a")}, {Data: []byte("b")}}},
		{"empty", "", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// One byte at a time too: events split across reads.
			for _, r := range []io.Reader{strings.NewReader(tc.in), iotest.OneByteReader(strings.NewReader(tc.in))} {
				got, err := readAll(t, r, 1<<10)
				if err != nil {
					t.Fatal(err)
				}
				if len(got) != len(tc.want) {
					t.Fatalf("got %d events %q, want %q", len(got), got, tc.want)
				}
				for i := range got {
					if got[i].Event != tc.want[i].Event || !bytes.Equal(got[i].Data, tc.want[i].Data) {
						t.Errorf("event %d = %q, want %q", i, got[i], tc.want[i])
					}
				}
			}
		})
	}
}

// The reader holds at most its bound of one line or one event's data,
// however long the upstream line runs.
func TestSSEReaderBounded(t *testing.T) {
	long := io.MultiReader(strings.NewReader("data: "), iotest.OneByteReader(strings.NewReader(strings.Repeat("x", 1<<20))))
	if _, err := readAll(t, long, 1<<10); !errors.Is(err, errTooLarge) {
		t.Errorf("long line: %v, want errTooLarge", err)
	}
	many := strings.Repeat("data: xxxxxxxx\n", 1<<10) + "\n"
	if _, err := readAll(t, strings.NewReader(many), 1<<10); !errors.Is(err, errTooLarge) {
		t.Errorf("many data lines: %v, want errTooLarge", err)
	}
	if _, err := readAll(t, iotest.ErrReader(io.ErrUnexpectedEOF), 1<<10); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("broken stream: %v, want its error", err)
	}
}

func TestWriteEventRoundTrip(t *testing.T) {
	evs := []streamEvent{{Event: "message_start", Data: []byte(`{"a":1}`)}, {Data: []byte("x\ny")}, {Data: []byte("[DONE]")}}
	var buf bytes.Buffer
	for _, ev := range evs {
		if err := writeEvent(&buf, ev); err != nil {
			t.Fatal(err)
		}
	}
	got, err := readAll(t, &buf, 1<<10)
	if err != nil || len(got) != 3 || got[0].Event != "message_start" || string(got[1].Data) != "x\ny" {
		t.Errorf("round trip = %q, %v", got, err)
	}
}

func TestReadBounded(t *testing.T) {
	if b, err := readBounded(strings.NewReader("12345"), 5); err != nil || string(b) != "12345" {
		t.Errorf("readBounded at the bound = %q, %v", b, err)
	}
	b, err := readBounded(strings.NewReader("123456789"), 5)
	if !errors.Is(err, errTooLarge) || string(b) != "123456" {
		t.Errorf("readBounded past the bound = %q, %v; want the bound+1 bytes read and errTooLarge", b, err)
	}
}

// A reader lets go of a line buffer that a long line grew, and an SSE
// reader of the room it made for a long event's data: a stream held in
// flight after it holds no more than keepLineCap of either, and the event
// after it does not share the long one's room.
func TestStreamReadersLetLongLinesGo(t *testing.T) {
	long := strings.Repeat("x", 4*keepLineCap)
	for name, rd := range map[string]interface {
		eventReader
		lineCap() int
	}{
		"sse":    sseLineCap{newSSEReader(strings.NewReader("data: "+long+"\n\ndata: {}\n\n"), MaxBody)},
		"ndjson": ndjsonLineCap{ndjsonFraming{}.newReader(strings.NewReader(long+"\n{}\n"), MaxBody).(*ndjsonReader)},
	} {
		for i := range 2 {
			if _, err := rd.next(); err != nil {
				t.Fatalf("%s: event %d: %v", name, i, err)
			}
		}
		if c := rd.lineCap(); c > keepLineCap {
			t.Errorf("%s: after a short line the reader holds a line buffer of %d bytes, past %d", name, c, keepLineCap)
		}
	}
}

type sseLineCap struct{ *sseReader }

func (r sseLineCap) lineCap() int { return max(cap(r.buf), cap(r.room)) }

type ndjsonLineCap struct{ *ndjsonReader }

func (r ndjsonLineCap) lineCap() int { return cap(r.buf) }

// An event name a stream sends with every event is read without an
// allocation; any name is read as it came.
func TestEventName(t *testing.T) {
	for _, name := range []string{"message_start", "response.output_text.delta", "ping", "x-custom", "", "Message_Start"} {
		if got := eventName([]byte(name)); got != name {
			t.Errorf("eventName(%q) = %q", name, got)
		}
	}
	b := []byte("content_block_delta")
	if n := testing.AllocsPerRun(100, func() { _ = eventName(b) }); n != 0 {
		t.Errorf("eventName of a known name allocates %v times, want 0", n)
	}
}

// The events of one upstream read take one allocation for their data
// between them, not one each: a reader of eight events in one read makes
// itself (the reader, its bufio.Reader and buffer) and one room.
func TestSSEReaderDataOnePerRead(t *testing.T) {
	in := []byte(strings.Repeat("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1}\n\n", 8))
	src := bytes.NewReader(in)
	n := testing.AllocsPerRun(100, func() {
		src.Reset(in)
		rd := newSSEReader(src, MaxBody)
		for {
			if _, err := rd.next(); err != nil {
				break
			}
		}
	})
	if n > 4 {
		t.Errorf("reading 8 events of one read allocates %v times, want 4 at most", n)
	}
}

// waitingReader hands out one event per Read and records, at each, how
// many bytes of room for data the SSE reader reading it holds.
type waitingReader struct {
	events [][]byte
	rd     *sseReader
	held   []int
}

func (w *waitingReader) Read(p []byte) (int, error) {
	w.held = append(w.held, cap(w.rd.room))
	if len(w.events) == 0 {
		return 0, io.EOF
	}
	n := copy(p, w.events[0])
	w.events = w.events[1:]
	return n, nil
}

// A reader that waits on the upstream between events holds no room for
// their data: a stream held in flight holds only the events its gates
// keep.
func TestSSEReaderHoldsNoRoomWhileWaiting(t *testing.T) {
	w := &waitingReader{events: [][]byte{[]byte("event: a\ndata: {\"x\":1}\n\n"), []byte("data: {\"y\":2}\n\n"), []byte(": ping\n\ndata: z\n\n")}}
	w.rd = newSSEReader(w, MaxBody)
	var err error
	for {
		if _, err = w.rd.next(); err != nil {
			break
		}
	}
	if !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	for i, c := range w.held {
		if c != 0 {
			t.Errorf("read %d: the reader held %d bytes of room while it waited", i, c)
		}
	}
}
