// Command custom-middleware shows how to write a middleware of your own — a
// slog logger of model calls — and compose it with toolguard's built-ins in
// a toolguard agent, with guard.LogEvents reporting what the built-ins
// do.
//
// The same logging middleware is placed twice, to show the order rule: the
// outer copy, before ToolArgValidation, sees one call per agent turn; the
// inner copy, after it, sees every call that reaches the model, re-asks
// included.
//
// It runs offline on a scripted fake model, whatever the environment holds;
// -openai runs it on OpenAI instead (it needs OPENAI_API_KEY; OPENAI_MODEL
// picks the model).
//
//	go run ./examples/custom-middleware          # offline
//	go run ./examples/custom-middleware -openai  # on OpenAI
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"time"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/openai"
	"github.com/toolguard/toolguard/agent"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/fakemodel"
	"github.com/toolguard/toolguard/toolstage"
)

// logModelCalls returns a middleware that logs each model call passing
// through it: how many messages were sent, how long the call took, and the
// tool calls or text that came back, or the error.
//
// A middleware is a function from the next handler to a handler; this one
// keeps no state between calls, so it is safe for concurrent use, as every
// middleware must be.
func logModelCalls(l *slog.Logger) middleware.Middleware {
	return middleware.Func(func(next middleware.Handler) middleware.Handler {
		return func(ctx context.Context, req *middleware.Request) (*llms.ContentResponse, error) {
			start := time.Now()
			resp, err := next(ctx, req)
			attrs := []slog.Attr{
				slog.Int("messages", len(req.Messages)),
				slog.Duration("took", time.Since(start).Round(time.Microsecond)),
			}
			if err != nil {
				l.LogAttrs(ctx, slog.LevelError, "model call failed", append(attrs, slog.Any("err", err))...)
				return nil, err
			}
			var calls []string
			text := ""
			for _, ch := range resp.Choices {
				for _, tc := range ch.ToolCalls {
					if tc.FunctionCall != nil {
						calls = append(calls, tc.FunctionCall.Name+"("+tc.FunctionCall.Arguments+")")
					}
				}
				text += ch.Content
			}
			if len(calls) > 0 {
				attrs = append(attrs, slog.Any("tool_calls", calls))
			} else {
				attrs = append(attrs, slog.String("text", text))
			}
			l.LogAttrs(ctx, slog.LevelInfo, "model call", attrs...)
			return resp, nil
		}
	})
}

// OrderArgs are the arguments of the get_order tool.
type OrderArgs struct {
	OrderID string `json:"order_id" jsonschema:"the order number, e.g. A-1234"`
}

func main() {
	var model llms.Model
	useOpenAI := flag.Bool("openai", false, "run on OpenAI (needs OPENAI_API_KEY) instead of the scripted fake model")
	flag.Parse()
	if !*useOpenAI {
		fmt.Println("Running offline on a scripted fake model (-openai runs on OpenAI).")
		model = scriptedModel()
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
	if err := run(context.Background(), os.Stdout, model); err != nil {
		log.Fatal(err)
	}
}

// scriptedModel sends the order number as a number first, then as the
// string the schema asks for.
func scriptedModel() *fakemodel.Model {
	return fakemodel.New(
		fakemodel.ToolCalls(fakemodel.Call("get_order", `{"order_id": 1234}`)),
		fakemodel.ToolCalls(fakemodel.Call("get_order", `{"order_id": "A-1234"}`)),
		fakemodel.Text("Order A-1234 shipped on 2 May."),
	)
}

func run(ctx context.Context, out io.Writer, model llms.Model) error {
	// Text logs without timestamps, so that runs compare line by line.
	logger := slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey && len(groups) == 0 {
				return slog.Attr{}
			}
			return a
		},
	}))

	getOrder := toolstage.NewTool("get_order", "Looks an order up by its number.",
		func(_ context.Context, args OrderArgs) (string, error) {
			logger.Info("tool get_order", "order_id", args.OrderID)
			return `{"status": "shipped", "date": "2025-05-02"}`, nil
		})

	a := agent.New(model, toolstage.New([]toolstage.Tool{getOrder}), agent.WithSystemPrompt("You answer questions about orders."), agent.WithMiddleware(
		logModelCalls(logger.With("layer", "turn")), // outermost: one log line per agent turn
		middleware.ToolArgValidation(guard.WithEventHandler(guard.LogEvents(logger))),
		logModelCalls(logger.With("layer", "model")), // innermost: every call that reaches the model
	))
	res, err := a.Run(ctx, "Where is my order A-1234?")
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "assistant:", res.Output)
	fmt.Fprintf(out, "%d model calls, %d tool call(s)\n", res.ModelCalls, len(res.Steps))
	return nil
}
