package httpguard

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"testing/iotest"

	"github.com/andybalholm/brotli"
)

// flushWriteCloser is an encoder: gzip, zlib, flate and brotli writers.
type flushWriteCloser interface {
	io.WriteCloser
	Flush() error
}

// newEncoder returns coding's encoder writing to w ("deflate-raw":
// deflate without its zlib wrapper). A coding it does not know is a
// mistake in a test's table: it panics.
func newEncoder(coding string, w io.Writer) flushWriteCloser {
	switch coding {
	case "gzip":
		return gzip.NewWriter(w)
	case "deflate":
		return zlib.NewWriter(w)
	case "deflate-raw":
		fw, _ := flate.NewWriter(w, flate.DefaultCompression) // fails only for a level out of range
		return fw
	case "br":
		return brotli.NewWriter(w)
	}
	panic("no encoder for " + coding)
}

// encode returns b with codings applied, in order.
func encode(t testing.TB, b []byte, codings ...string) []byte {
	for _, c := range codings {
		var buf bytes.Buffer
		w := newEncoder(c, &buf)
		if _, err := w.Write(b); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		b = buf.Bytes()
	}
	return b
}

// decodeBody undoes every coding it knows, in any spelling HTTP
// allows (a list, several header lines, case, identity among them), and
// answers in identity: no Content-Encoding, no Content-Length (the length
// was the encoded one). A response in identity stays as it came.
func TestDecodeResponse(t *testing.T) {
	t.Parallel()
	content := bytes.Repeat([]byte(`{"city": "Paris"} `), 1000)
	tests := []struct {
		name    string
		header  []string // Content-Encoding lines
		codings []string
	}{
		{"gzip", []string{"gzip"}, []string{"gzip"}},
		{"x-gzip", []string{"x-gzip"}, []string{"gzip"}},
		{"upper case", []string{"GZIP"}, []string{"gzip"}},
		{"deflate (zlib)", []string{"deflate"}, []string{"deflate"}},
		{"deflate (raw)", []string{"deflate"}, []string{"deflate-raw"}},
		{"br", []string{"br"}, []string{"br"}},
		{"gzip, br", []string{"gzip, br"}, []string{"gzip", "br"}},
		{"br, deflate", []string{"br,deflate"}, []string{"br", "deflate"}},
		{"two header lines", []string{"gzip", "br"}, []string{"gzip", "br"}},
		{"identity among them", []string{"identity, gzip ,", " identity"}, []string{"gzip"}},
		{"three codings", []string{"deflate, gzip, br"}, []string{"deflate", "gzip", "br"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			enc := encode(t, content, tc.codings...)
			hr := &http.Response{Header: http.Header{"Content-Encoding": tc.header, "Content-Length": {strconv.Itoa(len(enc))}},
				Body: io.NopCloser(bytes.NewReader(enc)), ContentLength: int64(len(enc))}
			if err := decodeBody(hr); err != nil {
				t.Fatalf("decodeBody: %v", err)
			}
			got, err := io.ReadAll(hr.Body)
			if err != nil || !bytes.Equal(got, content) {
				t.Fatalf("the body reads %d bytes, %v; want the %d bytes encoded", len(got), err, len(content))
			}
			if _, ok := hr.Header["Content-Encoding"]; ok || hr.Header.Get("Content-Length") != "" || hr.ContentLength != -1 || !hr.Uncompressed {
				t.Errorf("header %v, ContentLength %d, Uncompressed %v; want neither header, -1, true", hr.Header, hr.ContentLength, hr.Uncompressed)
			}
		})
	}
	t.Run("identity", func(t *testing.T) {
		t.Parallel()
		for _, h := range [][]string{nil, {"identity"}, {"Identity, "}} {
			body := io.NopCloser(bytes.NewReader(content))
			hr := &http.Response{Header: http.Header{"Content-Length": {"18000"}}, Body: body, ContentLength: 18000}
			if h != nil {
				hr.Header["Content-Encoding"] = h
			}
			before := hr.Header.Clone()
			if err := decodeBody(hr); err != nil || hr.Body != body || !sameHeader(hr.Header, before) || hr.ContentLength != 18000 || hr.Uncompressed {
				t.Errorf("Content-Encoding %q: %v; the response changed: %v", h, err, hr.Header)
			}
		}
	})
}

// errConnection stands for a connection that fails mid-body.
var errConnection = errors.New("connection reset by peer")

