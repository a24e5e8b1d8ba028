package httpguard_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"testing"

	"github.com/andybalholm/brotli"
	"github.com/toolguard/toolguard/httpguard"
)

// encodedFixed is fixed with a Content-Encoding: an upstream that
// compresses its answer.
type encodedFixed struct {
	fixed
	encoding string
}

func (f encodedFixed) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := f.fixed.RoundTrip(r)
	if err == nil {
		resp.Header.Set("Content-Encoding", f.encoding)
	}
	return resp, err
}

func gzipBytes(b *testing.B, p []byte, repeat int) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	if _, err := w.Write(p); err != nil {
		b.Fatal(err)
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	return bytes.Repeat(buf.Bytes(), repeat) // gzip members, one after the other
}

func brotliBytes(b *testing.B, p []byte, repeat int) []byte {
	var buf bytes.Buffer
	w := brotli.NewWriterLevel(&buf, 1)
	for range repeat {
		if _, err := w.Write(p); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

// BenchmarkCompressedAnswer measures a guarded sync request whose answer
// comes compressed (openai-chat's valid answer, gzip and br), against the
// same answer in identity, and a decompression bomb's cost: a gzip body
// of about 1 MiB that decodes to 1 GiB of zeros, and a br body of a few
// KiB that decodes to 64 MiB. The transport reads a bomb up to MaxBody
// decoded and hands the rest on unread (the client closes it here):
// B/op is what the bound costs (the body's 8 MiB, the growth of its
// buffer, the decoder's window), not the gigabyte; identity-9MiB, a body
// past the bound as it came, is that cost without a decoder.
func BenchmarkCompressedAnswer(b *testing.B) {
	req := readFixture(b, "openai-chat", "request.json")
	answer := readFixture(b, "openai-chat", "accepted.json")
	zeros := make([]byte, 1<<20)
	for _, tc := range []struct {
		name     string
		up       http.RoundTripper
		decoded  int
		checkLen bool
	}{
		{"identity", fixed{"application/json", answer}, len(answer), true},
		{"gzip", encodedFixed{fixed{"application/json", gzipBytes(b, answer, 1)}, "gzip"}, len(answer), true},
		{"br", encodedFixed{fixed{"application/json", brotliBytes(b, answer, 1)}, "br"}, len(answer), true},
		{"identity-9MiB", fixed{"application/json", make([]byte, 9<<20)}, 9 << 20, false},
		{"gzip-bomb-1GiB", encodedFixed{fixed{"application/json", gzipBytes(b, zeros, 1024)}, "gzip"}, 1 << 30, false},
		{"br-bomb-64MiB", encodedFixed{fixed{"application/json", brotliBytes(b, zeros, 64)}, "br"}, 64 << 20, false},
	} {
		b.Run(tc.name, func(b *testing.B) {
			c := &http.Client{Transport: httpguard.New(tc.up, httpguard.ToolArgValidation())}
			b.ReportAllocs()
			for b.Loop() {
				r, _ := http.NewRequest(http.MethodPost, "http://provider.test/v1/chat/completions", bytes.NewReader(req))
				r.Header.Set("Content-Type", "application/json")
				r.Header.Set("Accept-Encoding", "gzip, br")
				resp, err := c.Do(r)
				if err != nil {
					b.Fatal(err)
				}
				if tc.checkLen {
					n, _ := io.Copy(io.Discard, resp.Body)
					if n != int64(tc.decoded) {
						b.Fatalf("the client read %d bytes, want %d", n, tc.decoded)
					}
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Encoding") != "" {
					b.Fatalf("status %d, Content-Encoding %q", resp.StatusCode, resp.Header.Get("Content-Encoding"))
				}
			}
		})
	}
}
