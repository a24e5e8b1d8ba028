package retry_test

import (
	"errors"
	"fmt"

	"github.com/toolguard/toolguard/retry"
)

func ExampleIsRetryable() {
	for _, err := range []error{
		errors.New("API returned unexpected status code: 429: Rate limit reached for gpt-4o. Please try again in 1.2s."),
		errors.New("anthropic: failed to create message: API returned unexpected status code: 529: Overloaded"),
		errors.New("API returned unexpected status code: 401: Incorrect API key provided"),
		errors.New("API returned unexpected status code: 429: You exceeded your current quota, please check your plan and billing details."),
	} {
		wait, hinted := retry.After(err)
		fmt.Printf("retryable=%-5v hint=%v(%v)\n", retry.IsRetryable(err), wait, hinted)
	}
	// Output:
	// retryable=true  hint=1.2s(true)
	// retryable=true  hint=0s(false)
	// retryable=false hint=0s(false)
	// retryable=false hint=0s(false)
}

// hostError stands in for an error type only one host's adapter knows: it
// carries a code, not an HTTP status.
type hostError struct{ code string }

func (e *hostError) Error() string { return "host: " + e.code }

// An adapter maps its host's error codes to statuses; the status then
// decides as a response's would.
func ExampleIsRetryableWith() {
	hostStatus := func(err error) (int, bool) {
		var e *hostError
		if !errors.As(err, &e) {
			return 0, false
		}
		switch e.code {
		case "busy":
			return 503, true
		case "denied":
			return 403, true
		}
		return 0, false // unknown: the other rules decide
	}
	for _, err := range []error{&hostError{"busy"}, &hostError{"denied"}, fmt.Errorf("call: %w", &hostError{"busy"})} {
		status, _ := retry.Status(err, hostStatus)
		fmt.Printf("%-17s IsRetryable=%-5v IsRetryableWith=%-5v status=%d\n",
			err, retry.IsRetryable(err), retry.IsRetryableWith(err, hostStatus), status)
	}
	// Output:
	// host: busy        IsRetryable=false IsRetryableWith=true  status=503
	// host: denied      IsRetryable=false IsRetryableWith=false status=403
	// call: host: busy  IsRetryable=false IsRetryableWith=true  status=503
}

// sdkError has the shape of openai-go's *Error: the status is a field and
// the message, "OpenAI API error: 529", names no status text.
type sdkError struct{ StatusCode int }

func (e *sdkError) Error() string { return fmt.Sprintf("OpenAI API error: %d", e.StatusCode) }

// Status finds the status in an SDK's error type, or in the message.
func ExampleStatus() {
	for _, err := range []error{
		&sdkError{StatusCode: 529},
		errors.New("API returned unexpected status code: 401: Incorrect API key provided"),
		errors.New("connection reset by peer"),
	} {
		status, ok := retry.Status(err)
		fmt.Printf("status=%d found=%-5v retryable=%v\n", status, ok, retry.IsRetryable(err))
	}
	// Output:
	// status=529 found=true  retryable=true
	// status=401 found=true  retryable=false
	// status=0 found=false retryable=true
}