// What decodeBody cannot decode is unguardable: a coding it does not
// know or too many codings, at once (the response left as it came, so it
// may still be handed on); a body that is not what its coding says, at
// its first failed Read. A connection that fails mid-body is the
// connection's error, not the coding's.
func TestDecodeResponseUnguardable(t *testing.T) {
	t.Parallel()
	content := bytes.Repeat([]byte(`{"city": "Paris"} `), 1000)
	gz := encode(t, content, "gzip")
	for _, enc := range []string{"zstd", "compress", "gzip, zstd", "gzip, br, gzip, br", "gzip, gzip, gzip, gzip"} {
		t.Run("refused/"+enc, func(t *testing.T) {
			t.Parallel()
			body := io.NopCloser(bytes.NewReader(gz))
			hr := &http.Response{Header: http.Header{"Content-Encoding": {enc}, "Content-Length": {"1"}}, Body: body, ContentLength: 1}
			err := decodeBody(hr)
			if !isUnguardable(err) {
				t.Fatalf("decodeBody(%q) = %v, want an unguardable error", enc, err)
			}
			if hr.Body != body || hr.Header.Get("Content-Encoding") != enc || hr.Header.Get("Content-Length") != "1" || hr.ContentLength != 1 {
				t.Errorf("the response changed: %v, %d", hr.Header, hr.ContentLength)
			}
			if strings.Contains(err.Error(), "Paris") {
				t.Errorf("the error quotes the body: %v", err)
			}
		})
	}
	flipped := bytes.Clone(gz)
	flipped[len(flipped)-5] ^= 0xff // the CRC-32 in gzip's trailer
	br := encode(t, content, "br")
	for _, tc := range []struct {
		name, enc string
		body      []byte
	}{
		{"empty gzip", "gzip", nil},
		{"not gzip", "gzip", content},
		{"gzip cut short", "gzip", gz[:len(gz)/2]},
		{"gzip checksum", "gzip", flipped},
		{"gzip trailing garbage", "gzip", append(bytes.Clone(gz), "garbage"...)},
		{"not deflate", "deflate", []byte{0xff, 0xff, 0xff, 0xff}},
		{"zlib cut short", "deflate", encode(t, content, "deflate")[:40]},
		{"not br", "br", content},
		{"br cut short", "br", br[:len(br)/2]},
		{"gzip inside br, not gzip", "gzip, br", encode(t, content, "br")},
	} {
		t.Run("corrupt/"+tc.name, func(t *testing.T) {
			t.Parallel()
			hr := &http.Response{Header: http.Header{"Content-Encoding": {tc.enc}}, Body: io.NopCloser(bytes.NewReader(tc.body))}
			if err := decodeBody(hr); err != nil {
				t.Fatalf("decodeBody: %v, want the failure at Read", err)
			}
			_, err := io.ReadAll(hr.Body)
			if !isUnguardable(err) {
				t.Errorf("reading %s: %v, want an unguardable error", tc.name, err)
			}
		})
	}
	for _, enc := range []string{"gzip", "deflate", "br"} {
		t.Run("connection/"+enc, func(t *testing.T) {
			t.Parallel()
			e := encode(t, content, enc)
			for _, cut := range []int{0, 1, len(e) / 2} {
				hr := &http.Response{Header: http.Header{"Content-Encoding": {enc}},
					Body: io.NopCloser(io.MultiReader(bytes.NewReader(e[:cut]), iotest.ErrReader(errConnection)))}
				if err := decodeBody(hr); err != nil {
					t.Fatal(err)
				}
				_, err := io.ReadAll(hr.Body)
				if !errors.Is(err, errConnection) || isUnguardable(err) {
					t.Errorf("after %d bytes: %v, want the connection's error as it came", cut, err)
				}
			}
		})
	}
}

// gzipBomb returns a gzip body that is small (about 1 KiB per MiB) and
// decodes to n MiB of zeros: one member repeated, as gzip allows.
func gzipBomb(t testing.TB, prefix []byte, n int) []byte {
	member := encode(t, make([]byte, 1<<20), "gzip")
	out := encode(t, prefix, "gzip")
	for range n {
		out = append(out, member...)
	}
	return out
}

// countingBody counts the bytes read of a body.
type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

// A decompression bomb (a small body that decodes past MaxBody) is read
// up to the bound in decoded bytes and no further: it is a body past the
// bound. Its decoder reads MaxBody+1 bytes, and takes a few KiB of the
// 1 MiB on the wire.
func TestDecompressionBombStopsAtTheBound(t *testing.T) {
	t.Parallel()
	bomb := gzipBomb(t, nil, 1024) // 1 GiB decoded
	var n atomic.Int64
	hr := &http.Response{Header: http.Header{"Content-Encoding": {"gzip"}}, Body: countingBody{io.NopCloser(bytes.NewReader(bomb)), &n}}
	if err := decodeBody(hr); err != nil {
		t.Fatal(err)
	}
	b, err := readBounded(hr.Body, MaxBody)
	if !errors.Is(err, errTooLarge) || len(b) != MaxBody+1 {
		t.Errorf("readBounded = %d bytes, %v; want %d, errTooLarge", len(b), err, MaxBody+1)
	}
	if n.Load() > int64(len(bomb))/16 {
		t.Errorf("the decoder read %d of the bomb's %d bytes, want what decodes to the bound", n.Load(), len(bomb))
	}
	t.Logf("a %d-byte gzip bomb of 1 GiB: %d bytes decoded, %d encoded bytes read", len(bomb), len(b), n.Load())
}
