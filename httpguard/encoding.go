package httpguard

import (
	"bufio"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/andybalholm/brotli"
)

// maxCodings bounds the codings one response may name in its
// Content-Encoding. Each costs a decoder's window (up to 16 MiB for br);
// a provider or gateway applies one, two at most, so a longer list is an
// answer the guard refuses to read rather than memory an upstream can
// multiply.
const maxCodings = 3

// decodeBody makes hr's body read as the content it encodes, so that
// the guard reads what the client's decoder would: the codings hr's
// Content-Encoding names (gzip or x-gzip; deflate, zlib-wrapped as HTTP
// defines it or raw when the zlib header is absent, as browsers accept
// it; br), applied in the order listed, are undone last first. Go's
// http.Transport decodes gzip itself only when it asked for it; a client
// that sets Accept-Encoding (or an upstream or gateway that compresses
// unasked) gets the body encoded, and it reaches the transport so.
//
// The decoded body is the one the client receives, in identity encoding:
// Content-Encoding and Content-Length are removed (the sync answer gets
// the decoded length when it is written) and hr.Uncompressed is set, as
// http.Transport does when it decodes. Every HTTP client reads identity,
// and a client's SDK reads the cleaned arguments the guard wrote back,
// which no longer fit the upstream's compressed bytes anyway.
//
// Decoding is lazy: nothing is read before the guard reads the body, a
// stream is decoded as its bytes arrive, and the body's bound (MaxBody,
// applied by the reader) counts decoded bytes, so a small body that
// expands past it (a decompression bomb) stops there like any body past
// the bound. A body that fails to decode fails its Read with an
// unguardable error; a failed read of the connection itself is returned
// as it came.
//
// A response with no Content-Encoding, or identity alone, is left as it
// came. One naming a coding the guard does not decode (zstd, compress), or
// more than maxCodings, is an answer the guard cannot read:
// decodeBody returns an unguardable error and leaves hr untouched (its
// header and unread body), so that it may still be handed on as it came.
func decodeBody(hr *http.Response) error {
	codings, err := contentCodings(hr.Header.Values("Content-Encoding"))
	if err != nil || len(codings) == 0 {
		return err
	}
	hr.Body = &decodedBody{codings: codings, src: &sourceReader{r: hr.Body}, body: hr.Body}
	hr.Header.Del("Content-Encoding")
	hr.Header.Del("Content-Length")
	hr.ContentLength = -1
	hr.Uncompressed = true
	return nil
}

// contentCodings returns the codings Content-Encoding values name, in the
// order they were applied, lower case, without identity; an unguardable
// error for a coding it does not decode or more than maxCodings.
func contentCodings(values []string) ([]string, error) {
	var codings []string
	for _, v := range values {
		for c := range strings.SplitSeq(v, ",") {
			c = strings.ToLower(strings.TrimSpace(c))
			switch c {
			case "", "identity":
				continue
			case "gzip", "x-gzip", "deflate", "br":
			default:
				return nil, unguardable("the response body's encoding is unknown", fmt.Errorf("Content-Encoding %q", preview([]byte(c))))
			}
			if len(codings) == maxCodings {
				return nil, unguardable("the response body is encoded too many times", fmt.Errorf("Content-Encoding names more than %d codings", maxCodings))
			}
			codings = append(codings, c)
		}
	}
	return codings, nil
}

// decodedBody is a response body read through the decoders of its
// codings, made at the first Read (a gzip or zlib decoder reads its header
// when made). It closes the response's own body.
type decodedBody struct {
	codings []string
	src     *sourceReader
	body    io.Closer
	r       io.Reader // nil until the first Read
	err     error     // the failure to make the decoders
}

// Read reads decoded bytes. A decoder's failure is an unguardable error;
// the connection's failure (src.err) is returned as it came, whatever the
// decoder made of it.
func (b *decodedBody) Read(p []byte) (int, error) {
	if b.r == nil && b.err == nil {
		b.r, b.err = newDecoders(b.codings, b.src)
	}
	if b.err != nil {
		return 0, b.fault(b.err)
	}
	n, err := b.r.Read(p)
	if err != nil && err != io.EOF {
		err = b.fault(err)
	}
	return n, err
}

// fault is the error a Read returns for a decoder's err.
func (b *decodedBody) fault(err error) error {
	if b.src.err != nil {
		return b.src.err
	}
	return unguardable("the response body cannot be decoded", fmt.Errorf("Content-Encoding %s: %w", strings.Join(b.codings, ", "), err))
}

// Close closes the response's body. The decoders hold no resource of
// their own.
func (b *decodedBody) Close() error { return b.body.Close() }

// sourceReader reads the encoded body and keeps the first error of the
// connection (any but io.EOF), which tells a failed read from a body that
// does not decode.
type sourceReader struct {
	r   io.Reader
	err error
}

func (s *sourceReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err != nil && err != io.EOF && s.err == nil {
		s.err = err
	}
	return n, err
}

// newDecoders returns a reader of src with codings undone, the last
// applied first.
func newDecoders(codings []string, src io.Reader) (io.Reader, error) {
	r := src
	for i := len(codings) - 1; i >= 0; i-- {
		var err error
		if r, err = newDecoder(codings[i], r); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// newDecoder returns a reader of r with coding undone. Its errors are the
// decoder's own (the body's Read names the codings).
func newDecoder(coding string, r io.Reader) (io.Reader, error) {
	switch coding {
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(r)
		if err != nil {
			return nil, noEOF(err)
		}
		return zr, nil
	case "deflate":
		br := bufio.NewReader(r)
		head, err := br.Peek(2)
		if err != nil {
			return nil, noEOF(err)
		}
		if !zlibHeader(head) {
			return flate.NewReader(br), nil
		}
		zr, err := zlib.NewReader(br)
		if err != nil {
			return nil, noEOF(err)
		}
		return zr, nil
	case "br":
		return brotli.NewReader(r), nil
	}
	// contentCodings lets no other coding through.
	return nil, fmt.Errorf("coding %q", coding)
}

// zlibHeader reports whether head, a body's first two bytes, is a zlib
// header (RFC 1950): compression method 8 (deflate) with a window of at
// most 32 KiB, and a check that makes the pair a multiple of 31. A raw
// deflate stream rarely starts so.
func zlibHeader(head []byte) bool {
	cmf, flg := head[0], head[1]
	return cmf&0x0f == 8 && cmf>>4 <= 7 && (uint16(cmf)<<8|uint16(flg))%31 == 0
}

// noEOF returns io.ErrUnexpectedEOF for io.EOF: a body that ends before
// its coding's header is cut short, not empty.
func noEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}
