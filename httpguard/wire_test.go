package httpguard

import (
	"net/http"
	"testing"
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
