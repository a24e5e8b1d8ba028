package httpguard

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

func TestUpstreamError(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		status int
		header []string
		want   time.Duration
	}{
		{429, []string{"Retry-After", "2"}, 2 * time.Second},
		{529, []string{"retry-after-ms", "1500", "Retry-After", "9"}, 1500 * time.Millisecond},
		{503, []string{"Retry-After", now.Add(30 * time.Second).Format(http.TimeFormat)}, 30 * time.Second},
		{503, []string{"Retry-After", now.Add(-time.Minute).Format(http.TimeFormat)}, 0},
		{500, []string{"Retry-After", "soon"}, 0},
		{429, nil, 0},
	}
	for _, tc := range tests {
		h := http.Header{}
		for i := 0; i < len(tc.header); i += 2 {
			h.Set(tc.header[i], tc.header[i+1])
		}
		status, wait := upstreamError(&http.Response{StatusCode: tc.status, Header: h}, now)
		if status != tc.status || wait != tc.want {
			t.Errorf("upstreamError(%d %v) = %d, %v, want %v", tc.status, tc.header, status, wait, tc.want)
		}
	}
}

// readSized reads what the body holds whatever length it declares (a
// length that is short, long or unknown changes only how the slice is
// set aside), and stops one byte past the bound as readBounded does.
func TestReadSized(t *testing.T) {
	body := strings.Repeat("0123456789", 10_000) // 100,000 bytes: past presize
	for _, tc := range []struct {
		name        string
		body        string
		size, limit int64
		want        string
		err         error
	}{
		{"exact", "12345", 5, 5, "12345", nil},
		{"declared short", "123456789", 3, 100, "123456789", nil},
		{"declared long", "123", 1 << 20, 100, "123", nil},
		{"unknown", "123", -1, 100, "123", nil},
		{"empty", "", 0, 100, "", nil},
		{"past the bound", "123456789", 9, 5, "123456", errTooLarge},
		{"past the bound, declared short", "123456789", 2, 5, "123456", errTooLarge},
		{"past presize", body, int64(len(body)), MaxBody, body, nil},
		{"past presize and the bound", body, int64(len(body)), presize + 10, body[:presize+11], errTooLarge},
	} {
		b, err := readSized(iotest.HalfReader(strings.NewReader(tc.body)), tc.size, tc.limit)
		if string(b) != tc.want || !errors.Is(err, tc.err) || (tc.err == nil && err != nil) {
			t.Errorf("%s: read %d bytes (%.10q…), %v; want %d bytes, %v", tc.name, len(b), b, err, len(tc.want), tc.err)
		}
	}
	// A read error is returned with the bytes read before it.
	b, err := readSized(io.MultiReader(strings.NewReader("ab"), iotest.ErrReader(io.ErrUnexpectedEOF)), 10, 100)
	if string(b) != "ab" || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("read error: %q, %v", b, err)
	}
}
