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
