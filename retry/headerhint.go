package retry

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// HeaderHint holds the retry hint of the last failed HTTP response that a
// client made by [HTTPClient] received for one attempt: its "retry-after-ms"
// header (milliseconds, as OpenAI sends it) or else its "Retry-After" header
// (seconds, or an HTTP date), on a status that is worth retrying (408, 409,
// 429 and every 5xx but 501 and 505). Each such response replaces the hint
// of the one before, so a response without the headers clears it.
//
// langchaingo's provider clients drop response headers, and some replace a
// transport's error with their own, so the transport cannot hand the hint
// back; it records it here, on the side. A retry loop puts a fresh
// HeaderHint in each attempt's context with [WithHeaderHint] and, when the
// attempt fails, passes [HeaderHint.Annotate] of the error to [NextWait].
// middleware.ModelRetry does this for every attempt.
//
// The zero value holds no hint. A HeaderHint is safe for concurrent use.
type HeaderHint struct {
	mu   sync.Mutex
	wait time.Duration
	ok   bool
}

// headerHintKey is the context key of WithHeaderHint.
type headerHintKey struct{}

// WithHeaderHint returns a copy of ctx carrying a new, empty *HeaderHint,
// and that HeaderHint. HTTP requests made with the returned context by a
// client from [HTTPClient] record their retry hint in it.
func WithHeaderHint(ctx context.Context) (context.Context, *HeaderHint) {
	h := new(HeaderHint)
	return context.WithValue(ctx, headerHintKey{}, h), h
}

// headerHintFrom returns the HeaderHint ctx carries, or nil.
func headerHintFrom(ctx context.Context) *HeaderHint {
	h, _ := ctx.Value(headerHintKey{}).(*HeaderHint)
	return h
}

// After returns the recorded wait, and false when there is none.
func (h *HeaderHint) After() (time.Duration, bool) {
	if h == nil {
		return 0, false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.wait, h.ok
}

func (h *HeaderHint) record(wait time.Duration, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.wait, h.ok = wait, ok
}

// Annotate returns err carrying the recorded hint, for [After] and
// [NextWait]: an error whose Error and Unwrap are err's and whose
// RetryAfter method returns the longer of the recorded hint and err's own
// ([After]). Without a recorded hint, or for a nil err, it returns err.
func (h *HeaderHint) Annotate(err error) error {
	wait, ok := h.After()
	if !ok || err == nil {
		return err
	}
	if own, ok := After(err); ok && own > wait {
		wait = own
	}
	return &hintedError{err: err, wait: wait}
}

// hintedError is an error with a retry hint from response headers.
type hintedError struct {
	err  error
	wait time.Duration
}

func (e *hintedError) Error() string             { return e.err.Error() }
func (e *hintedError) Unwrap() error             { return e.err }
func (e *hintedError) RetryAfter() time.Duration { return e.wait }

// maxHeaderHint bounds a parsed header so that no arithmetic overflows; the
// retry loop's own cap ([NextWait]) is far lower.
const maxHeaderHint = 24 * time.Hour

// headerWait reads the retry hint of a response's headers at time now:
// "retry-after-ms" first, then "Retry-After" as seconds or an HTTP date.
// Values that do not parse, or that are zero or less, are no hint.
func headerWait(h http.Header, now time.Time) (time.Duration, bool) {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return capHint(ms * float64(time.Millisecond)), true
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s > 0 {
			return capHint(s * float64(time.Second)), true
		}
		return 0, false
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return min(d, maxHeaderHint), true
		}
	}
	return 0, false
}

func capHint(d float64) time.Duration {
	if d > float64(maxHeaderHint) {
		return maxHeaderHint
	}
	return time.Duration(d)
}
