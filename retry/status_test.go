package retry_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"testing"

	"github.com/toolguard/toolguard/retry"
)

// The status rule over every error status: 408, 409, 429 and every 5xx
// but 501 and 505 are retryable; every other 4xx (425 included) is not.
// Each status is tried through a StatusCode() method and a StatusCode
// field, with a message that says nothing.
func TestIsRetryableStatusTable(t *testing.T) {
	t.Parallel()
	retryable := map[int]bool{408: true, 409: true, 429: true}
	for code := 500; code <= 599; code++ {
		retryable[code] = code != 501 && code != 505
	}
	// Spelled out, so that a change to the loop above cannot slip by.
	for code, want := range map[int]bool{500: true, 502: true, 503: true, 504: true, 529: true, 599: true, 501: false, 505: false, 425: false, 400: false} {
		if retryable[code] != want {
			t.Fatalf("test table: %d retryable = %v, want %v", code, retryable[code], want)
		}
	}
	for code := 400; code <= 599; code++ {
		want := retryable[code]
		for _, err := range []error{statusErr(code), &fieldErr{StatusCode: code}} {
			if got := retry.IsRetryable(err); got != want {
				t.Errorf("IsRetryable(%T %d) = %v, want %v", err, code, got, want)
			}
			if got, ok := retry.Status(err); got != code || !ok {
				t.Errorf("Status(%T %d) = %d, %v, want %d, true", err, code, got, ok, code)
			}
		}
	}
}

// The routes by which a status is found, each alone: the message says
// nothing the text rules know, or says the opposite of the status.
func TestStatusRoutes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		err    error
		status int // 0: none found
		want   bool
	}{
		{"method StatusCode", statusErr(529), 529, true},
		{"method HTTPStatusCode", &responseError{status: 503, Err: errors.New("nope")}, 503, true},
		{"method HTTPCode", googleErr{code: 529, msg: "nope"}, 529, true},
		{"method HTTPCode -1 is none", googleErr{code: -1, msg: "nope"}, 0, false},
		{"field StatusCode (openai-go, anthropic-sdk-go)", &fieldErr{StatusCode: 529}, 529, true},
		{"field StatusCode on a value", fieldErr{StatusCode: 503}, 503, true},
		{"field StatusCode wins over the text", &fieldErr{StatusCode: 400, Msg: "service unavailable"}, 400, false},
		{"field HTTPStatusCode (go-openai APIError)", &goOpenAIErr{HTTPStatusCode: 529, Message: "nope"}, 529, true},
		{"field HTTPStatusCode 0 is none (go-openai stream error)", &goOpenAIErr{Message: "nope"}, 0, false},
		{"field HTTPStatusCode 0, the text decides", &goOpenAIErr{Message: "The engine is currently overloaded"}, 0, true},
		{"field promoted from an embedded struct", &embeddingErr{fieldErr{StatusCode: 502}}, 502, true},
		{"field in a joined error", errors.Join(errors.New("nope"), &fieldErr{StatusCode: 503}), 503, true},
		{"outermost field wins", &wrapFieldErr{StatusCode: 400, Err: &fieldErr{StatusCode: 503}}, 400, false},
		{"nil pointer struct", (*ptrFieldErr)(nil), 0, false},
		{"field Code elsewhere is not a status", &codeErr{Code: 503, Msg: "nope"}, 0, false},
		{"string StatusCode is not a status", &stringStatusErr{StatusCode: "503"}, 0, false},
		{"unexported statusCode is not a status", &unexportedErr{statusCode: 503}, 0, false},
		{"field out of range", &fieldErr{StatusCode: 200, Msg: "nope"}, 0, false},
		{"text status", errors.New("API returned unexpected status code: 529: nope"), 529, true},
		{"text status line", errors.New("503 Service Unavailable"), 503, true},
		{"text 400", errors.New("(HTTP Error 400) nope"), 400, false},
		{"no status", errors.New("nope"), 0, false},
		{"nil", nil, 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			check := func(err error) {
				t.Helper()
				if got := retry.IsRetryable(err); got != tc.want {
					t.Errorf("IsRetryable(%v) = %v, want %v", err, got, tc.want)
				}
				got, ok := retry.Status(err)
				if got != tc.status || ok != (tc.status != 0) {
					t.Errorf("Status(%v) = %d, %v, want %d, %v", err, got, ok, tc.status, tc.status != 0)
				}
			}
			check(tc.err)
			if tc.err != nil {
				check(fmt.Errorf("agent: step 3: %w", tc.err))
			}
		})
	}
}

