package retry

import (
	"net/http"
	"testing"
	"time"
)

func TestHeaderWait(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 24, 5, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		header map[string]string
		want   time.Duration
		wantOK bool
	}{
		{"none", nil, 0, false},
		{"seconds", map[string]string{"Retry-After": "3"}, 3 * time.Second, true},
		{"fractional seconds", map[string]string{"Retry-After": "1.5"}, 1500 * time.Millisecond, true},
		{"HTTP date", map[string]string{"Retry-After": "Tue, 24 Nov 2026 05:00:07 GMT"}, 7 * time.Second, true},
		{"HTTP date in the past", map[string]string{"Retry-After": "Tue, 24 Nov 2026 04:59:00 GMT"}, 0, false},
		{"milliseconds", map[string]string{"Retry-After-Ms": "250"}, 250 * time.Millisecond, true},
		{"milliseconds first", map[string]string{"Retry-After-Ms": "2500", "Retry-After": "3"}, 2500 * time.Millisecond, true},
		{"bad milliseconds fall back to seconds", map[string]string{"Retry-After-Ms": "soon", "Retry-After": "3"}, 3 * time.Second, true},
		{"zero", map[string]string{"Retry-After": "0"}, 0, false},
		{"negative", map[string]string{"Retry-After": "-5"}, 0, false},
		{"garbage", map[string]string{"Retry-After": "later"}, 0, false},
		{"absurd capped", map[string]string{"Retry-After": "1e30"}, maxHeaderHint, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := http.Header{}
			for k, v := range tc.header {
				h.Set(k, v)
			}
			got, ok := headerWait(h, now)
			if got != tc.want || ok != tc.wantOK {
				t.Errorf("headerWait(%v) = %v, %v, want %v, %v", tc.header, got, ok, tc.want, tc.wantOK)
			}
		})
	}
}
