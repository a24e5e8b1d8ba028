// Command langchaingo-agent runs an unchanged langchaingo agent —
// agents.NewOpenAIFunctionsAgent driven by agents.Executor — over a model
// wrapped with toolguard's recommended stack, and shows each middleware at
// work inside it: ModelRetry absorbs a 503, ToolArgValidation has a
// malformed call corrected before the Executor sees it, and ToolCallLimit
// holds a run to two tool calls.
//
// It runs offline on a scripted fake model, whatever the environment holds;
// -openai runs it on OpenAI instead (it needs OPENAI_API_KEY; OPENAI_MODEL
// picks the model).
//
//	go run ./examples/langchaingo-agent          # offline
//	go run ./examples/langchaingo-agent -openai  # on OpenAI
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"

	"github.com/cenkalti/backoff/v4"
	"github.com/tmc/langchaingo/agents"
	"github.com/tmc/langchaingo/chains"
	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/openai"
	"github.com/tmc/langchaingo/tools"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/fakemodel"
)

func main() {
	var (
		model     llms.Model
		retryOpts []guard.RetryOption
	)
	useOpenAI := flag.Bool("openai", false, "run on OpenAI (needs OPENAI_API_KEY) instead of the scripted fake model")
	flag.Parse()
	if !*useOpenAI {
		fmt.Println("Running offline on a scripted fake model (-openai runs on OpenAI).")
		model = scriptedModel()
		// The script's 503 is retried at once; real providers get
		// ModelRetry's default exponential backoff from 1s.
		retryOpts = append(retryOpts, guard.WithBackOff(func() backoff.BackOff { return &backoff.ZeroBackOff{} }))
	} else {
		if os.Getenv("OPENAI_API_KEY") == "" {
			log.Fatal("-openai needs OPENAI_API_KEY")
		}
		fmt.Println("Running on OpenAI (OPENAI_MODEL picks the model).")
		llm, err := openai.New()
		if err != nil {
			log.Fatal(err)
		}
		model = llm
	}
	if err := run(context.Background(), os.Stdout, model, retryOpts...); err != nil {
		log.Fatal(err)
	}
}

// scriptedModel plays a model that meets a transient outage, sends a call
// with the wrong argument name, then tries one calculation too many.
func scriptedModel() *fakemodel.Model {
	calc := func(args string) fakemodel.Step {
		return fakemodel.ToolCalls(fakemodel.Call("calculator", args))
	}
	return fakemodel.New(
		fakemodel.Fail(errors.New("API returned unexpected status code: 503: Service Unavailable")),
		calc(`{"expression": "6 * 7"}`), // OpenAIFunctionsAgent's tools take "__arg1"
		calc(`{"__arg1": "6 * 7"}`),
		calc(`{"__arg1": "42 + 8"}`),
		calc(`{"__arg1": "50 / 2"}`), // a third call: over the run limit
		fakemodel.Text("6 × 7 = 42, and 42 + 8 = 50."),
	)
}

func run(ctx context.Context, out io.Writer, model llms.Model, retryOpts ...guard.RetryOption) error {
	events := guard.WithEventHandler(func(_ context.Context, e guard.Event) {
		switch e.Kind {
		case guard.EventRetry:
			fmt.Fprintf(out, "  ModelRetry: attempt %d failed, retrying: %v\n", e.Attempt, e.Err)
		case guard.EventInvalid:
			fmt.Fprintf(out, "  ToolArgValidation: asking the model to fix %s: %v\n", e.CallID, e.Err)
		case guard.EventLimit:
			fmt.Fprintf(out, "  ToolCallLimit: blocked: %v\n", e.Err)
		}
	})
	// The recommended stack: the limiter outermost counts only calls that
	// passed validation; retry innermost absorbs each attempt's errors.
	llm := middleware.Wrap(model,
		middleware.ToolCallLimit(guard.WithRunLimit(2), events),
		middleware.ToolArgValidation(events),
		middleware.ModelRetry(append(retryOpts, events)...),
	)

	// From here on it is plain langchaingo.
	agent := agents.NewOpenAIFunctionsAgent(llm, []tools.Tool{traced{tools.Calculator{}, out}})
	executor := agents.NewExecutor(agent, agents.WithMaxIterations(10))

	const question = "What is 6 times 7, plus 8? Use the calculator."
	fmt.Fprintln(out, "user:", question)
	answer, err := chains.Run(ctx, executor, question)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "assistant:", answer)
	return nil
}

// traced is a langchaingo tool that prints each call of the tool it wraps.
type traced struct {
	tools.Tool
	out io.Writer
}

func (t traced) Call(ctx context.Context, input string) (string, error) {
	result, err := t.Tool.Call(ctx, input)
	fmt.Fprintf(t.out, "tool %s(%q) = %s\n", t.Name(), input, result)
	return result, err
}
