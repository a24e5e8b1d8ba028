package httpguard

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkSSEReader reads each protocol's recorded stream (the one
// BenchmarkTransport streams) with sseReader and with the reader before
// it (old, the oracle FuzzSSEReader holds it to), side by side in one
// run, so that a loaded machine weighs on both alike.
func BenchmarkSSEReader(b *testing.B) {
	for _, dir := range []string{"openai-chat", "openai-responses", "anthropic", "gemini"} {
		in, err := os.ReadFile(filepath.Join(wireDir, dir, "gate-accept.sse"))
		if err != nil {
			b.Fatal(err)
		}
		for _, rd := range []struct {
			name string
			next func(io.Reader) func() (streamEvent, error)
		}{
			{"new", func(r io.Reader) func() (streamEvent, error) { return newSSEReader(r, MaxBody).next }},
			{"old", func(r io.Reader) func() (streamEvent, error) { return newOldSSEReader(r, MaxBody).next }},
		} {
			b.Run(dir+"/"+rd.name, func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(in)))
				src := bytes.NewReader(in)
				for b.Loop() {
					src.Reset(in)
					next := rd.next(src)
					for {
						if _, err := next(); err != nil {
							break
						}
					}
				}
			})
		}
	}
}