// An adapter's StatusFunc is asked first, in order; it decides over
// methods, fields and text; a status it does not know (ok false, or out of
// range) leaves the decision to the other rules; nil ones are skipped.
func TestIsRetryableWith(t *testing.T) {
	t.Parallel()
	hostCode := func(err error) (int, bool) {
		var e *hostErr
		if !errors.As(err, &e) {
			return 0, false
		}
		switch e.code {
		case "busy":
			return http.StatusServiceUnavailable, true
		case "denied":
			return http.StatusForbidden, true
		case "weird":
			return 200, true
		}
		return 0, false
	}
	always := func(code int) retry.StatusFunc {
		return func(error) (int, bool) { return code, true }
	}
	tests := []struct {
		name    string
		err     error
		extract []retry.StatusFunc
		status  int
		want    bool
	}{
		{"without the extractor nothing is known", &hostErr{code: "busy", msg: "nope"}, nil, 0, false},
		{"extractor finds 503", &hostErr{code: "busy", msg: "nope"}, []retry.StatusFunc{hostCode}, 503, true},
		{"extractor through a wrap", fmt.Errorf("call: %w", &hostErr{code: "busy", msg: "nope"}), []retry.StatusFunc{hostCode}, 503, true},
		{"extractor wins over the text", &hostErr{code: "denied", msg: "service unavailable"}, []retry.StatusFunc{hostCode}, 403, false},
		{"extractor wins over a field", &fieldErr{StatusCode: 503}, []retry.StatusFunc{always(401)}, 401, false},
		{"extractor knows nothing: the text decides", &hostErr{code: "other", msg: "rate limit reached"}, []retry.StatusFunc{hostCode}, 0, true},
		{"extractor knows nothing: a field decides", &fieldErr{StatusCode: 529}, []retry.StatusFunc{hostCode}, 529, true},
		{"out of range is none", &hostErr{code: "weird", msg: "nope"}, []retry.StatusFunc{hostCode}, 0, false},
		{"nil extractor skipped", &hostErr{code: "busy", msg: "nope"}, []retry.StatusFunc{nil, hostCode}, 503, true},
		{"first extractor wins", &hostErr{code: "busy", msg: "nope"}, []retry.StatusFunc{always(400), hostCode}, 400, false},
		{"429 billing quota is not retryable", &hostErr{code: "x", msg: "You exceeded your current quota, please check your plan and billing details."}, []retry.StatusFunc{always(429)}, 429, false},
		{"429 is retryable", &hostErr{code: "x", msg: "nope"}, []retry.StatusFunc{always(429)}, 429, true},
		{"retry.Error stays final", &retry.Error{Attempts: 3, Err: &hostErr{code: "busy", msg: "nope"}}, []retry.StatusFunc{hostCode}, 503, false},
		{"context.Canceled stays final", fmt.Errorf("%w: %w", &hostErr{code: "busy", msg: "nope"}, context.Canceled), []retry.StatusFunc{hostCode}, 503, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := retry.IsRetryableWith(tc.err, tc.extract...); got != tc.want {
				t.Errorf("IsRetryableWith(%v) = %v, want %v", tc.err, got, tc.want)
			}
			got, ok := retry.Status(tc.err, tc.extract...)
			if got != tc.status || ok != (tc.status != 0) {
				t.Errorf("Status(%v) = %d, %v, want %d, %v", tc.err, got, ok, tc.status, tc.status != 0)
			}
			if len(tc.extract) == 0 && retry.IsRetryable(tc.err) != tc.want {
				t.Errorf("IsRetryable(%v) != IsRetryableWith without extractors", tc.err)
			}
		})
	}
}

