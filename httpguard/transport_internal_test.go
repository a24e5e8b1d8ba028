package httpguard

import (
	"net/http"
	"reflect"
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
