package httpguard

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"
)

// textEvents are n Gemini chunks of text, each about size bytes, and the
// bytes the client reads of them.
func textEvents(n, size int) ([]streamEvent, []byte) {
	var evs []streamEvent
	var want []byte
	for i := range n {
		ev := streamEvent{Data: fmt.Appendf(nil, `{"candidates":[{"content":{"role":"model","parts":[{"text":"%d %s"}]}}]}`, i, strings.Repeat("x", size))}
		evs = append(evs, ev)
		want = append(want, formatEvent(ev)...)
	}
	return evs, want
}

// The writer of a client's stream does not wait for the client to read
// each event: events past the first are buffered, and one Read returns
// all that is buffered (up to len(p)).
func TestClientStreamWriterDoesNotWaitPerEvent(t *testing.T) {
	c := newClientStream(geminiWire{}, func() {})
	evs, want := textEvents(8, 100)
	done := make(chan error, 1)
	go func() {
		for _, ev := range evs {
			if err := c.putEvent(ev); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		clientBody{c}.Close()
		t.Fatal("the writer waited for the client to read the events")
	}
	p := make([]byte, 64<<10)
	n, err := clientBody{c}.Read(p)
	if err != nil || !bytes.Equal(p[:n], want) {
		t.Fatalf("one Read returns %d bytes, %v; want the %d bytes of the %d events", n, err, len(want), len(evs))
	}
}

// A client that does not read holds the writer at the bound: the buffer
// never holds more than clientStreamBound and one event, and the events
// all reach the client, in order, once it reads.
func TestClientStreamBounded(t *testing.T) {
	c := newClientStream(geminiWire{}, func() {})
	evs, want := textEvents(1000, 1000) // about 1 MiB
	waited := make(chan int, 1)
	c.waiting = func() {
		select {
		case waited <- c.pending:
		default:
		}
	}
	done := make(chan error, 1)
	go func() {
		for _, ev := range evs {
			if err := c.putEvent(ev); err != nil {
				done <- err
				return
			}
		}
		c.end(nil)
		done <- nil
	}()
	select {
	case n := <-waited:
		if max := clientStreamBound + len(formatEvent(evs[len(evs)-1])); n > max {
			t.Errorf("the writer waits with %d bytes buffered, past %d", n, max)
		}
	case err := <-done:
		t.Fatalf("the writer buffered all %d bytes without waiting (%v)", len(want), err)
	}
	got, err := io.ReadAll(clientBody{c})
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("the client reads %d bytes, %v; want the %d bytes written", len(got), err, len(want))
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// The writer's end reaches the client after every byte buffered before
// it: io.EOF for a clean end, else the error.
func TestClientStreamEndAfterBuffered(t *testing.T) {
	boom := errors.New("boom")
	for _, end := range []error{nil, boom} {
		c := newClientStream(geminiWire{}, func() {})
		evs, want := textEvents(3, 10)
		go func() {
			for _, ev := range evs {
				if err := c.putEvent(ev); err != nil {
					break
				}
			}
			c.end(end)
		}()
		got, err := io.ReadAll(clientBody{c})
		if (end == nil && err != nil) || (end != nil && !errors.Is(err, end)) || !bytes.Equal(got, want) {
			t.Errorf("end(%v): the client reads %q, %v; want the events, then %v", end, got, err, end)
		}
	}
}

// The client's Close cancels the call and makes every write fail with
// errClientClosed, a writer waiting at the bound too; a Read after it
// fails.
func TestClientStreamClose(t *testing.T) {
	cancelled := false
	c := newClientStream(geminiWire{}, func() { cancelled = true })
	evs, _ := textEvents(1000, 1000)
	waited := make(chan struct{}, 1)
	c.waiting = func() {
		select {
		case waited <- struct{}{}:
		default:
		}
	}
	done := make(chan error, 1)
	go func() {
		for _, ev := range evs {
			if err := c.putEvent(ev); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	select {
	case <-waited:
	case err := <-done:
		t.Fatalf("the writer ended (%v) without waiting", err)
	}
	if err := (clientBody{c}).Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, errClientClosed) {
		t.Errorf("the waiting write returns %v, want errClientClosed", err)
	}
	if err := c.putEvent(evs[0]); !errors.Is(err, errClientClosed) {
		t.Errorf("a write after Close returns %v, want errClientClosed", err)
	}
	if !cancelled {
		t.Error("Close did not cancel the call")
	}
	if n, err := (clientBody{c}).Read(make([]byte, 10)); n != 0 || err == nil {
		t.Errorf("a Read after Close returns %d, %v; want an error", n, err)
	}
}

// The events that only open a stream wait for the first that commits it,
// then reach the client first, in order, as many as come (more than the
// room the stream keeps for them too); once written they are let go, and
// an opening after the commit is written in its turn.
func TestClientStreamHeldOpenings(t *testing.T) {
	for _, n := range []int{1, len(clientStream{}.heldRoom), len(clientStream{}.heldRoom) + 3} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			c := newClientStream(chatWire{}, func() {})
			var want []byte
			for i := range n {
				ev := streamEvent{Data: fmt.Appendf(nil, `{"id":"c","choices":[{"index":0,"delta":{"role":"assistant"}}],"n":%d}`, i)}
				if err := c.putEvent(ev); err != nil {
					t.Fatal(err)
				}
				want = append(want, formatEvent(ev)...)
			}
			if c.isCommitted() {
				t.Fatalf("committed by %d events that only open the stream", n)
			}
			text := streamEvent{Data: []byte(`{"id":"c","choices":[{"index":0,"delta":{"content":"hi"}}]}`)}
			if err := c.putEvent(text); err != nil {
				t.Fatal(err)
			}
			want = append(want, formatEvent(text)...)
			if !c.isCommitted() {
				t.Fatal("not committed by a text event")
			}
			// Once committed, an event that only opens a stream is written
			// as it comes, after those before it.
			late := streamEvent{Data: []byte(`{"id":"c","choices":[{"index":0,"delta":{"role":"assistant"}}],"late":true}`)}
			if err := c.putEvent(late); err != nil {
				t.Fatal(err)
			}
			want = append(want, formatEvent(late)...)
			if len(c.held) != 0 {
				t.Errorf("%d events held after the commit", len(c.held))
			}
			for i, ev := range c.heldRoom {
				if ev.Data != nil {
					t.Errorf("heldRoom[%d] still holds %s once written", i, ev.Data)
				}
			}
			c.end(nil)
			got, err := io.ReadAll(clientBody{c})
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("the client read %q, %v; want %q", got, err, want)
			}
		})
	}
}

