// Command langchaingo-agent runs an unchanged langchaingo agent —
// agents.NewOpenAIFunctionsAgent driven by agents.Executor — over a model
// wrapped with toolguard's recommended stack, twice:
//
//  1. as langchaingo offers tools, every one as a single string
//     ({"__arg1": string}): ToolArgValidation has nothing typed to check,
//     and says so (a misconfigured event naming the fix);
//  2. with the fix, lctool.SchemaFor and lctool.OfferSchemas: the model is
//     offered the refund tool's own schema, a call missing the amount is
//     re-asked before the Executor sees it, "19.99" for a number is coerced,
//     ModelRetry absorbs a 503, and ToolCallLimit holds the run to one
//     refund. The Executor and its tools.Tool stay as they were.
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
	"encoding/json"
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
	"github.com/toolguard/toolguard/agent/lctool"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/fakemodel"
	"github.com/toolguard/toolguard/validation"
)

func main() {
	var (
		asIs, fixed llms.Model
		retryOpts   []guard.RetryOption
	)
	useOpenAI := flag.Bool("openai", false, "run on OpenAI (needs OPENAI_API_KEY) instead of the scripted fake model")
	flag.Parse()
	if !*useOpenAI {
		fmt.Println("Running offline on a scripted fake model (-openai runs on OpenAI).")
		asIs, fixed = scriptedAsIs(), scriptedFixed()
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
		asIs, fixed = llm, llm
	}
	if err := run(context.Background(), os.Stdout, asIs, fixed, retryOpts...); err != nil {
		log.Fatal(err)
	}
}

// RefundArgs are the refund tool's arguments.
type RefundArgs struct {
	OrderID string  `json:"order_id" jsonschema:"the order to refund"`
	Amount  float64 `json:"amount" jsonschema:"the amount to refund, in euros"`
}

// refundTool is an existing langchaingo tool: one string in, which it reads
// as a JSON object, as tools written for OpenAIFunctionsAgent do.
type refundTool struct{ out io.Writer }

func (refundTool) Name() string { return "refund" }
func (refundTool) Description() string {
	return "Refunds an order: a JSON object with order_id and amount."
}
func (r refundTool) Call(_ context.Context, input string) (string, error) {
	var a RefundArgs
	if err := json.Unmarshal([]byte(input), &a); err != nil {
		// An error would end the Executor's run: the model reads it instead.
		fmt.Fprintf(r.out, "tool refund(%q) = could not read the arguments: %v\n", input, err)
		return "could not read the arguments: " + err.Error(), nil
	}
	fmt.Fprintf(r.out, "tool refund(%q) = refunded %.2f on %s\n", input, a.Amount, a.OrderID)
	return fmt.Sprintf("refunded %.2f on %s", a.Amount, a.OrderID), nil
}

const question = "Refund order A-1: 19.99 euros."

// scriptedAsIs plays a model offered {"__arg1": string}: it puts its
// arguments in the one string it is offered.
func scriptedAsIs() *fakemodel.Model {
	return fakemodel.New(
		fakemodel.ToolCalls(fakemodel.Call("refund", `{"__arg1": "{\"order_id\": \"A-1\", \"amount\": \"19.99 EUR\"}"}`)),
		fakemodel.Text("I could not refund order A-1."),
	)
}

// scriptedFixed plays a model offered the refund tool's own schema: it
// meets a transient outage, leaves the amount out, sends it as a string,
// then tries a second refund.
func scriptedFixed() *fakemodel.Model {
	refund := func(args string) fakemodel.Step { return fakemodel.ToolCalls(fakemodel.Call("refund", args)) }
	return fakemodel.New(
		fakemodel.Fail(errors.New("API returned unexpected status code: 503: Service Unavailable")),
		refund(`{"order_id": "A-1"}`),
		refund(`{"order_id": "A-1", "amount": "19.99"}`),
		refund(`{"order_id": "A-1", "amount": 19.99}`), // a second refund: over the run limit
		fakemodel.Text("Order A-1 is refunded: 19.99 euros."),
	)
}

func run(ctx context.Context, out io.Writer, asIs, fixed llms.Model, retryOpts ...guard.RetryOption) error {
	events := guard.WithEventHandler(func(_ context.Context, e guard.Event) {
		switch e.Kind {
		case guard.EventMisconfigured:
			fmt.Fprintf(out, "  %s: misconfigured: %v\n", e.Middleware, e.Err)
		case guard.EventRetry:
			fmt.Fprintf(out, "  ModelRetry: attempt %d failed, retrying: %v\n", e.Attempt, e.Err)
		case guard.EventInvalid:
			fmt.Fprintf(out, "  ToolArgValidation: asking the model to fix %s: %v\n", e.CallID, e.Err)
		case guard.EventRepaired:
			fmt.Fprintf(out, "  ToolArgValidation: repaired %s: %v\n", e.CallID, e.Paths)
		case guard.EventLimit:
			fmt.Fprintf(out, "  ToolCallLimit: blocked: %v\n", e.Err)
		}
	})
	refund := refundTool{out}
	lcTools := []tools.Tool{refund} // the Executor's tools, unchanged in both runs

	// 1. As langchaingo offers tools: every one a single string.
	fmt.Fprintln(out, "1. An unchanged Executor, its tools offered as langchaingo offers them:")
	llm := middleware.Wrap(asIs,
		middleware.ToolCallLimit(guard.WithRunLimit(1), events),
		middleware.ToolArgValidation(events),
		middleware.ModelRetry(append(retryOpts, events)...),
	)
	if err := ask(ctx, out, llm, lcTools); err != nil {
		return err
	}

	// 2. The same Executor and tools; the model stage is told each tool's
	// schema, given beside the tool.
	fmt.Fprintln(out, "\n2. The same Executor and tools, each tool's schema given with lctool.SchemaFor:")
	llm = middleware.Wrap(fixed,
		middleware.ToolCallLimit(guard.WithRunLimit(1), events), // outermost: counts only calls that will run
		lctool.OfferSchemas(lctool.SchemaFor(refund, validation.Typed[RefundArgs]())),
		middleware.ToolArgValidation(events),
		middleware.ModelRetry(append(retryOpts, events)...), // innermost: retries each attempt
	)
	return ask(ctx, out, llm, lcTools)
}

// ask runs the question through a plain langchaingo Executor.
func ask(ctx context.Context, out io.Writer, llm llms.Model, lcTools []tools.Tool) error {
	executor := agents.NewExecutor(agents.NewOpenAIFunctionsAgent(llm, lcTools), agents.WithMaxIterations(5))
	fmt.Fprintln(out, "user:", question)
	answer, err := chains.Run(ctx, executor, question)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "assistant:", answer)
	return nil
}
