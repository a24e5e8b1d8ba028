// Command toolstage shows the agent's tool stage: what happens between a
// tool call the model stage accepted and the tool. Tool middlewares
// (toolstage.WithToolMiddleware) deny a call by policy, rewrite an argument
// (and a rewrite the tool's schema rejects never reaches the tool);
// toolstage.ToolRetry runs a flaky idempotent tool again and refuses to repeat
// a tool that is not idempotent when its outcome is unknown; a tool made
// with toolstage.NewResultTool returns an Artifact for the program and a Direct
// result that ends the run.
//
// It runs offline on a scripted fake model, one tool call per model turn,
// so its output is always the same.
//
//	go run ./examples/toolstage
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"strings"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/agent"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/fakemodel"
	"github.com/toolguard/toolguard/toolstage"
)

// The tools' arguments. Their JSON Schemas are inferred from the structs.
type (
	// DeleteAccountArgs are delete_account's arguments.
	DeleteAccountArgs struct {
		UserID string `json:"user_id"`
	}
	// BookFlightArgs are book_flight's arguments.
	BookFlightArgs struct {
		From  string `json:"from" jsonschema:"IATA code of the departure airport"`
		To    string `json:"to" jsonschema:"IATA code of the arrival airport"`
		Cabin Cabin  `json:"cabin"`
	}
	// WeatherArgs are get_weather's arguments.
	WeatherArgs struct {
		City string `json:"city"`
	}
	// InvoiceArgs are send_invoice's arguments.
	InvoiceArgs struct {
		Customer  string `json:"customer"`
		AmountEUR int    `json:"amount_eur"`
	}
	// OrderArgs are order_status's arguments.
	OrderArgs struct {
		OrderID string `json:"order_id"`
	}
)

// Order is what order_status gives the program beside its text.
type Order struct {
	ID, Status, Arrives string
}

// Cabin is a cabin class the airline sells.
type Cabin string

// JSONSchema restricts Cabin to the classes sold.
func (Cabin) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{Type: "string", Enum: []any{"economy", "business", "first"}}
}

func main() {
	if err := run(context.Background(), os.Stdout, scriptedModel()); err != nil {
		log.Fatal(err)
	}
}

// scriptedModel calls one tool per turn, then answers (it is never asked
// to: the last call's result is Direct).
func scriptedModel() *fakemodel.Model {
	return fakemodel.New(
		fakemodel.ToolCalls(fakemodel.Call("delete_account", `{"user_id": "u_42"}`)),
		fakemodel.ToolCalls(fakemodel.Call("book_flight", `{"from": "CDG", "to": "JFK", "cabin": "business"}`)),
		fakemodel.ToolCalls(fakemodel.Call("book_flight", `{"from": "CDG", "to": "NRT", "cabin": "first"}`)),
		fakemodel.ToolCalls(fakemodel.Call("get_weather", `{"city": "Tokyo"}`)),
		fakemodel.ToolCalls(fakemodel.Call("send_invoice", `{"customer": "ACME", "amount_eur": 1200}`)),
		fakemodel.ToolCalls(fakemodel.Call("order_status", `{"order_id": "A-1001"}`)),
		fakemodel.Text("never asked: order_status's result is Direct"),
	)
}

// errTimeout is what a service that did not answer in time returns: the
// request went out, so whether it took effect is unknown.
func errTimeout(service string) error {
	return fmt.Errorf("%s: %w", service, context.DeadlineExceeded)
}