// The x-should-retry header of a response an error keeps (openai-go's and
// anthropic-sdk-go's *Error.Response) decides as those SDKs let it decide:
// over the status, both ways.
func TestIsRetryableShouldRetryHeader(t *testing.T) {
	t.Parallel()
	resp := func(header string) *http.Response {
		h := http.Header{}
		if header != "" {
			h.Set("X-Should-Retry", header)
		}
		return &http.Response{Header: h}
	}
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"503 false", &sdkErr{StatusCode: 503, Response: resp("false")}, false},
		{"529 false", &sdkErr{StatusCode: 529, Response: resp("false")}, false},
		{"400 true", &sdkErr{StatusCode: 400, Response: resp("true")}, true},
		{"503 without the header", &sdkErr{StatusCode: 503, Response: resp("")}, true},
		{"400 without the header", &sdkErr{StatusCode: 400, Response: resp("")}, false},
		{"503 another value", &sdkErr{StatusCode: 503, Response: resp("maybe")}, true},
		{"503 no response", &sdkErr{StatusCode: 503}, true},
		{"wrapped", fmt.Errorf("call: %w", &sdkErr{StatusCode: 503, Response: resp("false")}), false},
		{"not a *http.Response", &otherResponseErr{StatusCode: 503, Response: "x-should-retry: false"}, true},
		{"retry.Error stays final", &retry.Error{Attempts: 1, Err: &sdkErr{StatusCode: 503, Response: resp("true")}}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := retry.IsRetryable(tc.err); got != tc.want {
				t.Errorf("IsRetryable(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

// fieldErr has the shape of openai-go's and anthropic-sdk-go's *Error: an
// exported StatusCode field, a message that does not print it.
type fieldErr struct {
	StatusCode int
	Msg        string
}

func (e fieldErr) Error() string {
	if e.Msg == "" {
		return "API error"
	}
	return e.Msg
}

// ptrFieldErr's Error works on a nil pointer.
type ptrFieldErr struct{ StatusCode int }

func (e *ptrFieldErr) Error() string { return "nope" }

// sdkErr also keeps the response, as openai-go's *Error does.
type sdkErr struct {
	StatusCode int
	Response   *http.Response
}

func (e *sdkErr) Error() string { return "API error: " + strconv.Itoa(e.StatusCode) }

type otherResponseErr struct {
	StatusCode int
	Response   string
}

func (e *otherResponseErr) Error() string { return "nope" }

// goOpenAIErr has the shape of go-openai's *APIError.
type goOpenAIErr struct {
	Code           any
	Message        string
	HTTPStatusCode int
}

func (e *goOpenAIErr) Error() string { return e.Message }

type embeddingErr struct{ fieldErr }

type wrapFieldErr struct {
	StatusCode int
	Err        error
}

func (e *wrapFieldErr) Error() string { return "nope: " + e.Err.Error() }
func (e *wrapFieldErr) Unwrap() error { return e.Err }

// codeErr has a Code that a provider uses for its own error numbers.
type codeErr struct {
	Code int
	Msg  string
}

func (e *codeErr) Error() string { return e.Msg }

type stringStatusErr struct{ StatusCode string }

func (e *stringStatusErr) Error() string { return "nope" }

type unexportedErr struct{ statusCode int }

func (e *unexportedErr) Error() string { return "nope" }

// hostErr is an error type only its adapter knows.
type hostErr struct{ code, msg string }

func (e *hostErr) Error() string { return e.msg }
