package httpguard

import (
	"io"
	"strings"
	"testing"
)

// A buffered reader given back to the pool with bytes of its stream
// still buffered reads the next stream's bytes alone.
func TestReaderPoolReadsItsStreamAlone(t *testing.T) {
	var rp readerPool
	a := rp.get(strings.NewReader("data: a\n\ndata: left unread\n\n"))
	if _, err := a.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	if a.Buffered() == 0 {
		t.Fatal("the first stream's reader buffered nothing past its first line")
	}
	rp.put(a)
	b := rp.get(strings.NewReader("data: b\n\n"))
	got, err := io.ReadAll(b)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "data: b\n\n" {
		t.Errorf("the second stream read %q, want %q", got, "data: b\n\n")
	}
	if b.Size() != streamReadSize {
		t.Errorf("a pooled reader buffers %d bytes, want %d", b.Size(), streamReadSize)
	}
}