// The chunks a client has read go back to its Transport's pool, and a
// stream that takes one reads its own events alone: nothing of the stream
// that wrote the chunk before (longer, in several chunks) reaches it.
func TestClientStreamPooledChunks(t *testing.T) {
	pool := &chunkPool{}
	stream := func(events ...string) []byte {
		t.Helper()
		c := newClientStream(chatWire{}, func() {})
		c.pool = pool
		var want []byte
		for _, e := range events {
			ev := streamEvent{Data: []byte(e)}
			if err := c.write(ev); err != nil {
				t.Fatal(err)
			}
			want = append(want, formatEvent(ev)...)
		}
		c.end(nil)
		got, err := io.ReadAll(clientBody{c})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("the client read %q, want %q", got, want)
		}
		if c.chunks != nil || c.pending != 0 {
			t.Errorf("after the stream's end, the buffer holds %d chunks, %d bytes; want none, given back", len(c.chunks), c.pending)
		}
		return got
	}
	long := strings.Repeat("x", clientStreamChunk-100)
	stream(long, long, long) // three chunks, given back as they are read
	for range 3 {
		stream(`{"a":1}`)
		stream(`{"bb":22}`, `{"c":3}`)
	}
	// The nil pool makes each chunk, as a stream without a Transport does.
	var none *chunkPool
	if b := none.get(); cap(b) != clientStreamChunk || len(b) != 0 {
		t.Errorf("the nil pool's chunk has len %d, cap %d; want 0, %d", len(b), cap(b), clientStreamChunk)
	}
	none.put(make([]byte, clientStreamChunk)) // does nothing, and does not panic
}
