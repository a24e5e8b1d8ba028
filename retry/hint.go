package retry

import (
	"errors"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// After returns how long the server asked the caller to wait before trying
// again, and whether err carries such a hint at all.
//
// The hint is taken from the first of:
//
//   - an error in err's chain with a method RetryAfter() time.Duration
//     (such as [HeaderHint.Annotate]'s: langchaingo's providers drop their
//     response headers, so a Retry-After header reaches After only through
//     an [HTTPClient] and a HeaderHint);
//   - "retry after N" or "Retry-After: N" in the message, N in seconds unless
//     a unit follows ("retry after 1.5s", "Please retry after 6 seconds",
//     as Azure OpenAI writes);
//   - "try again in D" or "retry in D", D a Go duration or a number and a
//     unit ("Please try again in 1.2s", "try again in 20ms", "try again in
//     6m0s" from OpenAI; "error details: retry in 24s" from Google AI's
//     RetryInfo; "try again in 20 seconds");
//   - a JSON "retryDelay": "24s" field, as in a Google API error body.
//
// Hints of zero or less are ignored. After does not cap the hint; [NextWait]
// does.
func After(err error) (time.Duration, bool) {
	if err == nil {
		return 0, false
	}
	var ra interface{ RetryAfter() time.Duration }
	if errors.As(err, &ra) {
		if d := ra.RetryAfter(); d > 0 {
			return d, true
		}
	}
	msg := err.Error()
	for _, p := range hintPatterns {
		m := p.re.FindStringSubmatch(msg)
		if m == nil {
			continue
		}
		if d, ok := p.parse(m); ok && d > 0 {
			return d, true
		}
	}
	return 0, false
}

type hintPattern struct {
	re    *regexp.Regexp
	parse func(m []string) (time.Duration, bool)
}

const (
	number = `(\d+(?:\.\d+)?)`
	unit   = `(ms|milliseconds?|s|secs?|seconds?|m|mins?|minutes?|h|hours?)?\b`
	goDur  = `((?:\d+(?:\.\d+)?(?:ns|us|µs|ms|s|m|h))+)\b`
)

var hintPatterns = []hintPattern{
	// "Retry-After: 20", "retry after 20", "retry after 1.5s", "retry-after 6 seconds"
	{regexp.MustCompile(`(?i)\bretry[- ]after\b[:=]?\s*` + number + `\s*` + unit), numberAndUnit},
	// "try again in 1.2s", "try again in 6m0s", "retry in 24s"
	{regexp.MustCompile(`(?i)\b(?:try again|retry) in\s+` + goDur), goDuration},
	// "try again in 20 seconds"
	{regexp.MustCompile(`(?i)\b(?:try again|retry) in\s+` + number + `\s*` + unit), numberAndUnit},
	// Google API error details: "retryDelay": "24s"
	{regexp.MustCompile(`"retryDelay"\s*:\s*"` + goDur + `"`), goDuration},
}

func goDuration(m []string) (time.Duration, bool) {
	d, err := time.ParseDuration(m[1])
	return d, err == nil
}

func numberAndUnit(m []string) (time.Duration, bool) {
	f, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0, false
	}
	scale := time.Second
	switch u := strings.ToLower(m[2]); {
	case u == "ms" || strings.HasPrefix(u, "milli"):
		scale = time.Millisecond
	case u == "m" || strings.HasPrefix(u, "min"):
		scale = time.Minute
	case u == "h" || strings.HasPrefix(u, "hour"):
		scale = time.Hour
	}
	const maxHint = float64(24 * time.Hour)
	d := f * float64(scale)
	if d > maxHint {
		d = maxHint // absurd hints are capped by NextWait anyway; avoid overflow
	}
	return time.Duration(d), true
}