func run(ctx context.Context, out io.Writer, model llms.Model) error {
	say := func(format string, args ...any) { fmt.Fprintf(out, "    "+format+"\n", args...) }

	deleteAccount := toolstage.NewTool("delete_account", "Deletes a user's account.",
		func(_ context.Context, a DeleteAccountArgs) (string, error) {
			say("tool delete_account runs (it must not)")
			return "deleted " + a.UserID, nil
		})
	bookFlight := toolstage.NewTool("book_flight", "Books a flight.",
		func(_ context.Context, a BookFlightArgs) (string, error) {
			say("tool book_flight runs: %s -> %s in %s", a.From, a.To, a.Cabin)
			return fmt.Sprintf("booked %s-%s, %s", a.From, a.To, a.Cabin), nil
		})
	// The weather service times out once. A lookup may safely run twice:
	// the tool is marked Idempotent, so ToolRetry runs it again.
	weatherTimeouts := 1
	weather := toolstage.Idempotent(toolstage.NewTool("get_weather", "Current weather in a city.",
		func(ctx context.Context, a WeatherArgs) (string, error) {
			call, _ := toolstage.CallFrom(ctx)
			if weatherTimeouts > 0 {
				weatherTimeouts--
				say("tool get_weather runs (attempt %d): the weather service times out", call.Attempt)
				return "", errTimeout("weather service")
			}
			say("tool get_weather runs (attempt %d)", call.Attempt)
			return "18 °C, clear in " + a.City, nil
		}))
	// The invoice service times out after the request went out: the
	// invoice may have been sent. Not idempotent, so it is not repeated.
	sendInvoice := toolstage.NewTool("send_invoice", "Sends a customer an invoice.",
		func(ctx context.Context, a InvoiceArgs) (string, error) {
			call, _ := toolstage.CallFrom(ctx)
			say("tool send_invoice runs (attempt %d): the invoice service times out", call.Attempt)
			return "", errTimeout("invoice service")
		})
	// A tool that returns a whole ToolResult: text for the model, the
	// order itself for the program only (Artifact), and Direct, so that
	// its text is the run's answer without another model call.
	orderStatus := toolstage.NewResultTool("order_status", "Tells where an order is.",
		func(_ context.Context, a OrderArgs) (*toolstage.ToolResult, error) {
			say("tool order_status runs")
			o := Order{ID: a.OrderID, Status: "shipped", Arrives: "tomorrow"}
			return &toolstage.ToolResult{
				Content:  "Order " + o.ID + " left the warehouse this morning; it arrives " + o.Arrives + ".",
				Artifact: o,
				Direct:   true,
			}, nil
		})

	a := agent.New(model, toolstage.New([]toolstage.Tool{deleteAccount, bookFlight, weather, sendInvoice, orderStatus}, toolstage.WithToolMiddleware(
		denyTools(map[string]string{"delete_account": "deleting an account needs a human administrator"}),
		travelPolicy(say),
		// A short backoff for the demo; the default waits about 1 s.
		toolstage.ToolRetry(toolstage.WithBackOff(func() backoff.BackOff {
			return backoff.NewConstantBackOff(10 * time.Millisecond)
		})),
	), toolstage.WithEventHandler(func(_ context.Context, e guard.Event) {
		line := "event " + string(e.Kind)
		if e.Attempt != 0 {
			line += fmt.Sprintf(" attempt=%d", e.Attempt)
		}
		if len(e.Paths) > 0 {
			line += " paths=" + strings.Join(e.Paths, ",")
		}
		if e.Wait != 0 {
			line += " wait=" + e.Wait.String()
		}
		say("%s", line)
	})), agent.WithMiddleware(middleware.ToolArgValidation(), printCalls(out)))

	const question = "Tidy up my account, book my trips, check Tokyo's weather, invoice ACME and tell me where order A-1001 is."
	fmt.Fprintln(out, "user:", question)
	res, err := a.Run(ctx, question)
	if err != nil {
		return err
	}

	fmt.Fprintln(out, "\nwhat the model read:")
	for _, s := range res.Steps {
		fmt.Fprintf(out, "  %s %s\n", s.CallID, s.Tool)
		if s.Arguments != s.ModelArguments {
			fmt.Fprintf(out, "    model's arguments: %s\n    ran with:          %s\n", s.ModelArguments, s.Arguments)
		}
		fmt.Fprintf(out, "    %s\n", toolMessage(res.Messages, s))
		if kind := errKind(s.Err); kind != "" {
			fmt.Fprintf(out, "    Step.Err: %s\n", kind)
		}
		if s.Artifact != nil {
			fmt.Fprintf(out, "    Step.Artifact (for the program only): %+v\n", s.Artifact)
		}
	}
	fmt.Fprintf(out, "\nassistant (Direct, %d model calls): %s\n", res.ModelCalls, res.Output)
	return nil
}

// toolMessage returns the tool message the model read for s.
func toolMessage(msgs []llms.MessageContent, s agent.Step) string {
	if s.Message < 0 || s.Message+1 >= len(msgs) {
		return "(not recorded)"
	}
	for _, p := range msgs[s.Message+1].Parts {
		if r, ok := p.(llms.ToolCallResponse); ok {
			return r.Content
		}
	}
	return ""
}

// errKind names the kind of a step's error that the tool stage made, for
// the program; "" for others.
func errKind(err error) string {
	var rejected *toolstage.ArgsRejectedError
	var unknown *toolstage.OutcomeUnknownError
	switch {
	case errors.As(err, &rejected):
		return "*toolstage.ArgsRejectedError (the violations, for the program: " + rejected.Err.Error() + ")"
	case errors.As(err, &unknown):
		return "*toolstage.OutcomeUnknownError"
	}
	return ""
}

// printCalls is a model-stage middleware that prints the calls the model
// stage accepted.
func printCalls(out io.Writer) middleware.Middleware {
	return middleware.Func(func(next middleware.Handler) middleware.Handler {
		return func(ctx context.Context, req *middleware.Request) (*llms.ContentResponse, error) {
			resp, err := next(ctx, req)
			if err != nil {
				return nil, err
			}
			for _, ch := range resp.Choices {
				for _, tc := range ch.ToolCalls {
					fmt.Fprintf(out, "model: %s %s(%s)\n", tc.ID, tc.FunctionCall.Name, tc.FunctionCall.Arguments)
				}
			}
			return resp, nil
		}
	})
}

// denyTools is a policy: calls of the tools named are answered with the
// reason, and never run.
func denyTools(reasons map[string]string) toolstage.ToolMiddleware {
	return toolstage.ToolFunc(func(next toolstage.ToolHandler) toolstage.ToolHandler {
		return func(ctx context.Context, call *toolstage.ToolCall) (*toolstage.ToolResult, error) {
			if why, ok := reasons[call.Name]; ok {
				return nil, fmt.Errorf("policy: %s", why)
			}
			return next(ctx, call)
		}
	})
}

// travelPolicy rewrites book_flight's cabin: business becomes economy, and
// first becomes "premium" — a mistake: the airline sells no such class, so
// the tool's schema rejects the rewritten call and the tool never sees it.
func travelPolicy(say func(string, ...any)) toolstage.ToolMiddleware {
	downgrade := map[string]string{"business": "economy", "first": "premium"}
	return toolstage.ToolFunc(func(next toolstage.ToolHandler) toolstage.ToolHandler {
		return func(ctx context.Context, call *toolstage.ToolCall) (*toolstage.ToolResult, error) {
			if call.Name != "book_flight" {
				return next(ctx, call)
			}
			var args map[string]any
			if err := json.Unmarshal(call.Args, &args); err != nil {
				return nil, err
			}
			cabin, _ := args["cabin"].(string)
			if to, ok := downgrade[cabin]; ok {
				say("travel policy: cabin %s -> %s", cabin, to)
				args["cabin"] = to
				raw, err := json.Marshal(args)
				if err != nil {
					return nil, err
				}
				call.Args = raw
			}
			return next(ctx, call)
		}
	})
}
