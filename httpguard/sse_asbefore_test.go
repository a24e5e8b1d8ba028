package httpguard

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// chunkReader hands s out in reads whose sizes cycle through sizes (a
// size byte k below 128 is k bytes, 0 the whole of p; from 128 up it is
// (k-127)*16 bytes, past the reader's 1 KiB buffer at the top), then
// ends with end.
type chunkReader struct {
	s     []byte
	sizes []byte
	i     int
	end   error
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.s) == 0 {
		return 0, r.end
	}
	n := len(p)
	if len(r.sizes) > 0 {
		k := int(r.sizes[r.i%len(r.sizes)])
		r.i++
		switch {
		case k == 0:
		case k < 128:
			n = k
		default:
			n = (k - 127) * 16
		}
	}
	n = copy(p[:min(n, len(p))], r.s)
	r.s = r.s[n:]
	return n, nil
}

var errBrokenUpstream = errors.New("broken upstream")

// sseRun is what a reader made of a stream: every event, kept until the
// end (so that an event whose bytes the reader reused would show), and
// how it ended.
type sseRun struct {
	events []streamEvent
	err    error
}

func readSSERun(next func() (streamEvent, error)) sseRun {
	var run sseRun
	for {
		ev, err := next()
		if errors.Is(err, io.EOF) {
			return run
		}
		if err != nil {
			run.err = err
			return run
		}
		run.events = append(run.events, ev)
	}
}

// sseAsBefore reads in through sseReader and through the oracle
// oldSSEReader, chunked by sizes and ended by end, and reports how they
// differ: the events (name, data, data's nil-ness), the client's bytes
// appendEvent makes of them, and the error.
func sseAsBefore(in, sizes []byte, max int, end error) string {
	mk := func() io.Reader { return &chunkReader{s: in, sizes: sizes, end: end} }
	nr, or := newSSEReader(mk(), max), newOldSSEReader(mk(), max)
	got, want := readSSERun(nr.next), readSSERun(or.next)
	for _, ev := range got.events {
		// Whoever appends to an event's data writes over no other's.
		_ = append(ev.Data, "\x00overwritten"...)
	}
	if g, w := errClass(got.err), errClass(want.err); g != w {
		return fmt.Sprintf("error %s, want %s", g, w)
	}
	if len(got.events) != len(want.events) {
		return fmt.Sprintf("%d events, want %d", len(got.events), len(want.events))
	}
	var gb, wb []byte
	for i, g := range got.events {
		w := want.events[i]
		if g.Event != w.Event || !bytes.Equal(g.Data, w.Data) || (g.Data == nil) != (w.Data == nil) || g.parsed != nil {
			return fmt.Sprintf("event %d = %q %q (nil %t), want %q %q (nil %t)", i, g.Event, g.Data, g.Data == nil, w.Event, w.Data, w.Data == nil)
		}
		gb, wb = appendEvent(gb, g), appendEvent(wb, w)
	}
	if !bytes.Equal(gb, wb) {
		return "client bytes differ"
	}
	return ""
}

// errClass names how a read ended: cleanly, past the bound, with the
// upstream's error, or with any other error (by its text).
func errClass(err error) string {
	switch {
	case err == nil:
		return "end"
	case errors.Is(err, errTooLarge):
		return "too large"
	case errors.Is(err, errBrokenUpstream):
		return "upstream's error"
	}
	return err.Error()
}

// sseEdgeCases are streams at the reader's edges: a \r at the end of the
// 1 KiB buffer with its \n in the next read, lines longer than the buffer,
// lines and data past a small max, an event cut by the end, comments,
// empty and colonless data lines, fields without the space, small events
// after one whose room passes keepLineCap.
func sseEdgeCases() []string {
	x := func(n int) string { return strings.Repeat("x", n) }
	return []string{
		"data: " + x(1024-len("data: ")-1) + "\r\ndata: b\r\n\r\n",
		"data: " + x(1024-len("data: ")) + "\r\ndata: b\r\r",
		"data: " + x(1024-len("data: ")-1) + "\r" + "\r\n",
		"event: message_start\ndata: " + x(3000) + "\n\ndata: y\n\n",
		"data: " + x(keepLineCap+100) + "\n\ndata: y\n\nevent: e\ndata: z\n\n",
		"data: " + x(200) + "\ndata: " + x(200) + "\ndata: " + x(200) + "\n\n",
		"data: a\n\ndata: b",
		"event: a\ndata: b\ndata:",
		": keep-alive\n\n:\ndata: x\n: c\n\n",
		"data:\n\ndata\n\ndata: \ndata:\n\n",
		"event:x\ndata:y\n\nevent\ndata\n\n",
		"id: 7\nretry: 10\nevent: ping\ndata: {}\n\n",
		"event: a\n\nevent: b\nevent: c\ndata: d\n\n",
		"\r\n\r\n\n\r\rdata: z\r\n",
		"data: a\r\n\r\n",
		"\r",
		"",
	}
}

func sseSeeds(t testing.TB) [][]byte {
	files, err := filepath.Glob(filepath.Join(wireDir, "*", "*.sse"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no SSE fixtures: %v", err)
	}
	var seeds [][]byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		seeds = append(seeds, b)
	}
	for _, s := range sseEdgeCases() {
		seeds = append(seeds, []byte(s))
	}
	return seeds
}

// sseChunkings are the read sizes the tests cut a stream into: whole
// reads, a byte at a time, odd sizes that split lines and \r\n, and
// reads longer than the reader's buffer.
var sseChunkings = [][]byte{nil, {1}, {7, 3}, {100, 1, 13}, {255, 5}, {0, 1}}

// sseMaxes are the bounds the tests read at: one a long fixture line
// passes, a tiny one, and one no line reaches.
var sseMaxes = []int{MaxBody, 64, 300}

// sseReader reads every fixture and edge case, however it is cut into
// reads, at every bound and with either end of the stream, as the reader
// before it did: the same events, the same client bytes, the same error.
func TestSSEReaderAsBefore(t *testing.T) {
	for i, in := range sseSeeds(t) {
		for _, sizes := range sseChunkings {
			for _, max := range sseMaxes {
				for _, end := range []error{io.EOF, errBrokenUpstream} {
					if d := sseAsBefore(in, sizes, max, end); d != "" {
						t.Errorf("seed %d (%.40q), reads %v, max %d, end %v: %s", i, in, sizes, max, end, d)
					}
				}
			}
		}
	}
}

// FuzzSSEReader holds sseReader to the reader before it on any bytes, cut
// into any reads, at any bound.
func FuzzSSEReader(f *testing.F) {
	for _, in := range sseSeeds(f) {
		for i, sizes := range sseChunkings {
			for _, max := range []uint16{0, 64, 300} {
				f.Add(in, sizes, max, i%2 == 1)
			}
		}
	}
	f.Fuzz(func(t *testing.T, in, sizes []byte, max uint16, broken bool) {
		m := int(max)
		if m == 0 {
			m = MaxBody
		}
		end := io.EOF
		if broken {
			end = errBrokenUpstream
		}
		if d := sseAsBefore(in, sizes, m, end); d != "" {
			t.Errorf("reads %v, max %d, end %v: %s", sizes, m, end, d)
		}
	})
}
