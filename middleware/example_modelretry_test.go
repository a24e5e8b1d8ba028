package middleware_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/cenkalti/backoff/v4"
	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/fakemodel"
)

func ExampleModelRetry() {
	model := fakemodel.New(
		fakemodel.Fail(errors.New("API returned unexpected status code: 429: Rate limit reached for gpt-4o.")),
		fakemodel.Fail(errors.New("anthropic: failed to create message: API returned unexpected status code: 529: Overloaded")),
		fakemodel.Text("It is sunny in Paris."),
	)
	llm := middleware.Wrap(model, middleware.ModelRetry(
		// No waiting in an example; the default is exponential from 1s.
		guard.WithBackOff(func() backoff.BackOff { return &backoff.ZeroBackOff{} }),
		guard.WithEventHandler(func(_ context.Context, e guard.Event) {
			fmt.Printf("%s: attempt %d failed, waiting %v\n", e.Kind, e.Attempt, e.Wait)
		}),
	))

	answer, err := llms.GenerateFromSinglePrompt(context.Background(), llm, "What is the weather in Paris?")
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	fmt.Println(answer)
	// Output:
	// retry: attempt 1 failed, waiting 0s
	// retry: attempt 2 failed, waiting 0s
	// It is sunny in Paris.
}

func ExampleContinueOnFailure() {
	model := fakemodel.New(
		fakemodel.Fail(errors.New("API returned unexpected status code: 401: Incorrect API key provided")),
	)
	llm := middleware.Wrap(model, middleware.ModelRetry(guard.WithOnFailure(guard.ContinueOnFailure)))

	answer, err := llms.GenerateFromSinglePrompt(context.Background(), llm, "What is the weather in Paris?")
	fmt.Printf("%q %v\n", answer, err)
	// Output:
	// "Model call failed after 1 attempt: API returned unexpected status code: 401: Incorrect API key provided" <nil>
}
