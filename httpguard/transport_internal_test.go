package httpguard

import (
	"bytes"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"testing"
)

// answerHeader is h with Set("Content-Length", n), as a copy was made
// of it before: the same keys and values, the others untouched (a
// non-canonical key, a nil value), and h itself unless it was nil.
func TestAnswerHeader(t *testing.T) {
	for _, tc := range []struct {
		h http.Header
		n int
	}{
		{nil, 42},
		{http.Header{}, 0},
		{http.Header{"Content-Type": {"application/json"}, "Content-Length": {"12"}, "X-Two": {"a", "b"}, "X-Nil": nil, "X-Empty": {}}, 42},
		{http.Header{"Content-Type": {"application/json"}, "Content-Length": {"42"}}, 42},
		{http.Header{"Content-Length": {"42", "42"}}, 42},
		{http.Header{"Content-Length": {"042"}}, 42},
		{http.Header{"Content-Length": {"+42"}}, 42},
		{http.Header{"Content-Length": nil}, 42},
		{http.Header{"content-length": {"7"}, "Set-Cookie": {"a=1", "b=2", "c=3"}}, 1 << 40},
	} {
		want := tc.h.Clone()
		if want == nil {
			want = http.Header{}
		}
		want.Set("Content-Length", strconv.Itoa(tc.n))
		got := answerHeader(tc.h, tc.n)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("answerHeader(%v, %d) = %v, want %v", tc.h, tc.n, got, want)
		}
		if tc.h != nil && reflect.ValueOf(got).UnsafePointer() != reflect.ValueOf(tc.h).UnsafePointer() {
			t.Errorf("answerHeader(%v, %d) made a new header", tc.h, tc.n)
		}
	}
}

// statusLine is the code and its text, as it was made for every code.
func TestStatusLine(t *testing.T) {
	for code := range 1000 {
		if got, want := statusLine(code), strconv.Itoa(code)+" "+http.StatusText(code); got != want {
			t.Errorf("statusLine(%d) = %q, want %q", code, got, want)
		}
	}
}

// A sync answer's body reads, writes to, closes and is seen as an
// io.NopCloser(bytes.NewReader(b)) is: the same bytes, and the same
// optional interfaces a client may ask it for.
func TestSyncResponseBody(t *testing.T) {
	body := []byte(`{"id":"x","choices":[]}`)
	resp := syncResponse(&http.Request{}, &response{body: body, status: http.StatusOK})
	want := io.NopCloser(bytes.NewReader(body))
	for _, iface := range []reflect.Type{
		reflect.TypeFor[io.WriterTo](), reflect.TypeFor[io.Seeker](), reflect.TypeFor[io.ReaderAt](),
		reflect.TypeFor[io.ByteReader](), reflect.TypeFor[io.RuneReader](), reflect.TypeFor[io.Writer](),
	} {
		if got, w := reflect.TypeOf(resp.Body).Implements(iface), reflect.TypeOf(want).Implements(iface); got != w {
			t.Errorf("the body implements %v: %v, io.NopCloser's: %v", iface, got, w)
		}
	}
	half, _ := io.ReadAll(io.LimitReader(resp.Body, 5))
	var rest bytes.Buffer
	if _, err := resp.Body.(io.WriterTo).WriteTo(&rest); err != nil {
		t.Fatal(err)
	}
	if got := append(half, rest.Bytes()...); !bytes.Equal(got, body) {
		t.Errorf("the body read %q, want %q", got, body)
	}
	if err := resp.Body.Close(); err != nil {
		t.Errorf("Close() = %v", err)
	}
	if resp.Status != "200 OK" || resp.ContentLength != int64(len(body)) || resp.Header.Get("Content-Length") != strconv.Itoa(len(body)) {
		t.Errorf("status %q, length %d, header %v", resp.Status, resp.ContentLength, resp.Header)
	}
}
