package httpguard

import (
	"bytes"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"testing"
)

// cloneWith is Clone then Set, and the copy shares nothing with the
// original: a change to either leaves the other as it was.
func TestCloneWith(t *testing.T) {
	for _, h := range []http.Header{
		nil,
		{},
		{"Content-Type": {"application/json"}, "Content-Length": {"12"}, "X-Two": {"a", "b"}, "X-Nil": nil, "X-Empty": {}},
		{"content-length": {"7"}, "Set-Cookie": {"a=1", "b=2", "c=3"}},
	} {
		want := h.Clone()
		if want == nil {
			want = http.Header{}
		}
		want.Set("content-length", "42")
		got := cloneWith(h, "content-length", "42")
		if !reflect.DeepEqual(got, want) {
			t.Errorf("cloneWith(%v) = %v, want %v", h, got, want)
		}
		before := h.Clone()
		for k := range got {
			got.Add(k, "more")
			if len(got[k]) > 0 {
				got[k][0] = "changed"
			}
		}
		if !reflect.DeepEqual(h, before) {
			t.Errorf("changing the copy changed the original: %v, was %v", h, before)
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
